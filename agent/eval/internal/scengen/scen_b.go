package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// imagePullBackOff puts p in ImagePullBackOff (phase Pending, never started).
func imagePullBackOff(p *corev1.Pod, image, errMsg string) {
	cs := &p.Status.ContainerStatuses[0]
	cs.Ready, cs.Started, cs.RestartCount = false, ptr(false), 0
	cs.ImageID, cs.ContainerID, cs.Image = "", "", image
	cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", image, errMsg)}}
	p.Status.Phase = corev1.PodPending
	setPodConditions(p, p.Status.StartTime.Time, p.Status.StartTime.Time)
	p.Status.Conditions[0].Status = corev1.ConditionTrue
}

// scenImagePull: storefront v5.21.0 (a typo for v5.2.1) does not exist in
// the registry; the new pods sit in ImagePullBackOff.
func scenImagePull() (*World, string, *Scenario) {
	w := newWorld("imagepull-bad-tag", mustTime("2026-02-24T16:12:00Z"), 303)
	nodes := w.baseCluster("eu-central-1", "4")
	at := w.ago(27 * time.Minute)
	bad := "registry.example.com/web/storefront:v5.21.0"
	a := w.addApp(AppSpec{NS: "web", Name: "storefront", Replicas: 4, OldPods: 3, NewPods: 2, Port: 3000, MemReq: "192Mi", MemLim: "384Mi", ProbePath: "/api/health", Team: "web",
		Nodes: nodes, Revs: []Rev{
			{Image: "registry.example.com/web/storefront:v5.1.4", At: w.ago(16 * 24 * time.Hour)},
			{Image: "registry.example.com/web/storefront:v5.2.0", At: w.ago(4*24*time.Hour + 7*time.Hour)},
			{Image: bad, At: at, Cause: "argocd sync storefront (image.tag=v5.21.0)"},
		}})
	mailer := w.addApp(AppSpec{NS: "mail", Name: "mailer", Replicas: 2, Nodes: nodes, Team: "growth", ProbePath: "/healthz",
		Revs: []Rev{{Image: "registry.example.com/growth/mailer:v0.19.3", At: w.ago(9 * 24 * time.Hour)}}})
	w.completedJob("web", "sitemap-builder-29528760", nodes[2], w.ago(48*time.Minute))
	newRS, oldRS := a.RSs[2], a.RSs[1]
	errMsg := fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", bad, bad, bad)
	w.scalingEvent(a, newRS, at, fmt.Sprintf("Scaled up replica set %s from 0 to 1", newRS.Name))
	w.scalingEvent(a, oldRS, at, fmt.Sprintf("Scaled down replica set %s from 4 to 3", oldRS.Name))
	w.scalingEvent(a, newRS, at.Add(time.Second), fmt.Sprintf("Scaled up replica set %s from 1 to 2", newRS.Name))
	for i, p := range a.Pods[:2] {
		start := at.Add(time.Duration(1+i) * time.Second)
		p.Status.StartTime = ptr(mt(start))
		p.CreationTimestamp = mt(start)
		imagePullBackOff(p, bad, errMsg)
		p.Status.Conditions[2].LastTransitionTime = mt(start)
		w.rsCreateEvent(newRS, p)
		w.podEvent(p, "Normal", "Scheduled", fmt.Sprintf("Successfully assigned web/%s to %s", p.Name, p.Spec.NodeName), start, time.Time{}, 1)
		n := int32(7 + i)
		w.podEvent(p, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", bad), start.Add(time.Second), w.ago(time.Duration(3+i*2)*time.Minute), n)
		w.podEvent(p, "Warning", "Failed", fmt.Sprintf("Failed to pull image %q: %s", bad, errMsg), start.Add(2*time.Second), w.ago(time.Duration(3+i*2)*time.Minute-time.Second), n)
		w.podEvent(p, "Warning", "Failed", "Error: ErrImagePull", start.Add(2*time.Second), w.ago(time.Duration(3+i*2)*time.Minute-time.Second), n)
		w.podEvent(p, "Normal", "BackOff", fmt.Sprintf("Back-off pulling image %q", bad), start.Add(3*time.Second), w.ago(time.Duration(20+i*9)*time.Second), 100+int32(w.R.IntN(20)))
		w.podEvent(p, "Warning", "Failed", "Error: ImagePullBackOff", start.Add(3*time.Second), w.ago(time.Duration(20+i*9)*time.Second), 100+int32(w.R.IntN(20)))
		w.podLog(p, "", fmt.Sprintf("Request log error: container %q in pod %q is waiting to start: trying and failing to pull image\n", "storefront", p.Name))
	}
	w.healthyLogs(a.Pods2(2), styleJSON, "v5.2.0", 50*time.Second, []string{"/", "/product/{id}", "/cart", "/api/health"})
	w.healthyLogs(mailer, styleLogfmt, "v0.19.3", 90*time.Second, []string{"POST /v1/send", "/v1/templates"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("kube_deployment_status_replicas_unavailable", "gauge", "The number of unavailable replicas per deployment.")
	o.GaugeExact(`namespace="web",deployment="storefront"`, step(at.Add(30*time.Second), 0, 1, 0))
	o.GaugeExact(`namespace="mail",deployment="mailer"`, constant(0))
	o.Family("kube_deployment_status_replicas_updated", "gauge", "The number of updated replicas per deployment.")
	o.GaugeExact(`namespace="web",deployment="storefront"`, step(at, 4, 2, 0))
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="web",service="storefront",code="200"`, 55_120_887, diurnal(140, 0.25))
	o.Counter(`namespace="web",service="storefront",code="404"`, 90_112, constant(1.2))
	o.Counter(`namespace="web",service="storefront",code="500"`, 4_330, constant(0.05))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="web",service="storefront"`, diurnal(140, 0.25), step(at, 0.06, 0.07, 2*time.Minute))
	w.goroutines(o, "mailer", "alertmanager")
	w.nodeCPU(o, 0.41)
	o.Save("web")
	w.changes(
		chg(w.ago(4*24*time.Hour+7*time.Hour), "storefront", "deploy", "storefront v5.2.0: new product gallery", "v5.2.0", "argocd"),
		chg(w.ago(26*time.Hour), "mailer", "config", "mailer: raise SMTP pool size to 8", "", "li.wei"),
		chg(at, "storefront", "deploy", "storefront v5.2.1: checkout button experiment (image.tag=v5.21.0)", "v5.21.0", "argocd"),
	)
	sc := &Scenario{Title: "storefront rollout stuck on ImagePullBackOff (bad image tag)", Request: ScenarioRequest{AgentName: "planner",
		Message: "The storefront deploy has been running for 25 minutes and has not finished. Why?", Context: map[string]string{"service": "storefront", "namespace": "web"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"imagepullbackoff", "errimagepull", "image pull", "pull image", "pulling image", "image tag"}},
			AffectedSystemsAll: []string{"storefront"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"describe_pod", "get_events", "list_pods"}}}
	return w, "web/storefront rollout to v5.21.0 stuck: image not found", sc
}

// scenBadDeploy: profile-service v1.14.0 throws NullPointerException on a
// third of requests; the 5xx rate jumps right after the rollout.
func scenBadDeploy() (*World, string, *Scenario) {
	w := newWorld("bad-deploy-5xx", mustTime("2026-03-05T11:30:00Z"), 404)
	nodes := w.baseCluster("us-west-2", "8")
	at := w.ago(41 * time.Minute)
	a := w.addApp(AppSpec{NS: "api", Name: "profile-service", Replicas: 3, MemReq: "768Mi", MemLim: "1Gi", CPUReq: "500m", ProbePath: "/actuator/health/readiness", Team: "identity",
		Nodes: nodes, Revs: []Rev{
			{Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/profile-service:v1.13.1", At: w.ago(24 * 24 * time.Hour)},
			{Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/profile-service:v1.13.2", At: w.ago(10*24*time.Hour + 4*time.Hour), Cause: "deploy v1.13.2 (pipeline #8812)"},
			{Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/profile-service:v1.14.0", At: at, Cause: "deploy v1.14.0 (pipeline #8907)"},
		}})
	gw := w.addApp(AppSpec{NS: "api", Name: "api-gateway", Replicas: 2, Port: 8000, Nodes: nodes, ProbePath: "/ready", Team: "platform",
		Revs: []Rev{{Image: "envoyproxy/envoy:v1.32.3", At: w.ago(30 * 24 * time.Hour)}}})
	prefs := w.addApp(AppSpec{NS: "api", Name: "notification-prefs", Replicas: 2, Nodes: nodes, ProbePath: "/healthz", Team: "identity",
		Revs: []Rev{{Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/notification-prefs:v0.8.4", At: w.ago(7 * 24 * time.Hour)}}})
	w.resolvedScheduling(prefs, w.ago(50*time.Minute))
	newRS, oldRS := a.RSs[2], a.RSs[1]
	for i, p := range a.Pods {
		t := at.Add(time.Duration(i*38) * time.Second)
		p.Status.StartTime = ptr(mt(t))
		p.CreationTimestamp = mt(t)
		p.Status.ContainerStatuses[0].State.Running.StartedAt = mt(t.Add(3 * time.Second))
		setPodConditions(p, t, t.Add(31*time.Second))
		w.startupEvents(p)
		w.rsCreateEvent(newRS, p)
		w.scalingEvent(a, newRS, t, fmt.Sprintf("Scaled up replica set %s from %d to %d", newRS.Name, i, i+1))
		w.scalingEvent(a, oldRS, t.Add(34*time.Second), fmt.Sprintf("Scaled down replica set %s from %d to %d", oldRS.Name, 3-i, 2-i))
		w.podEvent(p, "Warning", "Unhealthy", "Readiness probe failed: Get \"http://"+p.Status.PodIP+":8080/actuator/health/readiness\": dial tcp "+p.Status.PodIP+":8080: connect: connection refused", t.Add(9*time.Second), t.Add(19*time.Second), 2)
	}
	for _, p := range a.Pods {
		l := w.lines()
		st := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		for i, m := range []string{"Starting ProfileServiceApplication v1.14.0 using Java 21.0.5 with PID 1", "The following 1 profile is active: \"prod\"",
			"HikariPool-1 - Start completed.", "Tomcat started on port 8080 (http) with context path '/'", "Started ProfileServiceApplication in 14.882 seconds (process running for 15.61)"} {
			tt := st.Add(time.Duration(i*3) * time.Second)
			l.Add(tt, msgLine(styleSpring, tt, "INFO", "profile-service", m))
		}
		l.Every(st.Add(20*time.Second), w.Now, 25*time.Second, func(t time.Time, i int) string {
			if w.R.Float64() < 0.35 {
				return msgLine(styleSpring, t, "ERROR", "profile-service", fmt.Sprintf("Servlet.service() for servlet [dispatcherServlet] threw exception: java.lang.NullPointerException: Cannot invoke \"String.toLowerCase()\" because \"locale\" is null at c.a.profile.prefs.PreferencesMapper.toDto(PreferencesMapper.java:57) [GET /v2/profiles/%d/preferences]", 10000+w.R.IntN(900000)))
			}
			return reqLine(styleSpring, t, "profile-service", "GET", w.pick("/v2/profiles/{id}", "/v2/profiles/{id}/preferences", "/v2/profiles/{id}/avatar"), 200, 8+w.R.ExpFloat64()*20, "")
		})
		w.podLog(p, "", fixIDs(w, l.String()))
	}
	for _, p := range gw.Pods {
		l := w.lines()
		l.Every(w.ago(70*time.Minute), w.Now, 20*time.Second, func(t time.Time, i int) string {
			code, flags := 200, "-"
			path := w.pick("/v2/profiles/{id}", "/v2/profiles/{id}/preferences", "/v1/prefs/{id}")
			upstream := "profile-service"
			if path == "/v1/prefs/{id}" {
				upstream = "notification-prefs"
			} else if t.After(at.Add(time.Minute)) && w.R.Float64() < 0.3 {
				code, flags = 500, "-"
			}
			return fmt.Sprintf("[%s] \"GET %s HTTP/1.1\" %d %s 0 %d %d \"-\" \"okhttp/4.12.0\" \"%s\" \"%s.api.svc.cluster.local:80\"", t.UTC().Format("2006-01-02T15:04:05.000Z"),
				fixIDs(w, path), code, flags, 200+w.R.IntN(3000), 5+w.R.IntN(40), w.reqID(), upstream)
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(prefs, styleLogfmt, "v0.8.4", 60*time.Second, []string{"/v1/prefs/{id}"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	for _, v := range []struct {
		ver      string
		from, to time.Time
	}{{"v1.13.2", w.ago(3 * time.Hour), at.Add(110 * time.Second)}, {"v1.14.0", at, w.Now.Add(time.Minute)}} {
		share := func(t time.Time) float64 {
			// traffic moves from the old pods to the new ones during the rollout
			f := float64(t.Sub(at)) / float64(110*time.Second)
			f = max(0, min(1, f))
			if v.ver == "v1.13.2" {
				return 1 - f
			}
			return f
		}
		lbl := fmt.Sprintf(`namespace="api",service="profile-service",version=%q`, v.ver)
		o.Counter(lbl+`,code="200"`, 3_000_000, between(v.from, v.to, func(t time.Time) float64 {
			r := 62 * share(t)
			if v.ver == "v1.14.0" {
				r *= 0.66
			}
			return r
		}))
		o.Counter(lbl+`,code="404"`, 12_000, between(v.from, v.to, func(t time.Time) float64 { return 0.4 * share(t) }))
		o.Counter(lbl+`,code="500"`, 310, between(v.from, v.to, func(t time.Time) float64 {
			if v.ver == "v1.14.0" {
				return 21 * share(t)
			}
			return 0.03 * share(t)
		}))
	}
	o.Counter(`namespace="api",service="notification-prefs",version="v0.8.4",code="200"`, 880_140, constant(9))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="api",service="profile-service"`, constant(62), constant(0.018))
	o.Family("jvm_memory_used_bytes", "gauge", "Used JVM memory.")
	for _, p := range a.Pods {
		o.Gauge(fmt.Sprintf(`namespace="api",pod=%q,area="heap"`, p.Name), 0.05, between(p.Status.StartTime.Time, w.Now.Add(time.Minute), constant(310*mi)))
	}
	w.nodeCPU(o, 0.22)
	w.upSeries(o, "profile-service", "api-gateway", "notification-prefs", "node-exporter")
	o.Save("api")
	w.changes(
		chg(w.ago(10*24*time.Hour+4*time.Hour), "profile-service", "deploy", "profile-service v1.13.2: avatar resize fix", "v1.13.2", "pipeline"),
		chg(w.ago(7*24*time.Hour), "notification-prefs", "deploy", "notification-prefs v0.8.4", "v0.8.4", "pipeline"),
		chg(w.ago(2*24*time.Hour), "api-gateway", "config", "api-gateway: raise idle timeout to 75s", "", "sam.ortiz"),
		chg(at, "profile-service", "deploy", "profile-service v1.14.0: preferences v2 mapper (PR #3121)", "v1.14.0", "pipeline"),
	)
	sc := &Scenario{Title: "profile-service 5xx spike after the v1.14.0 deploy", Request: ScenarioRequest{AgentName: "planner",
		Message: "Error rate alert: profile-service is returning lots of 500s since about 40 minutes ago.", Context: map[string]string{"service": "profile-service", "namespace": "api", "severity": "high"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"v1.14.0", "deploy", "rollout", "release"}, {"5xx", "500", "error rate", "errors", "exception"}},
			AffectedSystemsAll: []string{"profile-service"}, MinEvidence: 2, MinTimeline: 2, ToolsUsedAny: []string{"prometheus_query_range", "detect_anomalies", "get_pod_logs", "get_rollout_history", "list_changes"}}}
	return w, "api/profile-service returns 500s (NullPointerException) since v1.14.0", sc
}

// fixIDs replaces {id} with a number.
func fixIDs(w *World, s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if i+4 <= len(s) && s[i:i+4] == "{id}" {
			out = append(out, fmt.Sprint(10000+w.R.IntN(900000))...)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

// scenTLS: the certificate of the ledger service (outside the cluster)
// expired; invoice-api's calls fail with x509 errors.
func scenTLS() (*World, string, *Scenario) {
	w := newWorld("tls-cert-expired", mustTime("2026-03-02T08:47:00Z"), 505)
	nodes := w.baseCluster("eu-west-2", "4")
	expiry := mustTime("2026-03-02T08:00:00Z")
	a := w.addApp(AppSpec{NS: "billing", Name: "invoice-api", Replicas: 3, Nodes: nodes, ProbePath: "/healthz", Team: "billing",
		Env:  []corev1.EnvVar{{Name: "LEDGER_URL", Value: "https://ledger.finance.internal"}},
		Revs: []Rev{{Image: "ghcr.io/acme/invoice-api:1.31.0", At: w.ago(20 * 24 * time.Hour)}, {Image: "ghcr.io/acme/invoice-api:1.31.2", At: w.ago(3*24*time.Hour + 2*time.Hour)}}})
	pdf := w.addApp(AppSpec{NS: "billing", Name: "pdf-renderer", Replicas: 2, Nodes: nodes, MemLim: "1Gi", MemReq: "512Mi", ProbePath: "/healthz", Team: "billing",
		Revs: []Rev{{Image: "ghcr.io/acme/pdf-renderer:0.9.12", At: w.ago(40 * 24 * time.Hour)}}})
	bb := w.addApp(AppSpec{NS: "monitoring", Name: "blackbox-exporter", Replicas: 1, Port: 9115, Nodes: nodes, Revs: []Rev{{Image: "quay.io/prometheus/blackbox-exporter:v0.25.0", At: w.ago(60 * 24 * time.Hour)}}})
	w.completedJob("billing", "dunning-run-29541900", nodes[1], w.ago(44*time.Minute))
	w.hpaNoise("billing", "pdf-renderer", w.ago(33*time.Minute))
	certErr := func(t time.Time) string {
		return fmt.Sprintf("Post \"https://ledger.finance.internal/v1/entries\": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time %s is after %s", t.UTC().Format(time.RFC3339), expiry.Format(time.RFC3339))
	}
	for _, p := range a.Pods {
		l := w.lines()
		l.Every(w.ago(70*time.Minute), w.Now, 30*time.Second, func(t time.Time, i int) string {
			inv := fmt.Sprintf("INV-2026-%06d", 100000+w.R.IntN(99999))
			if t.After(expiry) {
				if i%3 == 0 {
					return fmt.Sprintf(`time=%s level=error service=invoice-api msg="ledger client: post entry failed" invoice=%s attempt=3 err=%q`, ts(t), inv, certErr(t))
				}
				return reqLine(styleLogfmt, t, "invoice-api", "POST", "/v1/invoices/"+inv+"/finalize", 502, 30+w.R.ExpFloat64()*20, w.reqID())
			}
			if i%4 == 0 {
				return fmt.Sprintf(`time=%s level=info service=invoice-api msg="ledger entry posted" invoice=%s entry_id=%d`, ts(t), inv, 7_000_000+w.R.IntN(900000))
			}
			return reqLine(styleLogfmt, t, "invoice-api", w.pick("GET", "POST"), "/v1/invoices/"+inv, 200, 12+w.R.ExpFloat64()*15, w.reqID())
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(pdf, styleJSON, "0.9.12", 80*time.Second, []string{"POST /render", "/healthz"})
	w.healthyLogs(bb, styleLogfmt, "v0.25.0", 120*time.Second, []string{"/probe?target=ledger.finance.internal:443&module=tls_connect"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("probe_ssl_earliest_cert_expiry", "gauge", "Returns last SSL chain expiry in unixtime.")
	o.GaugeExact(`instance="ledger.finance.internal:443",job="blackbox-tls"`, constant(float64(expiry.Unix())))
	o.GaugeExact(`instance="api.stripe.com:443",job="blackbox-tls"`, constant(float64(mustTime("2026-09-18T23:59:59Z").Unix())))
	o.GaugeExact(`instance="sso.acme.example:443",job="blackbox-tls"`, constant(float64(mustTime("2026-05-30T12:00:00Z").Unix())))
	o.Family("probe_success", "gauge", "Displays whether or not the probe was a success.")
	o.GaugeExact(`instance="ledger.finance.internal:443",job="blackbox-tls"`, step(expiry, 1, 0, 0))
	o.GaugeExact(`instance="api.stripe.com:443",job="blackbox-tls"`, constant(1))
	o.GaugeExact(`instance="sso.acme.example:443",job="blackbox-tls"`, constant(1))
	o.Family("ledger_client_requests", "counter", "Calls to the ledger API by result.")
	o.Counter(`namespace="billing",service="invoice-api",result="success"`, 2_211_904, step(expiry, 7.5, 0, 0))
	o.Counter(`namespace="billing",service="invoice-api",result="error"`, 1_203, step(expiry, 0.01, 7.2, 0))
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="billing",service="invoice-api",code="200"`, 9_118_200, step(expiry, 21, 14, 0))
	o.Counter(`namespace="billing",service="invoice-api",code="502"`, 2_030, step(expiry, 0.02, 7.2, 0))
	o.Counter(`namespace="billing",service="pdf-renderer",code="200"`, 811_344, constant(3.1))
	w.goroutines(o, "pdf-renderer", "blackbox-exporter")
	w.nodeCPU(o, 0.35)
	o.Save("billing")
	w.changes(
		chg(w.ago(3*24*time.Hour+2*time.Hour), "invoice-api", "deploy", "invoice-api 1.31.2: VAT rounding fix", "1.31.2", "ci"),
		chg(w.ago(20*time.Hour), "pdf-renderer", "config", "pdf-renderer: font cache size 256MB", "", "ana.silva"),
	)
	w.Files["runbooks/ledger.md"] = []byte(`# Ledger API

The ledger service (ledger.finance.internal) is run by the finance platform team outside the
cluster. Its TLS certificate is issued by the internal CA (Acme Internal Issuing CA 2) and is
renewed by cert-manager on the finance VMs.

## Certificate problems

Symptoms: callers log "x509: certificate has expired or is not yet valid" or
"certificate signed by unknown authority".

1. Check expiry: ` + "`openssl s_client -connect ledger.finance.internal:443 </dev/null | openssl x509 -noout -enddate`" + `.
2. Page #finance-platform; the renewal job is ` + "`ledger-cert-renew`" + ` on ledger-vm-1/2.
3. Callers retry with backoff; invoices stay in "finalizing" and are re-posted once the ledger is reachable.
`)
	sc := &Scenario{Title: "invoice-api failing: expired TLS certificate on the ledger dependency", Request: ScenarioRequest{AgentName: "investigation_agent",
		Message: "Invoices are failing to finalize since this morning.", Context: map[string]string{"service": "invoice-api", "namespace": "billing"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"certificate", "x509", "tls", "cert"}, {"expir"}},
			AffectedSystemsAll: []string{"invoice-api"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"get_pod_logs", "search_logs", "get_log_signatures"}}}
	return w, "billing/invoice-api cannot reach the ledger: its TLS certificate expired at 08:00Z", sc
}

// scenDBPool: accounts-api's MySQL connection pool is exhausted under a
// burst of slow statement-export requests.
func scenDBPool() (*World, string, *Scenario) {
	w := newWorld("db-pool-exhaustion", mustTime("2026-03-09T19:25:00Z"), 606)
	nodes := w.baseCluster("ap-southeast-2", "4")
	onset := w.ago(29 * time.Minute)
	a := w.addApp(AppSpec{NS: "accounts", Name: "accounts-api", Replicas: 3, Nodes: nodes, ProbePath: "/healthz", Team: "ledger",
		Env:  []corev1.EnvVar{{Name: "DB_MAX_OPEN_CONNS", Value: "50"}, {Name: "DB_CONN_WAIT_TIMEOUT", Value: "5s"}},
		Revs: []Rev{{Image: "ghcr.io/acme/accounts-api:4.2.0", At: w.ago(30 * 24 * time.Hour)}, {Image: "ghcr.io/acme/accounts-api:4.2.3", At: w.ago(8*24*time.Hour + 90*time.Minute)}}})
	stm := w.addApp(AppSpec{NS: "accounts", Name: "statements-ui", Replicas: 2, Nodes: nodes, Port: 3000, ProbePath: "/", Team: "ledger",
		Revs: []Rev{{Image: "ghcr.io/acme/statements-ui:2.0.1", At: w.ago(12 * 24 * time.Hour)}}})
	w.completedJob("accounts", "interest-accrual-29543520", nodes[0], w.ago(55*time.Minute))
	for _, p := range a.Pods {
		l := w.lines()
		l.Every(w.ago(70*time.Minute), w.Now, 30*time.Second, func(t time.Time, i int) string {
			if t.After(onset) {
				switch r := w.R.Float64(); {
				case r < 0.35:
					return msgLine(styleJSON, t, "ERROR", "accounts-api", fmt.Sprintf("db: connection pool exhausted: timed out after 5s waiting for a connection (in_use=50 max_open=50 wait_count=%d)", 800+i*37))
				case r < 0.45:
					return msgLine(styleJSON, t, "ERROR", "accounts-api", "db: dial failed: Error 1040 (08004): Too many connections")
				case r < 0.6:
					return reqLine(styleJSON, t, "accounts-api", "GET", fixIDs(w, "/v1/accounts/{id}/statements/export?months=24"), 200, 9000+w.R.ExpFloat64()*5000, w.reqID())
				case r < 0.8:
					return reqLine(styleJSON, t, "accounts-api", "GET", fixIDs(w, "/v1/accounts/{id}/balance"), 503, 5000+w.R.Float64()*30, w.reqID())
				}
			}
			return reqLine(styleJSON, t, "accounts-api", "GET", fixIDs(w, w.pick("/v1/accounts/{id}/balance", "/v1/accounts/{id}", "/v1/accounts/{id}/transactions?limit=50")), 200, 6+w.R.ExpFloat64()*25, w.reqID())
		})
		w.podLog(p, "", l.String())
	}
	w.healthyLogs(stm, styleLogfmt, "2.0.1", 60*time.Second, []string{"/", "/statements", "/static/app.js"})

	o := w.om(2*time.Hour, time.Minute)
	o.Family("db_pool_connections_in_use", "gauge", "Connections currently in use.")
	for _, p := range a.Pods {
		o.Gauge(fmt.Sprintf(`namespace="accounts",pod=%q,pool="primary"`, p.Name), 0.0, func(t time.Time) float64 {
			if t.After(onset.Add(4 * time.Minute)) {
				return 50
			}
			return step(onset, 7+3*w.R.Float64(), 50, 4*time.Minute)(t)
		})
	}
	o.Family("db_pool_max_open_connections", "gauge", "Maximum number of open connections to the database.")
	for _, p := range a.Pods {
		o.GaugeExact(fmt.Sprintf(`namespace="accounts",pod=%q,pool="primary"`, p.Name), constant(50))
	}
	o.Family("db_pool_wait", "counter", "Connection waits: requests that had to wait for a free connection.")
	for _, p := range a.Pods {
		o.Counter(fmt.Sprintf(`namespace="accounts",pod=%q,pool="primary"`, p.Name), 1_870, step(onset, 0.01, 14, 3*time.Minute))
	}
	o.Family("mysql_global_status_threads_connected", "gauge", "Threads connected to MySQL.")
	o.Gauge(`instance="accounts-db.prod:9104",job="mysqld"`, 0.02, step(onset, 64, 178, 4*time.Minute))
	o.Family("mysql_global_variables_max_connections", "gauge", "MySQL max_connections.")
	o.GaugeExact(`instance="accounts-db.prod:9104",job="mysqld"`, constant(180))
	o.Family("http_requests", "counter", "HTTP requests by status code.")
	o.Counter(`namespace="accounts",service="accounts-api",code="200"`, 40_112_090, step(onset, 88, 51, 3*time.Minute))
	o.Counter(`namespace="accounts",service="accounts-api",code="503"`, 3_380, step(onset, 0.02, 31, 3*time.Minute))
	o.Family("http_request_duration_seconds", "histogram", "Request latency.")
	o.Histogram(`namespace="accounts",service="accounts-api"`, constant(88), step(onset, 0.022, 2.4, 4*time.Minute))
	w.goroutines(o, "statements-ui")
	w.nodeCPU(o, 0.3)
	o.Save("accounts")
	w.changes(
		chg(w.ago(8*24*time.Hour+90*time.Minute), "accounts-api", "deploy", "accounts-api 4.2.3: pagination for transactions", "4.2.3", "ci"),
		chg(w.ago(4*24*time.Hour), "statements-ui", "config", "statements-ui: enable 24-month export button for all customers", "", "j.patel"),
	)
	sc := &Scenario{Title: "accounts-api database connection pool exhausted", Request: ScenarioRequest{AgentName: "metrics_agent",
		Message: "accounts-api latency p99 is over 5 seconds and we see 503s.", Context: map[string]string{"service": "accounts-api", "namespace": "accounts"}},
		Expect: &ScenarioExpect{RootCauseAny: [][]string{{"connection pool", "pool exhausted", "pool exhaustion", "too many connections", "max connections", "database connections"}},
			AffectedSystemsAll: []string{"accounts-api"}, MinEvidence: 2, MinTimeline: 1, ToolsUsedAny: []string{"prometheus_query_range", "detect_anomalies", "get_pod_logs", "search_logs", "get_log_signatures"}}}
	return w, "accounts/accounts-api: MySQL connection pool at its limit, requests time out waiting for connections", sc
}
