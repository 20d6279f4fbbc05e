package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hasEvidence(f Finding, sub string) bool {
	for _, e := range f.Evidence {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

func TestDetectHPA(t *testing.T) {
	hpaLabels := func(name string) evidence.Labels {
		return evidence.Labels{"namespace": "social", "horizontalpodautoscaler": name}
	}
	ramp := func(i int, t time.Time) float64 { return min(12, 4+float64(max(0, i-70))/4) }
	tests := []struct {
		name    string
		current func(i int, t time.Time) float64
		max     float64
		want    bool
		weight  float64
		hpa     string
	}{
		{"scaled up to its maximum", ramp, 12, true, 0.92, "feed"},
		{"below its maximum", ramp, 20, false, 0, "feed"},
		{"at its maximum all along", func(int, time.Time) float64 { return 12 }, 12, true, 0.6, "feed"},
		// KEDA's HPA of the ScaledObject feed is of feed.
		{"KEDA's HPA of a ScaledObject", ramp, 12, true, 0.92, "keda-hpa-feed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sets := []MetricSet{
				{Name: "kube_horizontalpodautoscaler_status_current_replicas", Class: MetricHPA, Origin: SrcMetrics,
					Series: []evidence.Series{series(hpaLabels(tc.hpa), tc.current)}},
				{Name: "kube_horizontalpodautoscaler_spec_max_replicas", Class: MetricHPA, Origin: SrcMetrics,
					Series: []evidence.Series{series(hpaLabels(tc.hpa), func(int, time.Time) float64 { return tc.max })}},
				{Name: "http_requests_total", Class: MetricRequests, Origin: SrcMetrics,
					Series: []evidence.Series{series(evidence.Labels{"job": "feed", "code": "200"}, func(i int, t time.Time) float64 {
						if t.Before(win.Start) {
							return 100
						}
						return 900
					})}},
			}
			fs := DetectHPA(sets, win)
			if !tc.want {
				if len(fs) != 0 {
					t.Fatalf("unexpected %v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != KindHPAMax || fs[0].Subject != "feed" || fs[0].Weight != tc.weight {
				t.Fatalf("got %+v", fs)
			}
			if fs[0].fact("max_replicas") != "12" || !hasEvidence(fs[0], "maxReplicas 12") {
				t.Errorf("facts %v evidence %v", fs[0].Facts, fs[0].Evidence)
			}
			if tc.weight > 0.9 && fs[0].fact("load_factor") != "9×" {
				t.Errorf("load factor %q, want 9×", fs[0].fact("load_factor"))
			}
		})
	}
}

func TestDetectCertExpiry(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		value  float64
		kind   Kind
	}{
		{"expires in two days (timestamp)", "certmanager_certificate_expiration_timestamp_seconds", float64(now.Add(50 * time.Hour).Unix()), KindCertExpiring},
		{"expired (timestamp)", "probe_ssl_earliest_cert_expiry", float64(now.Add(-time.Hour).Unix()), KindCertificate},
		{"expires in a month", "x509_cert_not_after", float64(now.Add(30 * 24 * time.Hour).Unix()), ""},
		{"seconds left", "ssl_certificate_expiry_seconds", 3 * 24 * 3600, KindCertExpiring},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c, _ := ClassifyMetric(tc.metric); c != MetricCertExpiry {
				t.Fatalf("%s classified %q", tc.metric, c)
			}
			sets := []MetricSet{{Name: tc.metric, Class: MetricCertExpiry, Origin: SrcMetrics, Series: []evidence.Series{
				series(evidence.Labels{"name": "public-api-tls", "namespace": "edge", "service": "unrelated"}, func(int, time.Time) float64 { return tc.value })}}}
			fs := DetectCertExpiry(sets, win)
			if tc.kind == "" {
				if len(fs) != 0 {
					t.Fatalf("unexpected %v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != tc.kind || fs[0].Subject != "public-api-tls" {
				t.Fatalf("got %+v", fs)
			}
			if tc.kind == KindCertExpiring {
				fs[0].setFact("renewal_error", "Error presenting challenge: 403")
				d := describe(&Hypothesis{Kind: fs[0].Kind, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
				if !strings.Contains(d, "expires in") || !strings.Contains(d, "renewal is failing") {
					t.Errorf("description %q", d)
				}
			}
		})
	}
}

func TestAttachCertRenewal(t *testing.T) {
	fs := []Finding{{Kind: KindCertExpiring, Subject: "public-api-tls", Weight: 0.8, Facts: map[string]string{"certificate": "public-api-tls"}}}
	evs := []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{Kind: "Challenge", Namespace: "edge", Name: "public-api-tls-1-22-33"}, Type: "Warning", Reason: "PresentError",
			Message: "Error presenting challenge: googleapi: Error 403: Forbidden", Count: 11, FirstTimestamp: mt(now.Add(-time.Hour))},
		{InvolvedObject: corev1.ObjectReference{Kind: "Challenge", Namespace: "edge", Name: "other-tls-1"}, Type: "Warning", Reason: "PresentError", Message: "other"},
	}
	attachCertRenewal(fs, evs)
	if !strings.Contains(fs[0].fact("renewal_error"), "403") || len(fs[0].Evidence) != 1 || fs[0].Weight <= 0.8 {
		t.Fatalf("got %+v", fs[0])
	}
}

func TestDetectBacklog(t *testing.T) {
	lag := func(part string, f func(i int, t time.Time) float64) evidence.Series {
		return series(evidence.Labels{"consumergroup": "tracker", "topic": "events", "partition": part, "job": "kafka-exporter"}, f)
	}
	growing := func(i int, t time.Time) float64 {
		if t.Before(win.Start.Add(10 * time.Minute)) {
			return 100
		}
		return 100 + 500*t.Sub(win.Start.Add(10*time.Minute)).Minutes()
	}
	tests := []struct {
		name   string
		metric string
		labels evidence.Labels
		f      func(i int, t time.Time) float64
		want   bool
	}{
		{"consumer lag grows", "kafka_consumergroup_lag", nil, growing, true},
		{"flat lag", "kafka_consumergroup_lag", nil, func(int, time.Time) float64 { return 100 }, false},
		{"lag that recovered", "kafka_consumergroup_lag", nil, func(i int, t time.Time) float64 {
			if t.After(win.Start.Add(20*time.Minute)) && t.Before(win.Start.Add(30*time.Minute)) {
				return 50000
			}
			return 100
		}, false},
		{"dead-letter queue filling is a symptom", "sqs_approximate_number_of_messages_visible", evidence.Labels{"queue": "orders-dlq"}, growing, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := lag("0", tc.f)
			if tc.labels != nil {
				s = series(tc.labels, tc.f)
			}
			fs := DetectBacklog([]MetricSet{{Name: tc.metric, Class: MetricSaturation, Origin: SrcMetrics, Series: []evidence.Series{s, lag("1", func(int, time.Time) float64 { return 0 })}}}, win)
			if !tc.want {
				if len(fs) != 0 {
					t.Fatalf("unexpected %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != KindBacklog || fs[0].Subject != "tracker" || fs[0].fact("topic") != "events" {
				t.Fatalf("got %+v", fs)
			}
			if !fs[0].Time.After(win.Start) {
				t.Errorf("onset %v", fs[0].Time)
			}
		})
	}
}

func TestSelectorMismatch(t *testing.T) {
	svc := ServiceState{Known: true, Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bff", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "bff", "tier": "web"}}}}
	ready := func(name string, labels map[string]string) corev1.Pod {
		return pod(name, func(p *corev1.Pod) {
			p.Labels = labels
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: strings.TrimSuffix(name, "-a")}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		})
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		want string // "" for no mismatch finding
	}{
		{"label dropped", []corev1.Pod{ready("bff-7d9f8b6c5-a", map[string]string{"app": "bff", "app.kubernetes.io/name": "bff"})}, "tier=web (pods have no tier label)"},
		{"label value changed", []corev1.Pod{ready("bff-7d9f8b6c5-a", map[string]string{"app": "bff", "tier": "frontend"})}, "tier=web (pods have tier=frontend)"},
		{"no such pods at all", []corev1.Pod{ready("other-7d9f8b6c5-a", map[string]string{"app": "other"})}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := DetectServices([]ServiceState{svc}, tc.pods)
			var m *Finding
			for i := range fs {
				if fs[i].Kind == KindSelector {
					m = &fs[i]
				}
			}
			if tc.want == "" {
				if m != nil {
					t.Fatalf("unexpected %+v", m)
				}
				return
			}
			if m == nil || !strings.Contains(m.fact("mismatch"), tc.want) || m.Weight < 0.9 {
				t.Fatalf("got %+v", fs)
			}
		})
	}
}

func TestOnlyRestart(t *testing.T) {
	rs := func(image, restarted string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{}
		r.Spec.Template.Labels = map[string]string{"app": "x", "pod-template-hash": image + restarted}
		if restarted != "" {
			r.Spec.Template.Annotations = map[string]string{restartedAtKey: restarted}
		}
		r.Spec.Template.Spec.Containers = []corev1.Container{{Name: "x", Image: image}}
		return r
	}
	tests := []struct {
		name     string
		old, nw  *appsv1.ReplicaSet
		expected bool
	}{
		{"rollout restart", rs("x:1", ""), rs("x:1", "2026-06-03T08:04:11Z"), true},
		{"second restart", rs("x:1", "2026-06-02T08:00:00Z"), rs("x:1", "2026-06-03T08:04:11Z"), true},
		{"new image", rs("x:1", ""), rs("x:2", "2026-06-03T08:04:11Z"), false},
		{"no restart annotation", rs("x:1", ""), rs("x:1", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diffs := templateDiff(&tc.old.Spec.Template.Spec, &tc.nw.Spec.Template.Spec)
			if got := onlyRestart(tc.old, tc.nw, diffs); got != tc.expected {
				t.Errorf("onlyRestart = %v, want %v", got, tc.expected)
			}
		})
	}
}

func TestCauseLineAndConfigCrash(t *testing.T) {
	lines := func(ss ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for _, s := range ss {
			out = append(out, evidence.LogLine{Text: s})
		}
		return out
	}
	tests := []struct {
		name   string
		lines  []evidence.LogLine
		want   string
		config bool
	}{
		{"yaml error before the exit line", lines(`level=info msg="loading rules" path=/etc/app/rules.yaml`,
			`level=error msg="failed to parse rules file" path=/etc/app/rules.yaml err="yaml: line 47: mapping values are not allowed in this context"`,
			`level=fatal msg="invalid configuration, exiting" exit_code=1`), "yaml: line 47", true},
		{"error with detail over a generic exit", lines(`ERROR cannot open database: invalid DSN: missing host`, `INFO shutting down`), "invalid DSN", false},
		{"only a last line", lines(`starting`, `bye`), "bye", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := causeLine(tc.lines)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("causeLine = %q, want it to contain %q", got, tc.want)
			}
			crash := Finding{Kind: KindCrashLoop, Subject: "app", Facts: map[string]string{"last_log": got, "exit_code": "1"}}
			f, ok := configCrash(crash, "pod shop/app-1 container app", true)
			if ok != tc.config {
				t.Fatalf("configCrash ok = %v, want %v", ok, tc.config)
			}
			if ok && (f.Kind != KindConfigInvalid || f.fact("config_path") != "/etc/app/rules.yaml") {
				t.Errorf("got %+v", f)
			}
		})
	}
}

func TestClassifyLineMechanisms(t *testing.T) {
	tests := []struct {
		line string
		kind Kind
	}{
		{`err="yaml: line 47: mapping values are not allowed in this context"`, KindConfigInvalid},
		{`json: cannot unmarshal string into Go struct field Config.port of type int`, KindConfigInvalid},
		{`consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms`, KindConsumerStall},
		{`error request failed err=canceling statement due to lock timeout`, KindDatabase},
		{`upstream request timeout after 30s`, KindTimeout},
	}
	for _, tc := range tests {
		if k, _ := ClassifyLine(tc.line); k != tc.kind {
			t.Errorf("ClassifyLine(%q) = %q, want %q", tc.line, k, tc.kind)
		}
	}
	if m := databaseMechanism("canceling statement due to lock timeout"); !strings.Contains(m, "table lock held by a migration") {
		t.Errorf("lock mechanism %q", m)
	}
}

func TestJVMHeapOverLimit(t *testing.T) {
	tests := []struct {
		name, xmx, limit, trigger string
		want                      bool
	}{
		{"heap above the limit (pod spec)", "-Xmx3072m", "2Gi", "", true},
		{"heap above the limit (config change)", "", "2Gi", "JAVA_TOOL_OPTIONS -Xmx1280m -> -Xmx3g", true},
		{"heap well below the limit", "-Xmx1280m", "2Gi", "", false},
		{"no limit", "-Xmx3072m", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &Finding{Kind: KindOOMKilled, Subject: "claims", Facts: map[string]string{}}
			f.setFact("jvm_xmx", tc.xmx)
			f.setFact("memory_limit", tc.limit)
			h := &Hypothesis{Kind: KindOOMKilled, Subject: "claims", Primary: []*Finding{f}}
			if tc.trigger != "" {
				h.Trigger = &Finding{Kind: KindConfigChange, Facts: map[string]string{"description": tc.trigger}}
			}
			got := jvmHeapOverLimit(h)
			if (got != "") != tc.want {
				t.Fatalf("jvmHeapOverLimit = %q, want %v", got, tc.want)
			}
			if tc.want && !strings.Contains(describe(h, Scope{}), "exceeds the container memory limit") {
				t.Errorf("description %q", describe(h, Scope{}))
			}
		})
	}
	c := &corev1.Container{Env: []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:+UseG1GC -Xmx3072m"}}}
	if x := xmxOfContainer(c); x != "-Xmx3072m" {
		t.Errorf("xmxOfContainer = %q", x)
	}
}

func TestSpecificMechanismAbsorbsDeploy(t *testing.T) {
	start := win.Start
	deploy := Finding{Kind: KindDeploy, Subject: "tracker", Time: start.Add(5 * time.Minute), Weight: 0.9, Source: SrcChanges, Summary: "deploy of tracker 2.7.0",
		Facts: map[string]string{"description": "tracker 2.7.0"}}
	netpol := Finding{Kind: KindInfraChange, Subject: "data", Time: start.Add(2 * time.Minute), Weight: 0.9, Source: SrcChanges, Summary: "NetworkPolicy default-deny",
		Facts: map[string]string{"description": "NetworkPolicy: default-deny ingress for namespace data"}}
	tests := []struct {
		name     string
		findings []Finding
		winner   Kind
		trigger  Kind
	}{
		{"backlog takes the deploy as its trigger", []Finding{deploy,
			{Kind: KindBacklog, Subject: "tracker", Time: start.Add(12 * time.Minute), Weight: 0.8, Source: SrcMetrics, Related: []string{"tracker"}},
			{Kind: KindLogErrors, Subject: "tracker", Time: start.Add(13 * time.Minute), Weight: 0.9, Source: SrcLogs, Facts: map[string]string{"lines": "40"}},
			{Kind: KindRolloutStuck, Subject: "tracker", Time: start.Add(6 * time.Minute), Weight: 0.85, Source: SrcKubernetes},
		}, KindBacklog, KindDeploy},
		{"timeouts after a NetworkPolicy change beat an unrelated deploy", []Finding{deploy, netpol,
			{Kind: KindTimeout, Subject: "tracker", Time: start.Add(8 * time.Minute), Weight: 0.85, Source: SrcLogs, Facts: map[string]string{"lines": "12", "caller": "tracker"}},
			{Kind: KindCrashLoop, Subject: "tracker", Time: start.Add(7 * time.Minute), Weight: 0.85, Source: SrcKubernetes},
			{Kind: KindRolloutStuck, Subject: "tracker", Time: start.Add(6 * time.Minute), Weight: 0.85, Source: SrcKubernetes},
		}, KindTimeout, KindInfraChange},
		{"a deploy with only generic symptoms stays a deploy", []Finding{deploy,
			{Kind: KindErrorRate, Subject: "tracker", Time: start.Add(7 * time.Minute), Weight: 0.9, Source: SrcMetrics},
			{Kind: KindLogErrors, Subject: "tracker", Time: start.Add(7 * time.Minute), Weight: 0.9, Source: SrcLogs, Facts: map[string]string{"lines": "40"}},
		}, KindDeploy, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Reason(tc.findings, Scope{Service: "tracker", Window: win})
			w := a.Hypotheses[0]
			if w.Kind != tc.winner {
				t.Fatalf("winner %s (%.2f), want %s", w.Kind, w.Score, tc.winner)
			}
			if tc.trigger != "" && (w.Trigger == nil || w.Trigger.Kind != tc.trigger) {
				t.Errorf("trigger %+v, want %s", w.Trigger, tc.trigger)
			}
			if c := confidence(a); tc.trigger == "" && c > 60 {
				t.Errorf("generic deploy confidence %.0f, want ≤ 60", c)
			}
		})
	}
}

func TestServerErrorShare(t *testing.T) {
	// Two status series scraped at different offsets, a steady 0.05%
	// of 500s: no error-rate finding.
	mk := func(code string, rate float64, offset time.Duration) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": "http_requests_total", "job": "wishlist", "code": code}}
		for t := win.BaselineStart.Add(offset); !t.After(win.End); t = t.Add(30 * time.Second) {
			s.Points = append(s.Points, evidence.Point{T: t, V: rate})
		}
		return s
	}
	noisy := mk("500", 0.05, 7*time.Second)
	for i := range noisy.Points {
		if i%7 == 0 && noisy.Points[i].T.After(win.Start) {
			noisy.Points[i].V = 0.2
		}
	}
	fs := DetectMetrics([]MetricSet{{Name: "http_requests_total", Class: MetricRequests, Unit: "/s", Origin: SrcMetrics,
		Series: []evidence.Series{mk("200", 100, 0), noisy}}}, win)
	for _, f := range fs {
		if f.Kind == KindErrorRate {
			t.Fatalf("a steady trickle of 500s became %+v", f)
		}
	}
}

// TestEventRulesExclusive checks that every event, as the kubelet and the
// controllers write them, is claimed by exactly the mechanism it shows,
// and by no other: the order of the list never decides.
func TestEventRulesExclusive(t *testing.T) {
	cases := []struct {
		reason, typ, msg string
		want             Kind
	}{
		{"FailedScheduling", "Warning", "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.", KindUnschedulable},
		{"Unhealthy", "Warning", "Liveness probe failed: Get \"http://10.244.0.12:8080/healthz\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)", KindLivenessKill},
		{"Unhealthy", "Warning", "Startup probe failed: dial tcp 10.244.1.5:8080: connect: connection refused", KindLivenessKill},
		{"Killing", "Normal", "Container api failed liveness probe, will be restarted", KindLivenessKill},
		{"Unhealthy", "Warning", "Readiness probe failed: HTTP probe failed with statuscode: 503", KindProbeFailure},
		{"Unhealthy", "Warning", "Readiness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec \"5c1d\": OCI runtime exec failed: exec failed: unable to start container process: exec: \"/bin/grpc_health_probe\": stat /bin/grpc_health_probe: no such file or directory: unknown", KindReadinessExecMissing},
		{"FailedMount", "Warning", "MountVolume.SetUp failed for volume \"config\" : configmap \"app-config\" not found", KindConfigError},
		{"FailedMount", "Warning", "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-x]: timed out waiting for the condition", KindMountFailure},
		{"Failed", "Warning", "Error: secret \"db-credentials\" not found", KindConfigError},
		{"Failed", "Warning", "Error: couldn't find key DB_PASSWORD in Secret shop/db", KindConfigError},
		{"Failed", "Warning", "Error: container has runAsNonRoot and image will run as root (pod: \"api-7d9f-x_shop(8a6f2d41)\", container: api)", KindNonRootImage},
		{"Failed", "Warning", "Error: container has runAsNonRoot and image has non-numeric user (appuser), cannot verify user is non-root (pod: \"api-7d9f-x_shop(8a6f2d41)\", container: api)", KindNonRootImage},
		{"Failed", "Warning", "Failed to pull image \"registry.local/api:v2\": rpc error: code = NotFound desc = failed to pull and unpack image", KindImagePull},
		{"Failed", "Warning", "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/app/server\": stat /app/server: no such file or directory: unknown", KindStartFailure},
		{"BackOff", "Normal", "Back-off pulling image \"registry.local/api:v2\"", KindImagePull},
		{"BackOff", "Warning", "Back-off restarting failed container api in pod api-7d9f_shop(1234)", KindCrashLoop},
		{"ErrImagePull", "Warning", "rpc error: code = Unknown desc = Error response from daemon: manifest for api:v9 not found", KindImagePull},
		{"Evicted", "Warning", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi.", KindEviction},
		{"Evicted", "Warning", "Container app exceeded its local ephemeral storage limit \"2Gi\". ", KindEphemeralLimit},
		{"EvictionThresholdMet", "Warning", "Attempting to reclaim ephemeral-storage", KindNodePressure},
		{"ImageGCFailed", "Warning", "failed to garbage collect required amount of images. Wanted to free 2147483648 bytes, but freed 0 bytes", KindNodePressure},
		{"NodeNotReady", "Warning", "Node is not ready", KindNodeNotReady},
		{"OOMKilling", "Warning", "Memory cgroup out of memory: Killed process 4242 (java) total-vm:4194304kB, anon-rss:2097152kB", KindOOMKilled},
		{"ProgressDeadlineExceeded", "Warning", "Deployment \"api\" has timed out progressing.", KindRolloutStuck},
		{"BackoffLimitExceeded", "Warning", "Job has reached the specified backoff limit", KindCrashLoop},
		{"ScalingLimited", "Warning", "the desired replica count is more than the maximum replica count", KindHPAMax},
		{"FailedRescale", "Warning", "New size: 10; reason: cpu resource utilization above target; capped at max replicas", KindHPAMax},
		{"FailedCreate", "Warning", "Error creating: pods \"api-7d9f-x\" is forbidden: exceeded quota: compute, requested: limits.memory=2Gi, used: limits.memory=7Gi, limited: limits.memory=8Gi", KindQuota},
		{"FailedCreate", "Warning", "Error creating: pods \"report-\" is forbidden: error looking up service account batch/reporter: serviceaccount \"reporter\" not found", KindCreateRefused},
		{"Killing", "Normal", "Stopping container api", ""},
		{"Pulled", "Normal", "Successfully pulled image \"nginx:1.25\" in 1.2s", ""},
		{"Scheduled", "Normal", "Successfully assigned shop/api-7d9f-x to node-1", ""},
	}
	for _, c := range cases {
		e := &corev1.Event{Reason: c.reason, Type: c.typ, Message: c.msg}
		var claims []Kind
		for _, m := range mechanisms {
			if m.event == nil {
				continue
			}
			if _, ok := m.event(e); ok {
				claims = append(claims, m.kind)
			}
		}
		if c.want == "" && len(claims) != 0 || c.want != "" && (len(claims) != 1 || claims[0] != c.want) {
			t.Errorf("%s %q: claimed by %v, want %q alone", c.reason, c.msg, claims, c.want)
		}
	}
}

// TestContainerJudgesExclusive checks that one container state is judged
// by exactly one mechanism, whose kind leads its findings: an OOM kill
// wins over the crash loop it causes; a config error and a command that
// cannot start split the kubelet's create errors.
func TestContainerJudgesExclusive(t *testing.T) {
	last := func(reason string, code int32, msg string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Message: msg,
			StartedAt: mt(now.Add(-6 * time.Minute)), FinishedAt: mt(now.Add(-5 * time.Minute))}}
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	cases := []struct {
		name string
		cs   corev1.ContainerStatus
		want Kind
	}{
		{"oom in crash loop", corev1.ContainerStatus{Name: "app", RestartCount: 4, State: waiting("CrashLoopBackOff", "back-off 2m40s restarting failed container=app"), LastTerminationState: last("OOMKilled", 137, "")}, KindOOMKilled},
		{"image pull", corev1.ContainerStatus{Name: "app", State: waiting("ImagePullBackOff", `Back-off pulling image "shop/checkout:v9"`)}, KindImagePull},
		{"missing secret", corev1.ContainerStatus{Name: "app", State: waiting("CreateContainerConfigError", `secret "db-credentials" not found`)}, KindConfigError},
		{"bad entrypoint", corev1.ContainerStatus{Name: "app", State: waiting("RunContainerError", `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/app/serve": stat /app/serve: no such file or directory: unknown`)}, KindStartFailure},
		{"crash loop", corev1.ContainerStatus{Name: "app", RestartCount: 6, State: waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=app"), LastTerminationState: last("Error", 1, "")}, KindCrashLoop},
		{"failed job container", corev1.ContainerStatus{Name: "app", State: last("Error", 2, "")}, KindCrashLoop},
		{"creating", corev1.ContainerStatus{Name: "app", State: waiting("ContainerCreating", "")}, ""},
		{"clean exit", corev1.ContainerStatus{Name: "app", State: last("Completed", 0, "")}, ""},
	}
	for _, c := range cases {
		p := pod("checkout-7d9f8b6c5-abcde", nil)
		st := newContainerState(&p, c.cs, Finding{Subject: "checkout", Object: "pod shop/" + p.Name}, nil, win)
		var judges []Kind
		var first Kind
		for _, m := range mechanisms {
			if m.container == nil {
				continue
			}
			if fs := m.container(st); len(fs) > 0 {
				judges = append(judges, m.kind)
				first = fs[0].Kind
			}
		}
		if c.want == "" && len(judges) != 0 || c.want != "" && (len(judges) != 1 || first != c.want) {
			t.Errorf("%s: judged by %v (first finding %q), want %q alone", c.name, judges, first, c.want)
		}
	}
}
