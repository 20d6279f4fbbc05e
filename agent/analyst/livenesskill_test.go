package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestLivenessKill(t *testing.T) {
	testEvents(t, livenessKill, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Container api failed liveness probe, will be restarted",
			KindLivenessKill, []string{"api containers are killed by their failing liveness probe and restarted (exit code 143", "fails before the application is ready"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Container api failed startup probe, will be restarted",
			KindLivenessKill, []string{"api containers are killed"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Stopping container api", "", nil},
		// What the probe got back says why it fails.
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, "Liveness probe failed: HTTP probe failed with statuscode: 404",
			KindLivenessKill, []string{"answers HTTP 404", "not on the path the probe checks"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, "Liveness probe failed: HTTP probe failed with statuscode: 503",
			KindLivenessKill, []string{"gets HTTP 503", "own health check reports it unhealthy"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe failed: Get "http://10.244.3.17:8080/healthz": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
			KindLivenessKill, []string{"GET /healthz gets no answer within the probe's timeout"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe failed: Get "http://10.244.3.17:8080/healthz": dial tcp 10.244.3.17:8080: connect: connection refused`,
			KindLivenessKill, []string{"fails before the application is ready", "connection refused", "no startupProbe"}},
		{"Pod", "grpc-api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, `Liveness probe failed: service unhealthy (responded with "NOT_SERVING")`,
			KindLivenessKill, []string{"gets NOT_SERVING", "own health check"}},
		{"Pod", "db-0", "Unhealthy", corev1.EventTypeWarning, `Liveness probe failed: /var/run/postgresql:5432 - no response`,
			KindLivenessKill, []string{"the probe's command fails", "no response"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, "Readiness probe failed: HTTP probe failed with statuscode: 404", "", nil},
		// An exec probe whose command is not in the image: the runtime
		// (containerd+runc, CRI-O, Docker) or the probe's shell says so.
		{"Pod", "router-6b9d7c5f48-tx4kq", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "5d0e4c1b9a8f7e6d": OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/grpc_health_probe": stat /bin/grpc_health_probe: no such file or directory: unknown`,
			KindLivenessKill, []string{"exec probe whose command /bin/grpc_health_probe is not in the container's image", `stat /bin/grpc_health_probe: no such file or directory`, "killed, it does not crash"}},
		{"Pod", "web-7f9c-abcde", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe errored: rpc error: code = Unknown desc = command error: time="2026-11-25T15:33:45Z" level=error msg="exec failed: unable to start container process: exec: \"curl\": executable file not found in $PATH", stdout: , stderr: , exit code -1`,
			KindLivenessKill, []string{"command curl is not in the container's image"}},
		{"Pod", "web-7f9c-abcde", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe failed: OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: "wget": executable file not found in $PATH: unknown`,
			KindLivenessKill, []string{"command wget is not in the container's image"}},
		{"Pod", "db-0", "Unhealthy", corev1.EventTypeWarning, `Liveness probe failed: /bin/sh: 1: pg_isready: not found`,
			KindLivenessKill, []string{"command pg_isready is not in the container's image"}},
		{"Pod", "cache-0", "Unhealthy", corev1.EventTypeWarning, `Startup probe failed: bash: line 1: redis-cli: command not found`,
			KindLivenessKill, []string{"command redis-cli is not in the container's image"}},
		{"Pod", "cache-0", "Unhealthy", corev1.EventTypeWarning, `Liveness probe failed: sh: nc: not found`,
			KindLivenessKill, []string{"command nc is not in the container's image"}},
		// A command that ran and answered "not found" of something else is
		// not a missing command.
		{"Pod", "cache-0", "Unhealthy", corev1.EventTypeWarning, `Liveness probe failed: key health:ping not found`,
			KindLivenessKill, []string{"the probe's command fails"}},
	})
}

// TestProbeCommandMissingRecommends: a command missing from the image
// is put back or the probe replaced by one that needs nothing in it; the
// finding says why (what the runtime answered), which keeps its
// confidence.
func TestProbeCommandMissingRecommends(t *testing.T) {
	o := probeOutcomeOf(`Liveness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "5d0e": OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/grpc_health_probe": stat /bin/grpc_health_probe: no such file or directory: unknown`)
	if o.failure != "exec_missing" || o.missing != "/bin/grpc_health_probe" || !strings.Contains(o.why(), "not in the container's image") {
		t.Fatalf("outcome %+v", o)
	}
	f := Finding{Kind: KindLivenessKill, Subject: "geo"}
	for k, v := range map[string]string{"probe_failure": o.failure, "missing_command": o.missing, "probe_command": "/bin/grpc_health_probe -addr=:50051"} {
		f.setFact(k, v)
	}
	h := &Hypothesis{Kind: KindLivenessKill, Subject: "geo", Primary: []*Finding{&f}}
	recs := recommend(h, Scope{})
	var all []string
	for _, r := range recs {
		all = append(all, r.Action)
	}
	text := strings.Join(all, "\n")
	for _, w := range []string{"Put /bin/grpc_health_probe back into the image of geo", "grpc, httpGet or tcpSocket probe", "kubectl exec POD -- /bin/grpc_health_probe -addr=:50051"} {
		if !strings.Contains(text, w) {
			t.Errorf("recommendations %q do not say %q", text, w)
		}
	}
	if strings.Contains(text, "initialDelaySeconds") {
		t.Errorf("recommendations %q speak of a slow start", text)
	}
}

// TestNotFoundLine: the ways applications log a request they have no route
// for, matched on the probe's path and not on a longer one.
func TestNotFoundLine(t *testing.T) {
	cases := []struct {
		line, path string
		want       bool
	}{
		{"2026-10-14T08:53:36.010Z  WARN 1 --- [inventory-api] [nio-8080-exec-4] o.s.web.servlet.PageNotFound             : No mapping for GET /health", "/health", true},
		{`2026-10-14T08:53:36.010Z  WARN 1 --- [main] .w.s.m.s.DefaultHandlerExceptionResolver : Resolved [org.springframework.web.servlet.resource.NoResourceFoundException: No static resource health.]`, "/health", true},
		{`10.244.7.1 - - [14/Oct/2026:08:53:36 +0000] "GET /healthz HTTP/1.1" 404 153 "-" "kube-probe/1.30"`, "/healthz", true},
		{`INFO:     10.244.7.1:51234 - "GET /health HTTP/1.1" 404 Not Found`, "/health", true},
		{`10.244.7.1 - - [14/Oct/2026 08:53:36] "GET /status?full=1 HTTP/1.1" 404 -`, "/status", true},
		{`GET /health 404 1.234 ms - 145`, "/health", true},
		{`[GIN] 2026/10/14 - 08:53:36 | 404 |       1.2µs |      10.244.7.1 | GET      "/live"`, "/live", true},
		{`Started GET "/up" for 10.244.7.1 at 2026-10-14 08:53:36 +0000` + "\n" + `ActionController::RoutingError (No route matches [GET] "/up"):`, "/up", true},
		{`Not Found: /healthz/`, "/healthz", false},
		{`Not Found: /healthz`, "/healthz", true},
		{`info: Microsoft.AspNetCore.Hosting.Diagnostics[2] Request finished HTTP/1.1 GET http://10.244.7.52:8080/health - 404 0 - 0.1234ms`, "/health", true},
		// Served, another path, or a longer path that starts with it.
		{`10.244.7.1 - - [14/Oct/2026:08:53:36 +0000] "GET /health HTTP/1.1" 200 2 "-" "kube-probe/1.30"`, "/health", false},
		{`10.244.7.1 - - [14/Oct/2026:08:53:36 +0000] "GET /healthcheck HTTP/1.1" 404 153`, "/health", false},
		{`o.s.web.servlet.PageNotFound : No mapping for GET /actuator/health`, "/health", false},
		{`GET /api/v2/stock?sku=WH-118273 404 14ms`, "/health", false},
	}
	for _, c := range cases {
		if got := notFoundLine(c.line, c.path); got != c.want {
			t.Errorf("notFoundLine(%q, %q) = %v, want %v", c.line, c.path, got, c.want)
		}
	}
}

// TestProbePathNotFound: the liveness probe's path, read from the pod
// spec, is what the application's log says it has nothing at: the finding
// quotes the line; a log without it adds nothing.
func TestProbePathNotFound(t *testing.T) {
	now := time.Date(2026, 10, 14, 8, 55, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	p := pod("inventory-api-6d5f8b7c9-h2n8v", func(p *corev1.Pod) {
		p.Namespace = "warehouse"
		p.Spec.Containers = []corev1.Container{{Name: "app", LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health"}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/actuator/health/readiness"}}}}}
	})
	ev := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "warehouse", Name: p.Name}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
		Message: "Liveness probe failed: HTTP probe failed with statuscode: 404", FirstTimestamp: mt(now.Add(-30 * time.Minute)), LastTimestamp: mt(now.Add(-time.Minute)), Count: 33}
	for name, c := range map[string]struct {
		logs []string
		want bool
	}{
		"spring no mapping":   {[]string{"INFO Started InventoryApplication in 23.102 seconds", "WARN o.s.web.servlet.PageNotFound : No mapping for GET /health"}, true},
		"no word of the path": {[]string{"INFO Started InventoryApplication in 23.102 seconds", "INFO GET /api/v2/stock 200 14ms"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := &Gathered{Window: w, K8s: K8sEvidence{Pods: []corev1.Pod{p}, PreviousLogs: map[string][]evidence.LogLine{}}}
			for _, l := range c.logs {
				g.K8s.PreviousLogs["warehouse/"+p.Name+"/app"] = append(g.K8s.PreviousLogs["warehouse/"+p.Name+"/app"], evidence.LogLine{Text: l})
			}
			found := DetectEvents([]corev1.Event{ev}, g.K8s.Pods, w)
			fs := detectProbePathNotFound(g, found)
			if !c.want {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			all := append(found, fs...)
			EnrichFromPods(all, g.K8s.Pods)
			h := &Hypothesis{Kind: KindLivenessKill, Subject: "inventory-api"}
			for i := range all {
				if all[i].Kind == KindLivenessKill {
					h.Primary = append(h.Primary, &all[i])
				}
			}
			wantDescribed(t, h, Scope{}, "GET /health answers HTTP 404", "No mapping for GET /health", "the readiness probe checks /actuator/health/readiness")
			if recs := recommend(h, Scope{}); !strings.Contains(recs[0].Action, "Point the liveness probe of inventory-api at a health path") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}

// TestProbeHealthDown: a liveness probe answered with a 5xx, and the
// application logging one of its health checks down, names that check as
// the one in the liveness group that gets working pods restarted.
func TestProbeHealthDown(t *testing.T) {
	now := time.Date(2026, 10, 14, 8, 55, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	p := pod("orders-consumer-6d5f8b7c9-h2n8v", func(p *corev1.Pod) {
		p.Namespace = "shop"
		p.Spec.Containers = []corev1.Container{{Name: "app", LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/actuator/health/liveness"}}}}}
	})
	for name, c := range map[string]struct {
		event string
		logs  []string
		want  string
	}{
		"spring custom indicator": {"Liveness probe failed: HTTP probe failed with statuscode: 503",
			[]string{"2026-10-14T08:41:13.041Z  WARN 1 --- [orders] [nio-8081-exec-1] c.e.o.health.ConsumerLagHealthIndicator : lag 61200 above threshold 5000 -> DOWN"}, "ConsumerLagHealthIndicator"},
		"spring abstract indicator": {"Liveness probe failed: HTTP probe failed with statuscode: 503",
			[]string{"2026-10-14 08:41:13.041  WARN 1 --- [nio-8080-exec-3] o.s.b.a.jdbc.DataSourceHealthIndicator   : DataSource health check failed"}, "DataSourceHealthIndicator"},
		"aspnet core": {"Liveness probe failed: HTTP probe failed with statuscode: 503",
			[]string{`fail: Microsoft.Extensions.Diagnostics.HealthChecks.DefaultHealthCheckService[103] Health check redis with status Unhealthy completed after 5002.1ms with message 'Timeout'`}, "the health check redis"},
		"no health word": {"Liveness probe failed: HTTP probe failed with statuscode: 503",
			[]string{"INFO GET /actuator/health/liveness 503 3ms"}, ""},
		"not a 5xx": {"Liveness probe failed: HTTP probe failed with statuscode: 404",
			[]string{"WARN c.e.o.health.ConsumerLagHealthIndicator : lag above threshold -> DOWN"}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			ev := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: p.Name}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
				Message: c.event, FirstTimestamp: mt(now.Add(-30 * time.Minute)), LastTimestamp: mt(now.Add(-time.Minute)), Count: 33}
			g := &Gathered{Window: w, K8s: K8sEvidence{Pods: []corev1.Pod{p}, PreviousLogs: map[string][]evidence.LogLine{}}}
			for _, l := range c.logs {
				g.K8s.PreviousLogs["shop/"+p.Name+"/app"] = append(g.K8s.PreviousLogs["shop/"+p.Name+"/app"], evidence.LogLine{Text: l})
			}
			found := DetectEvents([]corev1.Event{ev}, g.K8s.Pods, w)
			fs := detectProbeHealthDown(g, found)
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			all := append(found, fs...)
			h := &Hypothesis{Kind: KindLivenessKill, Subject: "orders-consumer"}
			for i := range all {
				if all[i].Kind == KindLivenessKill {
					h.Primary = append(h.Primary, &all[i])
				}
			}
			wantDescribed(t, h, Scope{}, "gets HTTP 503 because a health indicator in the liveness check reports DOWN: "+c.want, "restarts pods that are working")
			if recs := recommend(h, Scope{}); !strings.Contains(recs[0].Action, "Take "+c.want+" out of the liveness health group") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
