package analyst

import (
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/finding"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	now = time.Date(2026, 3, 14, 10, 42, 0, 0, time.UTC)
	win = Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
)

func mt(t time.Time) metav1.Time { return metav1.NewTime(t) }

func pod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "checkout-7d9f8b6c5"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "shop/checkout:v2",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: now.Add(-30 * time.Minute)}},
	}
	if mutate != nil {
		mutate(&p)
	}
	return p
}

func kindsOf(fs []Finding) []Kind {
	var out []Kind
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

func TestDetectPods(t *testing.T) {
	tests := []struct {
		name     string
		pod      corev1.Pod
		prevLogs map[string][]evidence.LogLine
		kind     Kind
		evidence []string // substrings each expected in some evidence string
		facts    map[string]string
	}{
		{
			name: "oomkilled",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 5,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: mt(now.Add(-5 * time.Minute))}}}}
			}),
			kind:     KindOOMKilled,
			evidence: []string{"OOMKilled, exit code 137", "restart count 5", "memory limit is 256Mi", "CrashLoopBackOff"},
			facts:    map[string]string{"memory_limit": "256Mi", "restarts": "5"},
		},
		{
			name: "crashloop with previous logs",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 3,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: mt(now.Add(-2 * time.Minute))}}}}
			}),
			prevLogs: map[string][]evidence.LogLine{"shop/checkout-7d9f8b6c5-abcde/app": {{Text: "starting"}, {Text: "fatal: DATABASE_URL is not set"}}},
			kind:     KindCrashLoop,
			evidence: []string{"CrashLoopBackOff, restart count 3", "exit code 1 (application error)", "DATABASE_URL is not set"},
			facts:    map[string]string{"exit_code": "1", "last_log": "fatal: DATABASE_URL is not set"},
		},
		{
			name: "image pull",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "shop/checkout:v2"`}}}}
			}),
			kind:     KindImagePull,
			evidence: []string{"ImagePullBackOff for image shop/checkout:v2", "Back-off pulling image"},
			facts:    map[string]string{"image": "shop/checkout:v2"},
		},
		{
			name: "missing secret",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "db-credentials" not found`}}}}
			}),
			kind:     KindConfigError,
			evidence: []string{"CreateContainerConfigError", "db-credentials"},
			facts:    map[string]string{"missing": "secret db-credentials"},
		},
		{
			name: "unschedulable",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/3 nodes are available: 3 Insufficient cpu.", LastTransitionTime: mt(now.Add(-10 * time.Minute))}}
			}),
			kind:     KindUnschedulable,
			evidence: []string{"Insufficient cpu"},
		},
		{
			name: "evicted",
			pod: pod("checkout-7d9f8b6c5-abcde", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodFailed
				p.Status.Reason = "Evicted"
				p.Status.Message = "The node was low on resource: ephemeral-storage."
			}),
			kind:     KindEviction,
			evidence: []string{"evicted from node node-1", "ephemeral-storage"},
			facts:    map[string]string{"resource": "disk", "node": "node-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := DetectPods([]corev1.Pod{tt.pod}, tt.prevLogs, win)
			if len(fs) != 1 || fs[0].Kind != tt.kind {
				t.Fatalf("findings %v, want one %s", kindsOf(fs), tt.kind)
			}
			f := fs[0]
			if f.Subject != "checkout" {
				t.Errorf("subject %q, want checkout", f.Subject)
			}
			all := strings.Join(f.Evidence, "\n")
			for _, want := range tt.evidence {
				if !strings.Contains(all, want) {
					t.Errorf("evidence lacks %q:\n%s", want, all)
				}
			}
			for k, v := range tt.facts {
				if f.fact(k) != v {
					t.Errorf("fact %s = %q, want %q", k, f.fact(k), v)
				}
			}
		})
	}
}

func TestDetectPodsHealthyAndStale(t *testing.T) {
	healthy := pod("checkout-7d9f8b6c5-aaaaa", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	stale := pod("checkout-7d9f8b6c5-bbbbb", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 1,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: mt(now.Add(-48 * time.Hour))}}}}
	})
	if fs := DetectPods([]corev1.Pod{healthy, stale}, nil, win); len(fs) != 0 {
		t.Fatalf("findings on healthy pods: %v", kindsOf(fs))
	}
}

func TestDetectEvents(t *testing.T) {
	ev := func(reason, kind, name, msg string, at time.Time) corev1.Event {
		return corev1.Event{Reason: reason, Message: msg, Type: corev1.EventTypeWarning, Count: 3,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "shop"},
			FirstTimestamp: mt(at), LastTimestamp: mt(at.Add(time.Minute))}
	}
	running := pod("checkout-7d9f8b6c5-ready", func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
	})
	tests := []struct {
		name     string
		event    corev1.Event
		kind     Kind
		subject  string
		resolved bool
	}{
		{"readiness", ev("Unhealthy", "Pod", "checkout-7d9f8b6c5-x1abc", "Readiness probe failed: HTTP probe failed with statuscode: 503", now.Add(-10*time.Minute)), KindProbeFailure, "checkout", false},
		{"failed scheduling", ev("FailedScheduling", "Pod", "checkout-7d9f8b6c5-x1abc", "0/3 nodes are available: 3 Insufficient memory.", now.Add(-10*time.Minute)), KindUnschedulable, "checkout", false},
		{"mount", ev("FailedMount", "Pod", "checkout-7d9f8b6c5-x1abc", "MountVolume.SetUp failed for volume \"data\": timeout", now.Add(-10*time.Minute)), KindMountFailure, "checkout", false},
		{"secret mount", ev("FailedMount", "Pod", "checkout-7d9f8b6c5-x1abc", "MountVolume.SetUp failed for volume \"creds\" : secret \"db\" not found", now.Add(-10*time.Minute)), KindConfigError, "checkout", false},
		{"node pressure", ev("EvictionThresholdMet", "Node", "node-1", "Attempting to reclaim ephemeral-storage", now.Add(-10*time.Minute)), KindNodePressure, "node-1", false},
		{"quota", ev("FailedCreate", "ReplicaSet", "checkout-7d9f8b6c5", "pods \"x\" is forbidden: exceeded quota: compute", now.Add(-10*time.Minute)), KindQuota, "checkout", false},
		{"liveness kill", ev("Killing", "Pod", "checkout-7d9f8b6c5-x1abc", "Container app failed liveness probe, will be restarted", now.Add(-10*time.Minute)), KindLivenessKill, "checkout", false},
		{"liveness unhealthy", ev("Unhealthy", "Pod", "checkout-7d9f8b6c5-x1abc", "Liveness probe failed: Get \"http://10.0.0.1:8080/health\": context deadline exceeded", now.Add(-10*time.Minute)), KindLivenessKill, "checkout", false},
		{"node not ready on a pod names the node", ev("NodeNotReady", "Pod", running.Name, "Node is not ready", now.Add(-10*time.Minute)), KindNodeNotReady, "node-1", true},
		{"resolved on running pod", ev("FailedScheduling", "Pod", running.Name, "0/3 nodes are available", now.Add(-40*time.Minute)), KindUnschedulable, "checkout", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := DetectEvents([]corev1.Event{tt.event}, []corev1.Pod{running}, win)
			if len(fs) != 1 || fs[0].Kind != tt.kind || fs[0].Subject != tt.subject {
				t.Fatalf("findings %+v, want one %s on %s", fs, tt.kind, tt.subject)
			}
			if got := fs[0].fact("resolved") == "true"; got != tt.resolved {
				t.Errorf("resolved = %v, want %v", got, tt.resolved)
			}
			if !strings.Contains(fs[0].Evidence[0], "3 times") {
				t.Errorf("evidence lacks the count: %s", fs[0].Evidence[0])
			}
		})
	}
	// Ignored: Normal chatter and events older than the baseline.
	quiet := []corev1.Event{
		{Reason: "Pulled", Type: corev1.EventTypeNormal, Message: "Successfully pulled image", InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "a"}, FirstTimestamp: mt(now)},
		ev("Unhealthy", "Pod", "old-1", "Readiness probe failed", now.Add(-5*time.Hour)),
	}
	if fs := DetectEvents(quiet, nil, win); len(fs) != 0 {
		t.Errorf("findings from quiet events: %v", kindsOf(fs))
	}
}

func TestDetectNodesAndServices(t *testing.T) {
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", LastTransitionTime: mt(now.Add(-20 * time.Minute))}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: mt(now.Add(-15 * time.Minute))}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
	}
	fs := DetectNodes(nodes, win)
	if len(fs) != 2 || fs[0].Kind != KindNodePressure || fs[0].fact("resource") != "disk" || fs[1].Kind != KindNodeNotReady || fs[1].Subject != "node-2" {
		t.Fatalf("node findings %+v", fs)
	}
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "payments"}}}
	p := pod("payments-5c4f9d7b8-aaaaa", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "payments"}
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "payments-5c4f9d7b8"}}
	})
	tests := []struct {
		name  string
		state ServiceState
		want  int
	}{
		{"known none ready", ServiceState{Service: svc, Known: true, NotReadyEndpoints: 2}, 1},
		{"known ready", ServiceState{Service: svc, Known: true, ReadyEndpoints: 1}, 0},
		{"derived from unready pod", ServiceState{Service: svc}, 1},
	}
	for _, tt := range tests {
		got := DetectServices([]ServiceState{tt.state}, []corev1.Pod{p})
		if len(got) != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, len(got), tt.want)
		}
		if len(got) == 1 && (got[0].Kind != KindNoEndpoints || len(got[0].Related) != 1 || got[0].Related[0] != "payments") {
			t.Errorf("%s: finding %+v", tt.name, got[0])
		}
	}
}

func TestDetectRolloutsAndDeployments(t *testing.T) {
	d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "checkout", Namespace: "shop"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3))},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 2, UpdatedReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", LastTransitionTime: mt(now.Add(-5 * time.Minute))}}}}
	rs := func(name, rev, image, mem string, created time.Time, ready int32) appsv1.ReplicaSet {
		return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", CreationTimestamp: mt(created),
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": rev},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "checkout"}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}}}}}}},
			Status: appsv1.ReplicaSetStatus{ReadyReplicas: ready}}
	}
	rss := []appsv1.ReplicaSet{
		rs("checkout-new", "5", "shop/checkout:v2.3.1", "256Mi", now.Add(-30*time.Minute), 0),
		rs("checkout-old", "4", "shop/checkout:v2.3.0", "512Mi", now.Add(-30*24*time.Hour), 2),
	}
	ch := DetectRollouts([]appsv1.Deployment{d}, rss, win)
	if len(ch) != 1 || ch[0].Kind != KindDeploy || ch[0].fact("previous_revision") != "4" || ch[0].fact("previous_image") != "shop/checkout:v2.3.0" {
		t.Fatalf("rollouts %+v", ch)
	}
	for _, want := range []string{"image shop/checkout:v2.3.0 → shop/checkout:v2.3.1", "app memory limit 512Mi → 256Mi"} {
		if !strings.Contains(ch[0].Evidence[0], want) {
			t.Errorf("rollout evidence lacks %q: %s", want, ch[0].Evidence[0])
		}
	}
	st := DetectDeployments([]appsv1.Deployment{d}, rss, win)
	if len(st) != 1 || st[0].Kind != KindRolloutStuck || st[0].Severity != SevCritical {
		t.Fatalf("deployment findings %+v", st)
	}
	if all := strings.Join(st[0].Evidence, "\n"); !strings.Contains(all, "ProgressDeadlineExceeded") || !strings.Contains(all, "still serves 2") {
		t.Errorf("deployment evidence: %s", all)
	}
}

func ptr[T any](v T) *T { return &v }

func TestClassifyLineAndTargets(t *testing.T) {
	tests := []struct {
		line   string
		kind   Kind
		target string
	}{
		{`dial tcp 10.0.3.17:5432: connect: connection refused`, KindConnRefused, "10.0.3.17:5432"},
		{`Post "https://payments.shop.svc.cluster.local:8443/v1/pay": dial tcp 172.20.1.9:8443: connect: connection refused`, KindConnRefused, "payments:8443"},
		{`x509: certificate has expired or is not yet valid: current time 2026-03-02T08:01:00Z is after 2026-03-02T08:00:00Z`, KindCertificate, ""},
		{`lookup redis.cache.svc.cluster.local on 10.96.0.10:53: no such host`, KindDNS, "redis"},
		{`FATAL: sorry, too many clients already`, KindDatabase, ""},
		{`context deadline exceeded calling inventory:9000`, KindTimeout, "inventory:9000"},
		{`panic: runtime error: invalid memory address or nil pointer dereference`, KindAppCrash, ""},
		{`java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted, ""},
		{`write /var/lib/data/x: no space left on device`, KindDiskFull, ""},
		{`session expired, redirecting to login`, "", ""},
		{`GET /health 200 3ms`, "", ""},
	}
	for _, tt := range tests {
		kind, _ := ClassifyLine(tt.line)
		if kind != tt.kind {
			t.Errorf("ClassifyLine(%q) = %q, want %q", tt.line, kind, tt.kind)
		}
		if tt.target != "" {
			if got := DependencyTarget(tt.line); got != tt.target {
				t.Errorf("DependencyTarget(%q) = %q, want %q", tt.line, got, tt.target)
			}
		}
	}
	if got := certExpiry(tests[2].line); got != "2026-03-02T08:00:00Z" {
		t.Errorf("certExpiry = %q", got)
	}
}

func TestDetectLogs(t *testing.T) {
	m := analysis.NewMiner(win.BaselineStart, win.Start, win.End)
	for i := 0; i < 120; i++ {
		at := win.BaselineStart.Add(time.Duration(i) * time.Minute)
		m.Add(at, "checkout-1", "GET /cart 200 12ms")
		if at.After(win.Start.Add(20 * time.Minute)) {
			m.Add(at, "checkout-1", "payment failed: dial tcp payments:8080: connect: connection refused")
		}
		if i%20 == 0 {
			m.Add(at, "checkout-1", "ERROR cache miss storm for key 12") // steady background error
		}
	}
	base, _ := m.Lines()
	set := LogSet{Source: "checkout-1", Subject: "checkout", Origin: SrcLogs, Templates: m.Templates(), HasBaseline: base >= 10}
	fs := DetectLogs([]LogSet{set}, win)
	var dep *Finding
	for i := range fs {
		if fs[i].Kind == KindConnRefused {
			dep = &fs[i]
		}
	}
	if dep == nil {
		t.Fatalf("no connection refused finding in %v", kindsOf(fs))
	}
	if dep.Subject != "payments" || dep.fact("caller") != "checkout" || dep.Weight < 0.9 {
		t.Errorf("dependency finding %+v", dep)
	}
	if !strings.Contains(dep.Evidence[0], "new in the incident window") {
		t.Errorf("evidence lacks trend: %s", dep.Evidence[0])
	}
	for _, f := range fs {
		if f.Kind == KindLogErrors && f.Weight > 0.4 {
			t.Errorf("steady background error weighted %.2f: %+v", f.Weight, f)
		}
	}
}

func series(labels evidence.Labels, f func(i int, t time.Time) float64) evidence.Series {
	s := evidence.Series{Labels: labels}
	for i := 0; i <= 120; i++ {
		at := win.BaselineStart.Add(time.Duration(i) * time.Minute)
		s.Points = append(s.Points, evidence.Point{T: at, V: f(i, at)})
	}
	return s
}

func TestDetectMetrics(t *testing.T) {
	onset := win.Start.Add(25 * time.Minute)
	step := func(before, after float64) func(int, time.Time) float64 {
		return func(i int, at time.Time) float64 {
			if at.Before(onset) {
				return before + float64(i%3)*0.01*before
			}
			return after
		}
	}
	sets := []MetricSet{
		{Name: "http_requests_total", Class: MetricRequests, Unit: "/s", Origin: SrcMetrics, Series: []evidence.Series{
			series(evidence.Labels{"__name__": "http_requests_total", "service": "checkout", "code": "200"}, step(50, 40)),
			series(evidence.Labels{"__name__": "http_requests_total", "service": "checkout", "code": "500"}, step(0, 10)),
			series(evidence.Labels{"__name__": "http_requests_total", "service": "search", "code": "200"}, step(500, 500)),
			series(evidence.Labels{"__name__": "http_requests_total", "service": "search", "code": "500"}, step(0, 0.5)), // 0.1%: noise
		}},
		{Name: "process_cpu_usage", Class: MetricSaturation, Origin: SrcMetrics, Series: []evidence.Series{
			series(evidence.Labels{"__name__": "process_cpu_usage", "service": "checkout"}, step(0.2, 0.21)), // not meaningful
		}},
		{Name: "node_filesystem_avail_bytes", Class: MetricFree, Unit: "bytes", Origin: SrcMetrics, Series: []evidence.Series{
			series(evidence.Labels{"__name__": "node_filesystem_avail_bytes", "node": "node-1"}, step(40e9, 1e9)),
		}},
	}
	fs := DetectMetrics(sets, win)
	got := map[Kind]string{}
	for _, f := range fs {
		got[f.Kind] = f.Subject
	}
	if len(fs) != 2 || got[KindErrorRate] != "checkout" || got[KindSaturation] != "node-1" {
		t.Fatalf("metric findings %v", fs)
	}
	for _, f := range fs {
		if f.Kind == KindErrorRate {
			if !f.Time.Equal(onset) {
				t.Errorf("onset %v, want %v", f.Time, onset)
			}
			if !strings.Contains(f.Evidence[0], "20% of requests") {
				t.Errorf("evidence lacks the error share: %s", f.Evidence[0])
			}
		}
	}
}

func TestClassifyMetric(t *testing.T) {
	tests := map[string]string{
		"http_requests_total":                      MetricRequests,
		"payment_errors_total":                     MetricErrors,
		"http_request_duration_seconds_sum":        MetricLatency,
		"http_request_duration_seconds_bucket":     "",
		"container_memory_working_set_bytes":       MetricSaturation,
		"kube_pod_container_status_restarts_total": MetricRestarts,
		"node_filesystem_avail_bytes":              MetricFree,
		"kube_pod_container_resource_limits":       "",
		"go_info":                                  "",
		"db_pool_connections_in_use":               MetricSaturation,
		"up":                                       MetricUp,
	}
	for name, want := range tests {
		if got, _ := ClassifyMetric(name); got != want {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", name, got, want)
		}
	}
}

// oneFinding checks that a detector found exactly one finding when want,
// none otherwise, and returns it, with whether there is one to check.
func oneFinding(t *testing.T, fs []Finding, want bool) (Finding, bool) {
	t.Helper()
	if !want {
		if len(fs) != 0 {
			t.Fatalf("want no finding, got %+v", fs)
		}
		return Finding{}, false
	}
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d: %+v", len(fs), fs)
	}
	return fs[0], true
}

// checkWritten describes and recommends the cause that f alone makes
// under m: the description must hold each of wants and the first
// recommendation firstRec. It returns the description.
func checkWritten(t *testing.T, m *mechanism, f *Finding, firstRec string, wants ...string) string {
	t.Helper()
	h := &Hypothesis{Kind: m.kind, Subject: f.Subject, Primary: []*Finding{f}}
	d := m.describe(h, Scope{})
	for _, w := range wants {
		if !strings.Contains(d, w) {
			t.Errorf("description lacks %q: %s", w, d)
		}
	}
	r := &recommender{h: h}
	m.recommend(h, Scope{}, r)
	if len(r.recs) == 0 || !strings.Contains(r.recs[0].Action, firstRec) {
		t.Errorf("first recommendation of %+v lacks %q", r.recs, firstRec)
	}
	return d
}

// bundleSources opens the files of fsys as a bundle and reads it as of
// now.
func bundleSources(t *testing.T, fsys fstest.MapFS, now time.Time) *evidence.Sources {
	t.Helper()
	b, err := bundle.Open(fsys, "test")
	if err != nil {
		t.Fatal(err)
	}
	return b.Sources(now)
}

// explain checks that m's description of h says each of says, and returns
// what m recommends for h.
func explain(t *testing.T, name string, m *mechanism, h *Hypothesis, says []string) []finding.Recommendation {
	t.Helper()
	d := m.describe(h, Scope{})
	for _, s := range says {
		if !strings.Contains(d, s) {
			t.Errorf("%s: description %q does not say %q", name, d, s)
		}
	}
	r := &recommender{h: h}
	m.recommend(h, Scope{}, r)
	return r.recs
}
