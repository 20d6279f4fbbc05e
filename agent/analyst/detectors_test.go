package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassifyLineGeneral(t *testing.T) {
	cases := []struct {
		line string
		want Kind
	}{
		{`2026-04-14T11:02:59.000Z  INFO 1 --- [main] com.zaxxer.hikari.HikariDataSource : HikariPool-1 - Start completed.`, ""},
		{`HikariPool-1 - Connection is not available, request timed out after 30000ms.`, KindDatabase},
		{`FATAL: remaining connection slots are reserved for non-replication superuser connections`, KindDatabase},
		{`sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached`, KindDatabase},
		{`WARN [hikari-housekeeper] HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta=1m5s).`, KindCPUThrottling},
		{`warn retrying idempotent request err=read: connection reset by peer`, KindConnReset},
		{`dial tcp 10.0.12.5:6379: connect: connection refused`, KindConnRefused},
		{`{"level":"info","msg":"flushed batch","heap_mb":429}`, ""},
		{`level=warn msg="provider rate limited" status=429`, KindThrottling},
		{`10.1.2.3 - - "GET /q HTTP/1.1" 429 12`, KindThrottling},
		{`error calling api: 429 Too Many Requests`, KindThrottling},
		{`redis-server.service: Start request repeated too quickly.`, KindAppCrash},
	}
	for _, c := range cases {
		if got, _ := ClassifyLine(c.line); got != c.want {
			t.Errorf("ClassifyLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

func TestLineLevel(t *testing.T) {
	cases := map[string]string{
		`2026-04-14T11:02:59.000Z  INFO 1 --- [main] c.z.h.HikariDataSource : started`:                                              "info",
		`{"ts":"2026-05-02T10:33:02Z","level":"error","msg":"boom"}`:                                                                "error",
		`ts=2026-05-02T10:33:02Z level=warn msg="retry"`:                                                                            "warn",
		`[FATAL] plugin/loop: Loop detected`:                                                                                        "fatal",
		`{"level":30,"time":1792487112771,"pid":1,"hostname":"mailer-7hx2q","msg":"batch sent","sent":120,"failed":0}`:              "info",
		`{"level":50,"time":1700000000000,"pid":7,"hostname":"api","err":{"type":"Error","message":"boom"},"msg":"request failed"}`: "error",
		`{"name":"api","hostname":"h","pid":1,"level":40,"msg":"slow request","time":"2026-05-02T10:33:02.000Z","v":0}`:             "warn",
		`{"level":60,"time":1700000000000,"msg":"uncaught exception"}`:                                                              "fatal",
		`2026-05-02T10:32:52Z host kernel: Out of memory: Killed process 1187`:                                                      "",
	}
	for line, want := range cases {
		if got := LineLevel(line); got != want {
			t.Errorf("LineLevel(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestDependencyTargetsGeneral(t *testing.T) {
	cases := []struct{ line, target, wellKnown string }{
		{`panic at handler.go:212 while serving`, "", ""},
		{`at com.acme.OrderService.create(OrderService.java:88)`, "", ""},
		{`dial tcp 10.0.12.5:6379: connect: connection refused`, "10.0.12.5:6379", "redis"},
		{`[ioredis] Unhandled error event: Error: connect ECONNREFUSED 10.0.12.5:6379`, "10.0.12.5:6379", "redis"},
		{`dial tcp 10.0.3.4:5432: connect: connection refused`, "10.0.3.4:5432", "postgresql"},
		{`dial tcp 10.0.3.9:9092: i/o timeout`, "10.0.3.9:9092", "kafka"},
		{`dial tcp 10.0.3.9:27017: i/o timeout`, "10.0.3.9:27017", "mongodb"},
		// NATS route errors name the host after "lookup for host".
		// A resolver's refusal names the host, not a stack frame's file:line.
		{`[ioredis] Unhandled error event: Error: getaddrinfo ENOTFOUND redis at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:120:26)`, "redis", "redis"},
		{`    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:120:26)`, "", ""},
		{`    at Socket.<anonymous> (/app/node_modules/pg/lib/connection.js:57:12)`, "", ""},
		{`java.net.UnknownHostException: orders-db: Name or service not known`, "orders-db", ""},
		{`curl: (6) Could not resolve host: inventory.shop.svc.cluster.local`, "inventory", ""},
		{`psycopg2.OperationalError: could not translate host name "pg-main" to address: Name or service not known`, "pg-main", "postgresql"},
		{`[7] 2026/11/24 14:43:11.402819 [ERR] Error trying to connect to route (attempt 183): lookup for host "nats-1.nats.messaging.svc.cluster.local": lookup nats-1.nats.messaging.svc.cluster.local on 10.96.0.10:53: no such host`, "nats-1", ""},
	}
	for _, c := range cases {
		got := DependencyTarget(c.line)
		if got != c.target {
			t.Errorf("DependencyTarget(%q) = %q, want %q", c.line, got, c.target)
		}
		if wk := WellKnownDependency(c.line, got); wk != c.wellKnown {
			t.Errorf("WellKnownDependency(%q) = %q, want %q", c.line, wk, c.wellKnown)
		}
	}
	if h := externalHost(`GET https://api.shiprates.example.com/v2/quote returned 429`); h != "api.shiprates.example.com" {
		t.Errorf("externalHost = %q", h)
	}
	if h := externalHost(`GET http://inventory.shop.svc.cluster.local:8080/x`); h != "" {
		t.Errorf("externalHost of a cluster service = %q", h)
	}
}

func logSet(subject string, host bool, lines ...string) LogSet {
	set := LogSet{Source: subject, Subject: subject, Namespace: "shop", Origin: SrcLogs, Host: host}
	for i, l := range lines {
		set.Templates = append(set.Templates, analysisTemplate(l, 20, now.Add(-30*time.Minute+time.Duration(i)*time.Second)))
	}
	return set
}

func TestDetectLogsAttribution(t *testing.T) {
	fs := DetectLogs([]LogSet{
		logSet("orders-api", false, `error create order failed error=pq: could not extend file "base/1/2": No space left on device`),
		logSet("pg-primary-01", true, `2026-05-05T06:12:00Z [48211] ERROR:  could not extend file "base/1/2": No space left on device`,
			`2026-05-05T05:00:30Z [49108] LOG:  checkpoint starting: time`),
		logSet("cache-redis-01", true, `kernel: Out of memory: Killed process 1187 (redis-server) total-vm:8012344kB`),
	}, win)
	var client, host, oom *Finding
	for i := range fs {
		f := &fs[i]
		switch {
		case f.Kind == KindDiskFull && f.fact("host") == "":
			client = f
		case f.Kind == KindDiskFull:
			host = f
		case f.Kind == KindOOMKilled:
			oom = f
		}
	}
	if client == nil || client.Subject != "postgresql" || !containsStr(client.Related, "orders-api") {
		t.Fatalf("client's quoted database error should be about the database: %+v", client)
	}
	if host == nil || host.Subject != "pg-primary-01" || !containsStr(host.Related, "postgresql") {
		t.Fatalf("host disk full: %+v", host)
	}
	if oom == nil || oom.Subject != "cache-redis-01" || oom.fact("process") != "redis-server" || !containsStr(oom.Related, "redis") {
		t.Fatalf("host OOM: %+v", oom)
	}
}

func TestClassifyMetricThrottling(t *testing.T) {
	cases := map[string]string{
		"container_cpu_cfs_throttled_periods_total": MetricCPUThrottle,
		"container_cpu_cfs_throttled_seconds_total": MetricCPUThrottle,
		"container_cpu_cfs_periods_total":           "",
		"http_server_errors_total":                  MetricErrors,
	}
	for n, want := range cases {
		if got, _ := ClassifyMetric(n); got != want {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", n, got, want)
		}
	}
	if k, up := metricKind(MetricCPUThrottle, evidence.Labels{}); k != KindCPUThrottling || !up {
		t.Errorf("metricKind(cpu throttle) = %q %v", k, up)
	}
}

func TestSteadyGrowth(t *testing.T) {
	mk := func(f func(i int) float64) []evidence.Point {
		var pts []evidence.Point
		for i := 0; i < 120; i++ {
			pts = append(pts, evidence.Point{T: now.Add(time.Duration(i) * time.Minute), V: f(i)})
		}
		return pts
	}
	mib := float64(1 << 20)
	// A sawtooth: 5 MiB/min from 250 MiB to the 1 GiB limit, restarted.
	saw := mk(func(i int) float64 { return 250*mib + float64(i%60)*5*mib })
	g, ok := SteadyGrowth(saw)
	if !ok || g.PerSecond*60/mib < 4.5 || g.PerSecond*60/mib > 5.5 {
		t.Fatalf("sawtooth leak: %+v %v", g, ok)
	}
	flat := mk(func(i int) float64 { return 500*mib + float64(i%7)*mib })
	if _, ok := SteadyGrowth(flat); ok {
		t.Error("flat memory reported as growth")
	}
	ms := []MetricSet{{Name: "container_memory_working_set_bytes", Class: MetricSaturation, Unit: "bytes", Origin: SrcMetrics,
		Series: []evidence.Series{{Labels: evidence.Labels{"container": "event-ingester"}, Points: saw}}}}
	w := Window{BaselineStart: now, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour)}
	fs := DetectMemoryGrowth(ms, w)
	if len(fs) != 1 || fs[0].Subject != "event-ingester" || !strings.Contains(fs[0].fact("leak_rate"), "MiB/min") {
		t.Fatalf("DetectMemoryGrowth = %+v", fs)
	}
}

func TestLivenessAndNodeOOMEvents(t *testing.T) {
	p := pod("ledger-7f9c8d6b5d-6sjzc", func(p *corev1.Pod) {
		p.OwnerReferences[0].Name = "ledger-7f9c8d6b5d"
		p.Spec.Containers[0].Name = "ledger"
		p.Spec.Containers[0].LivenessProbe = &corev1.Probe{InitialDelaySeconds: 30, PeriodSeconds: 10, FailureThreshold: 3}
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("500m")
	})
	oomPod := pod("event-ingester-59c7d86f4b-8g72x", func(p *corev1.Pod) {
		p.OwnerReferences[0].Name = "event-ingester-59c7d86f4b"
		p.Spec.NodeName = "ip-10-2-7-15.compute.internal"
	})
	evs := []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: p.Name}, Reason: "Killing", Type: "Normal",
			Message: "Container ledger failed liveness probe, will be restarted", FirstTimestamp: mt(now.Add(-20 * time.Minute)), LastTimestamp: mt(now.Add(-2 * time.Minute)), Count: 5},
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "ip-10-2-7-15.compute.internal"}, Reason: "OOMKilling", Type: "Warning",
			Message: "Memory cgroup out of memory: Killed process 19323 (event-ingester) total-vm:2318", FirstTimestamp: mt(now.Add(-10 * time.Minute)), LastTimestamp: mt(now.Add(-10 * time.Minute))},
	}
	fs := DetectEvents(evs, []corev1.Pod{p, oomPod}, win)
	EnrichFromPods(fs, []corev1.Pod{p, oomPod})
	var live, oom *Finding
	for i := range fs {
		switch fs[i].Kind {
		case KindLivenessKill:
			live = &fs[i]
		case KindOOMKilled:
			oom = &fs[i]
		}
	}
	if live == nil || live.Subject != "ledger" || !strings.Contains(live.fact("probe_config"), "initialDelaySeconds 30") {
		t.Fatalf("liveness kill: %+v", live)
	}
	if oom == nil || oom.Subject != "event-ingester" {
		t.Fatalf("a node's OOM event must name the workload: %+v", oom)
	}
	h := &Hypothesis{Kind: KindLivenessKill, Subject: "ledger", Primary: []*Finding{live}}
	if d := describe(h, Scope{}); !strings.Contains(d, "liveness") || !strings.Contains(d, "startupProbe") {
		t.Errorf("describe liveness: %s", d)
	}
	if r := recommend(h, Scope{}); !strings.Contains(r[0].Action, "initialDelaySeconds") {
		t.Errorf("recommend liveness: %+v", r)
	}
}

func TestDetectDNSServer(t *testing.T) {
	dnsPod := func(name string, healthy bool) corev1.Pod {
		return pod(name, func(p *corev1.Pod) {
			p.Namespace = "kube-system"
			p.Labels = map[string]string{"k8s-app": "kube-dns"}
			p.OwnerReferences[0].Name = "coredns-5b9dfbf96"
			cs := corev1.ContainerStatus{Name: "coredns", Ready: healthy, RestartCount: 9}
			if !healthy {
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: mt(now.Add(-30 * time.Minute)), FinishedAt: mt(now.Add(-30 * time.Minute))}
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
			cond := corev1.ConditionFalse
			if healthy {
				cond = corev1.ConditionTrue
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}
		})
	}
	prev := map[string][]evidence.LogLine{"kube-system/coredns-5b9dfbf96-aaaaa/coredns": {{Text: `[FATAL] plugin/loop: Loop (127.0.0.1:59742 -> :53) detected for zone "."`}}}
	fs := DetectDNSServer([]corev1.Pod{dnsPod("coredns-5b9dfbf96-aaaaa", false), dnsPod("coredns-5b9dfbf96-bbbbb", false)}, prev, win)
	if len(fs) != 1 || fs[0].Subject != "coredns" || !strings.Contains(fs[0].fact("last_log"), "Loop") {
		t.Fatalf("DetectDNSServer = %+v", fs)
	}
	if fs := DetectDNSServer([]corev1.Pod{dnsPod("coredns-5b9dfbf96-aaaaa", true), dnsPod("coredns-5b9dfbf96-bbbbb", true)}, nil, win); len(fs) != 0 {
		t.Fatalf("healthy CoreDNS reported: %+v", fs)
	}
}

func TestDeployCoverageAndNoise(t *testing.T) {
	dep := &Finding{Kind: KindDeploy, Subject: "session-gateway", Time: now.Add(-30 * time.Minute), Source: SrcChanges}
	shared := &Finding{Kind: KindConnRefused, Subject: "redis", Related: []string{"cart-api", "session-gateway", "promo-engine"},
		Facts: map[string]string{"caller": "cart-api", "lines": "500"}, Source: SrcLogs}
	if c := coverage(dep, []*Finding{shared}); c > 0.4 {
		t.Errorf("coverage of one caller of three = %.2f", c)
	}
	own := &Finding{Kind: KindConnRefused, Subject: "payments", Facts: map[string]string{"caller": "session-gateway"}}
	if c := coverage(dep, []*Finding{own}); c != 1 {
		t.Errorf("coverage of the deploy's own caller = %.2f", c)
	}
	few := &Finding{Source: SrcLogs, Facts: map[string]string{"lines": "2"}}
	many := &Finding{Source: SrcLogs, Facts: map[string]string{"lines": "40"}}
	if substantial(few) || !substantial(many) {
		t.Error("substantial: a couple of log lines are noise, forty are not")
	}
}

func TestPeerFinding(t *testing.T) {
	sc := Scope{Service: "cart-api", Namespace: "shop", Window: win}
	cases := []any{
		"redis is down",
		map[string]any{"summary": "redis is down"},
		map[string]any{"root_cause": map[string]any{"description": "redis is down"}},
	}
	for i, c := range cases {
		f, ok := PeerFinding("ops-bot", c, sc)
		if !ok || f.Kind != KindPeer || f.Subject != "cart-api" || !strings.Contains(f.Evidence[0], "redis is down") {
			t.Errorf("case %d: %+v %v", i, f, ok)
		}
	}
	if _, ok := PeerFinding("ops-bot", map[string]any{}, sc); ok {
		t.Error("empty answer became a finding")
	}
}

func TestTrimHashWords(t *testing.T) {
	for in, want := range map[string]string{
		"nightly-reconcile-29114280-xk2pq": "nightly-reconcile",
		"checkout-7d9f8b6c5-x2kqp":         "checkout",
		"ledger-service-5d4f8b7c9-67hlx":   "ledger-service",
	} {
		if got := workloadOfName(in); got != want {
			t.Errorf("workloadOfName(%q) = %q, want %q", in, got, want)
		}
	}
}

var _ = fmt.Sprint
var _ = metav1.Now

func analysisTemplate(line string, n int, first time.Time) analysis.LogTemplate {
	return analysis.LogTemplate{Template: line, Example: line, Incident: n, Count: n, New: true, FirstSeen: first, FirstIncident: first, LastSeen: first.Add(10 * time.Minute)}
}
