package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An HTTP readiness probe answered with a 4xx while the pods stay not
// ready: the path the probe asks is not served. The application's own
// log confirms it (Go slog naming its readiness path and answering the
// kube-probe 404, nginx's access log, Spring's NoResourceFoundException)
// or the kubelet's event stands alone; an HTTP 401 is a refusal. A 5xx, a
// refused connection, a liveness probe and pods ready again are none.
func TestReadinessPathMissing(t *testing.T) {
	now := time.Date(2026, 9, 3, 14, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	mkPod := func(ready bool) corev1.Pod {
		return pod("catalog-api-5f6d7c8b9-q4wz2", func(p *corev1.Pod) {
			p.Namespace = "store"
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "catalog-api-5f6d7c8b9"}}
			p.Spec.Containers = []corev1.Container{{Name: "api", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}}}}
			st := corev1.ConditionFalse
			if ready {
				st = corev1.ConditionTrue
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		})
	}
	event := func(msg string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "store", Name: "catalog-api-5f6d7c8b9-q4wz2"}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
			Message: msg, FirstTimestamp: mt(now.Add(-25 * time.Minute)), LastTimestamp: mt(now.Add(-time.Minute)), Count: 290}
	}
	notFound := "Readiness probe failed: HTTP probe failed with statuscode: 404"
	for _, tc := range []struct {
		name  string
		msg   string
		ready bool
		logs  []string
		want  []string // nil: no finding
	}{
		{"go slog naming its readiness path", notFound, false, []string{
			`{"time":"2026-09-03T13:55:02.114Z","level":"INFO","msg":"http server listening","addr":":8080","liveness":"/livez","readiness":"/readyz"}`,
			`{"time":"2026-09-03T14:19:57.301Z","level":"INFO","msg":"http request","method":"GET","path":"/ready","status":404,"user_agent":"kube-probe/1.30"}`},
			[]string{"catalog-api pods never become ready", "GET /ready answers HTTP 404", "serves its readiness check on /readyz", "(0/1 ready)"}},
		{"nginx access log", notFound, false, []string{
			`10.12.3.1 - - [03/Sep/2026:14:19:55 +0000] "GET /ready HTTP/1.1" 404 153 "-" "kube-probe/1.29"`},
			[]string{"does not serve the path the readiness probe checks", "kube-probe/1.29"}},
		{"spring boot 3.2 no static resource", notFound, false, []string{
			`2026-09-03T14:19:56.102Z  WARN 1 --- [catalog-api] [nio-8080-exec-3] .w.s.m.s.DefaultHandlerExceptionResolver : Resolved [org.springframework.web.servlet.resource.NoResourceFoundException: No static resource ready.]`},
			[]string{"GET /ready answers HTTP 404", "No static resource ready."}},
		{"the kubelet's event alone, its URL quoted", `Readiness probe failed: HTTP probe failed with statuscode: 404`, false, nil,
			[]string{"answers HTTP 404", "Readiness probe failed"}},
		{"a refusal", "Readiness probe failed: HTTP probe failed with statuscode: 401", false, nil,
			[]string{"answers HTTP 401", "refuses the probe's unauthenticated request"}},
		{"the application reports itself unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", false, nil, nil},
		{"nothing listens yet", `Readiness probe failed: Get "http://10.12.3.44:8080/ready": dial tcp 10.12.3.44:8080: connect: connection refused`, false, nil, nil},
		{"a liveness probe", "Liveness probe failed: HTTP probe failed with statuscode: 404", false, nil, nil},
		{"pods ready again", notFound, true, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mkPod(tc.ready)
			g := &Gathered{Window: w, K8s: K8sEvidence{Pods: []corev1.Pod{p}, PreviousLogs: map[string][]evidence.LogLine{}}}
			for _, l := range tc.logs {
				g.K8s.PreviousLogs["store/"+p.Name+"/api"] = append(g.K8s.PreviousLogs["store/"+p.Name+"/api"], evidence.LogLine{Text: l})
			}
			found := DetectEvents([]corev1.Event{event(tc.msg)}, g.K8s.Pods, w)
			fs := detectReadinessPathMissing(g, found)
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			f := onlyFinding(t, fs, "catalog-api")
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindReadinessPathMissing, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "readiness probe of catalog-api") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
