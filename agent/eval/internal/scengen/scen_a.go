package main

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

var mi = float64(1 << 20)

// oomPods makes the pods of a crash with OOMKilled every period, from
// start; the last pod keeps running after its latest restart. It returns
// every restart time (for metrics).
func (w *World) oomPods(a *App, start time.Time, period time.Duration) (restarts, starts map[string][]time.Time) {
	restarts, starts = map[string][]time.Time{}, map[string][]time.Time{}
	for i, p := range a.Pods {
		var ends, begins []time.Time
		t := start.Add(time.Duration(i*40+w.R.IntN(30)) * time.Second)
		backoff := 10 * time.Second
		for {
			begins = append(begins, t)
			end := t.Add(w.jit(period, 0.15))
			if end.After(w.Now) {
				break
			}
			ends = append(ends, end)
			t = end.Add(backoff)
			backoff = min(backoff*2, 5*time.Minute)
		}
		restarts[p.Name], starts[p.Name] = ends, begins
		n := int32(len(ends))
		last := len(ends) - 1
		lastEnd := ends[last]
		if i == len(a.Pods)-1 && w.Now.Sub(lastEnd) > 90*time.Second && t.Before(w.Now) {
			restartedRunning(p, n, begins[last], lastEnd, t, "OOMKilled", 137, true)
		} else {
			starts[p.Name] = begins[:len(ends)]
			crashLoop(p, n, begins[last], lastEnd, "OOMKilled", 137, min(10*time.Second<<(len(ends)-1), 5*time.Minute).String())
		}
		first := ends[0]
		w.podEvent(p, "Normal", "Pulled", fmt.Sprintf("Container image %q already present on machine", p.Spec.Containers[0].Image), first.Add(10*time.Second), lastEnd.Add(10*time.Second), n)
		w.podEvent(p, "Normal", "Created", "Created container: "+p.Spec.Containers[0].Name, first.Add(10*time.Second), lastEnd.Add(10*time.Second), n)
		w.podEvent(p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", p.Spec.Containers[0].Name, p.Name, p.Namespace, p.UID), first.Add(2*time.Second), w.Now.Add(-time.Duration(5+w.R.IntN(40))*time.Second), n*3+int32(w.R.IntN(5)))
	}
	return restarts, starts
}

// scenOOM: search-api v3.8.0 adds an unbounded result cache; pods hit the
// 512Mi memory limit and are OOMKilled.
func scenOOM() (*World, string, *Scenario) {
	w := newWorld("oom-after-deploy", mustTime("2026-02-03T14:20:00Z"), 101)
	nodes := w.baseCluster("eu-west-1", "4")
	deployAt := w.ago(46 * time.Minute)
	a := w.addApp(AppSpec{NS: "catalog", Name: "search-api", Replicas: 3, MemReq: "384Mi", MemLim: "512Mi", CPUReq: "500m", ProbePath: "/ready", Liveness: true, Team: "discovery",
		Nodes: nodes, Revs: []Rev{
			{Image: "registry.example.com/discovery/search-api:v3.7.1", At: w.ago(19 * 24 * time.Hour)},
			{Image: "registry.example.com/discovery/search-api:v3.7.2", At: w.ago(9*24*time.Hour + 3*time.Hour)},
			{Image: "registry.example.com/discovery/search-api:v3.8.0", At: deployAt, Cause: "helm upgrade search-api --set image.tag=v3.8.0"},
		}})
	web := w.addApp(AppSpec{NS: "catalog", Name: "catalog-web", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "discovery",
		Revs: []Rev{{Image: "registry.example.com/discovery/catalog-web:v1.22.1", At: w.ago(3*24*time.Hour + 5*time.Hour)}}})
	auth := w.addApp(AppSpec{NS: "platform", Name: "auth-service", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "platform",
		Revs: []Rev{{Image: "registry.example.com/platform/auth-service:v2.9.0", At: w.ago(12 * 24 * time.Hour)}}})
	w.completedJob("platform", "token-cleanup-29504100", nodes[0], w.ago(52*time.Minute))

	oldRS, newRS := a.RSs[1], a.RSs[2]
	restarts, starts := w.oomPods(a, deployAt.Add(20*time.Second), 7*time.Minute)
	for _, p := range a.Pods {
		w.startupEvents(p)
		w.rsCreateEvent(newRS, p)
	}
	w.scalingEvent(a, newRS, deployAt, fmt.Sprintf("Scaled up replica set %s from 0 to 1", newRS.Name))
	w.scalingEvent(a, oldRS, deployAt.Add(35*time.Second), fmt.Sprintf("Scaled down replica set %s from 3 to 2", oldRS.Name))
	w.scalingEvent(a, newRS, deployAt.Add(36*time.Second), fmt.Sprintf("Scaled up replica set %s from 1 to 2", newRS.Name))
	w.scalingEvent(a, oldRS, deployAt.Add(70*time.Second), fmt.Sprintf("Scaled down replica set %s from 2 to 1", oldRS.Name))
	w.scalingEvent(a, newRS, deployAt.Add(71*time.Second), fmt.Sprintf("Scaled up replica set %s from 2 to 3", newRS.Name))
	w.scalingEvent(a, oldRS, deployAt.Add(105*time.Second), fmt.Sprintf("Scaled down replica set %s from 1 to 0", oldRS.Name))
	w.event(evSpec{NS: "default", Kind: "Node", Name: a.Pods[0].Spec.NodeName, Type: "Warning", Reason: "OOMKilling",
		Msg:   "Memory cgroup out of memory: Killed process 48213 (search-api) total-vm:1873412kB, anon-rss:521784kB, file-rss:18220kB, shmem-rss:0kB, UID:10001 pgtables:1412kB oom_score_adj:987",
		First: restarts[a.Pods[0].Name][0], Last: restarts[a.Pods[0].Name][len(restarts[a.Pods[0].Name])-1], Count: int32(len(restarts[a.Pods[0].Name])), Component: "kernel-monitor", Host: a.Pods[0].Spec.NodeName})
	w.hpaNoise("platform", "auth-service", w.ago(38*time.Minute))

	// logs: each run loads the index, then the result cache grows until the kill.
	for _, p := range a.Pods {
		rs := restarts[p.Name]
		mk := func(from, to time.Time) string {
			l := w.lines()
			w.startup(l, styleJSON, "search-api", "v3.8.0", from, "loading index shards count=24", "result cache enabled max_entries=0 (unbounded)")
			n := 0
			l.Every(from.Add(3*time.Second), to, 9*time.Second, func(t time.Time, i int) string {
				n += 1800 + w.R.IntN(900)
				if i%6 == 5 {
					return msgLine(styleJSON, t, "INFO", "search-api", fmt.Sprintf("result cache stats entries=%d approx_bytes=%d hit_ratio=%.2f", n, n*205, 0.1+0.5*float64(i)/60))
				}
				return reqLine(styleJSON, t, "search-api", "GET", w.pick("/v2/search?q=lamp", "/v2/search?q=desk+chair", "/v2/suggest?prefix=so", "/v2/search?q=rug"), 200, 20+w.R.ExpFloat64()*40, w.reqID())
			})
			if to.Before(w.Now) {
				tt := to.Add(-2 * time.Second)
				l.Add(tt, msgLine(styleJSON, tt, "WARN", "search-api", "gc: heap 497MiB approaching GOMEMLIMIT 480MiB; collections=312 in last 60s"))
			}
			return l.String()
		}
		// starts[i] began the run that ended at rs[i]; a running pod has one more start.
		st := starts[p.Name]
		last := len(rs) - 1
		if run := p.Status.ContainerStatuses[0].State.Running; run != nil {
			w.podLog(p, "", mk(st[last+1], w.Now))
			w.prevLog(p, mk(st[last], rs[last]))
		} else {
			w.podLog(p, "", mk(st[last], rs[last]))
			if last > 0 {
				w.prevLog(p, mk(st[last-1], rs[last-1]))
			}
		}
	}
	w.healthyLogs(web, styleLogfmt, "v1.22.1", 40*time.Second, []string{"/", "/c/furniture", "/p/{id}", "/search?q=lamp"})
	for _, p := range web.Pods {
		l := w.lines()
		l.Every(deployAt.Add(9*time.Minute), w.Now, 70*time.Second, func(t time.Time, i int) string {
			return msgLine(styleLogfmt, t, "WARN", "catalog-web", "upstream search-api returned 503: no healthy upstream; serving cached results")
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(auth, styleJSON, "v2.9.0", 45*time.Second, []string{"/oauth/token", "/.well-known/jwks.json", "/userinfo"})

	// metrics
	o := w.om(2*time.Hour, time.Minute)
	o.Family("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes.")
	for i := range 3 {
		name := fmt.Sprintf("%s-%s", oldRS.Name, w.suffix(5))
		o.Gauge(fmt.Sprintf(`namespace="catalog",pod=%q,container="search-api"`, name), 0.03, between(w.ago(3*time.Hour), deployAt.Add(time.Duration(35*(i+1))*time.Second), constant(260*mi+float64(i)*9*mi)))
	}
	for _, p := range a.Pods {
		o.Gauge(fmt.Sprintf(`namespace="catalog",pod=%q,container="search-api"`, p.Name), 0.02, func(t time.Time) float64 {
			v := sawtooth(restarts[p.Name], deployAt.Add(20*time.Second), 140*mi, 509*mi, 7*time.Minute)(t)
			return math.Min(v, 510*mi)
		})
	}
	o.Family("kube_pod_container_resource_limits", "gauge", "The number of requested limit resource by a container.")
	for _, p := range a.Pods {
		o.GaugeExact(fmt.Sprintf(`namespace="catalog",pod=%q,container="search-api",resource="memory",unit="byte"`, p.Name), between(deployAt.Add(20*time.Second), w.Now.Add(time.Minute), constant(536870912)))
	}
	o.Family("kube_pod_container_status_restarts", "counter", "The number of container restarts per container.")
	for _, p := range a.Pods {
		o.CounterSteps(fmt.Sprintf(`namespace="catalog",pod=%q,container="search-api"`, p.Name), 0, restarts[p.Name])
	}
	o.Family("http_requests", "counter", "Requests served, by status code.")
	onset := deployAt.Add(9 * time.Minute)
	o.Counter(`namespace="catalog",service="catalog-web",code="200"`, 18_204_331, step(onset, 42, 37, 0))
	o.Counter(`namespace="catalog",service="catalog-web",code="503"`, 1_204, step(onset, 0.02, 4.5, 2*time.Minute))
	o.Counter(`namespace="platform",service="auth-service",code="200"`, 9_877_120, diurnal(28, 0.15))
	w.goroutines(o, "auth-service", "catalog-web")
	w.nodeCPU(o, 0.31)
	o.Save("kubernetes")

	w.changes(
		chg(w.ago(9*24*time.Hour+3*time.Hour), "search-api", "deploy", "search-api v3.7.2: fix highlight offsets", "v3.7.2", "maria.lopez"),
		chg(w.ago(6*24*time.Hour), "eks-prod", "infra", "node group general-m6: AMI update to 1.31.4-20250116", "", "platform-bot"),
		chg(w.ago(3*24*time.Hour+5*time.Hour), "catalog-web", "deploy", "catalog-web v1.22.1: new category page layout", "v1.22.1", "dan.okafor"),
		chg(deployAt, "search-api", "deploy", "search-api v3.8.0: add in-process query result cache (PR #1842)", "v3.8.0", "maria.lopez"),
	)
	sc := &Scenario{Title: "search-api OOMKilled after v3.8.0 raised memory use", Request: ScenarioRequest{AgentName: "planner",
		Message: "search-api pods keep restarting and catalog-web shows degraded search. What is going on?",
		Context: map[string]string{"service": "search-api", "namespace": "catalog"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"oomkilled", "oom", "out of memory", "memory limit"}}, AffectedSystemsAll: []string{"search-api"},
			MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"describe_pod", "list_pods", "get_events", "get_pod_logs"}}}
	return w, "catalog/search-api pods OOMKilled in a loop after the v3.8.0 deploy", sc
}

// scenCrashEnv: a config change removes DATABASE_URL from orders-api's
// ConfigMap; the rollout restart crashes with exit code 1.
func scenCrashEnv() (*World, string, *Scenario) {
	w := newWorld("crashloop-missing-env", mustTime("2026-02-17T09:05:00Z"), 202)
	nodes := w.baseCluster("us-east-1", "4")
	cfgAt := w.ago(31 * time.Minute)
	restartAt := cfgAt.Add(95 * time.Second)
	a := w.addApp(AppSpec{NS: "orders", Name: "orders-api", Replicas: 4, OldPods: 3, NewPods: 2, MemReq: "256Mi", MemLim: "512Mi", ProbePath: "/ready", Liveness: true, Team: "orders",
		Nodes: nodes, EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "orders-api-config"}}}},
		Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "orders-db"}, Key: "password"}}}},
		Revs: []Rev{
			{Image: "ghcr.io/acme/orders-api:2025.12.4", At: w.ago(21 * 24 * time.Hour)},
			{Image: "ghcr.io/acme/orders-api:2026.02.1", At: w.ago(6*24*time.Hour + 2*time.Hour)},
			{Image: "ghcr.io/acme/orders-api:2026.02.1", At: restartAt, Restart: true, Cause: "kubectl rollout restart deployment/orders-api"},
		}})
	w.Stuck[a.Dep.UID] = true
	w.UnavailableSince[a.Dep.UID] = restartAt.Add(20 * time.Second)
	fulfil := w.addApp(AppSpec{NS: "orders", Name: "fulfilment-worker", Replicas: 2, Nodes: nodes, NoService: true, Team: "orders",
		Revs: []Rev{{Image: "ghcr.io/acme/fulfilment-worker:2026.01.7", At: w.ago(15 * 24 * time.Hour)}}})
	mon := w.addApp(AppSpec{NS: "monitoring", Name: "grafana", Replicas: 1, Nodes: nodes, Port: 3000, ProbePath: "/api/health",
		Revs: []Rev{{Image: "grafana/grafana:11.4.0", At: w.ago(40 * 24 * time.Hour)}}})
	w.resolvedScheduling(mon, w.ago(57*time.Minute))

	newRS, oldRS := a.RSs[2], a.RSs[1]
	w.scalingEvent(a, newRS, restartAt, fmt.Sprintf("Scaled up replica set %s from 0 to 1", newRS.Name))
	w.scalingEvent(a, oldRS, restartAt, fmt.Sprintf("Scaled down replica set %s from 4 to 3", oldRS.Name))
	w.scalingEvent(a, newRS, restartAt.Add(time.Second), fmt.Sprintf("Scaled up replica set %s from 1 to 2", newRS.Name))
	for i, p := range a.Pods[:2] {
		start := restartAt.Add(time.Duration(2+i) * time.Second)
		p.Status.StartTime = ptr(mt(start))
		w.startupEvents(p)
		w.rsCreateEvent(newRS, p)
		n := int32(10 + i)
		lastStart := w.ago(time.Duration(2+i*2)*time.Minute + 20*time.Second)
		crashLoop(p, n, lastStart, lastStart.Add(900*time.Millisecond), "Error", 1, "5m0s")
		w.podEvent(p, "Normal", "Pulled", fmt.Sprintf("Container image %q already present on machine", p.Spec.Containers[0].Image), start.Add(15*time.Second), lastStart, n)
		w.podEvent(p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container orders-api in pod %s_orders(%s)", p.Name, p.UID), start.Add(5*time.Second), w.ago(time.Duration(8+i*11)*time.Second), 40+int32(i)*7)
		crash := func(t time.Time) string {
			l := w.lines()
			l.Add(t, msgLine(styleJSON, t, "INFO", "orders-api", "starting orders-api version=2026.02.1"))
			l.Add(t.Add(40*time.Millisecond), msgLine(styleJSON, t.Add(40*time.Millisecond), "INFO", "orders-api", "loading configuration from environment"))
			l.Add(t.Add(52*time.Millisecond), msgLine(styleJSON, t.Add(52*time.Millisecond), "ERROR", "orders-api", "config: missing required env DATABASE_URL"))
			l.Add(t.Add(53*time.Millisecond), msgLine(styleJSON, t.Add(53*time.Millisecond), "ERROR", "orders-api", "fatal: invalid configuration, exiting with code 1"))
			return l.String()
		}
		w.podLog(p, "", crash(lastStart))
		w.prevLog(p, crash(lastStart.Add(-5*time.Minute-time.Second)))
	}
	w.healthyLogs(a.Pods2(2), styleJSON, "2026.02.1", 35*time.Second, []string{"/v1/orders/{id}", "POST /v1/orders", "/v1/orders?customer={id}"}, "connected to postgres host=orders-db.cxq1.us-east-1.rds.amazonaws.com db=orders pool=20")
	w.healthyLogs(fulfil, styleLogfmt, "2026.01.7", 50*time.Second, []string{"/internal/queue/poll"})
	w.healthyLogs(mon, styleLogfmt, "11.4.0", 60*time.Second, []string{"/api/health", "/api/dashboards/uid/{id}"})
	for _, p := range a.Pods[2:] {
		l := w.lines()
		l.Every(restartAt.Add(3*time.Minute), w.Now, 3*time.Minute, func(t time.Time, i int) string {
			return msgLine(styleJSON, t, "WARN", "orders-api", fmt.Sprintf("slow request: POST /v1/orders took %dms (in-flight=%d)", 800+w.R.IntN(900), 30+w.R.IntN(20)))
		})
		w.podLog(p, "", l.String())
	}

	o := w.om(2*time.Hour, time.Minute)
	o.Family("kube_deployment_status_replicas_available", "gauge", "The number of available replicas per deployment.")
	o.GaugeExact(`namespace="orders",deployment="orders-api"`, step(restartAt.Add(20*time.Second), 4, 3, 0))
	o.GaugeExact(`namespace="orders",deployment="fulfilment-worker"`, constant(2))
	o.Family("kube_pod_container_status_restarts", "counter", "The number of container restarts per container.")
	for _, p := range a.Pods[:2] {
		var at []time.Time
		for t, b := restartAt.Add(5*time.Second), 10*time.Second; t.Before(w.Now); t, b = t.Add(b), min(2*b, 5*time.Minute) {
			at = append(at, t)
		}
		o.CounterSteps(fmt.Sprintf(`namespace="orders",pod=%q,container="orders-api"`, p.Name), 0, at)
	}
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="orders",service="orders-api",code="200"`, 7_301_442, diurnal(24, 0.2))
	o.Counter(`namespace="orders",service="orders-api",code="500"`, 512, constant(0.01))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="orders",service="orders-api"`, diurnal(24, 0.2), step(restartAt, 0.045, 0.075, 3*time.Minute))
	w.goroutines(o, "grafana", "fulfilment-worker")
	w.nodeCPU(o, 0.27)
	o.Save("orders")

	w.changes(
		chg(w.ago(6*24*time.Hour+2*time.Hour), "orders-api", "deploy", "orders-api 2026.02.1: order notes field", "2026.02.1", "ci-bot"),
		chg(cfgAt, "orders-api", "config", "ConfigMap orders-api-config: move database settings to Secret orders-db (removed DATABASE_URL, DB_HOST, DB_NAME)", "cm-rev-41", "kim.nguyen"),
		chg(restartAt, "orders-api", "deploy", "kubectl rollout restart deployment/orders-api to pick up orders-api-config", "", "kim.nguyen"),
	)
	sc := &Scenario{Title: "orders-api CrashLoopBackOff after a config change removed DATABASE_URL", Request: ScenarioRequest{AgentName: "k8s_agent",
		Message: "The orders-api rollout is stuck and new pods keep crashing.", Context: map[string]string{"service": "orders-api", "namespace": "orders"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"crashloopbackoff", "crash loop", "crashloop", "crashing", "exit code 1"}, {"database_url", "missing required env", "environment variable", "config"}},
			AffectedSystemsAll: []string{"orders-api"}, MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"describe_pod", "get_pod_logs", "get_events"}}}
	return w, "orders/orders-api new pods crash at start-up (exit 1) after a ConfigMap change", sc
}

// Pods2 returns an App view over pods from index i on (for logs).
func (a *App) Pods2(i int) *App {
	c := *a
	c.Pods = a.Pods[i:]
	return &c
}
