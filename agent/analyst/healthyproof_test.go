package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestHealthyProof: a healthy verdict is as sure as the direct evidence
// of the subject's own health: its pods Ready and not restarted in the
// window, its own logs without an error, its own metrics; a pod not
// Ready, a restart in the window, an error line or a finding of the
// subject voids that kind, and the confidence stays under the bar.
func TestHealthyProof(t *testing.T) {
	pod := func(name string, ready bool, restartedAt time.Time) corev1.Pod {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: ready}}}}
		if !restartedAt.IsZero() {
			p.Status.ContainerStatuses[0].RestartCount = 2
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, FinishedAt: metav1.NewTime(restartedAt)}
		}
		return p
	}
	var info, withErr []string
	for i := 0; i < 30; i++ {
		info = append(info, `{"ts":"2026-03-14T10:00:00Z","level":"info","msg":"request completed","status":200,"path":"/v1/cart"}`)
	}
	withErr = append(append(withErr, info...), `2026-03-14T10:05:00Z ERROR request failed: dial tcp 10.0.3.4:5432: connect: connection refused`)
	series := []evidence.Series{{Labels: evidence.Labels{"service": "cart-api", "code": "200"}}, {Labels: evidence.Labels{"service": "cart-api", "code": "500"}}}
	old := win.BaselineStart.Add(-time.Hour)
	cases := []struct {
		name  string
		ev    Gathered
		found []Finding
		kinds int
		conf  float64
	}{
		{"pods Ready, clean logs, metrics read", Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod("cart-api-7d9f8b6c5-x2x9k", true, time.Time{}), pod("cart-api-7d9f8b6c5-q8wzt", true, old)}},
			Logs: []LogSet{minedSet("cart-api", false, 0, info...)}, Metrics: []MetricSet{{Name: "http_requests_total", Series: series}}, Window: win}, nil, 3, 65},
		{"a pod not Ready", Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod("cart-api-7d9f8b6c5-x2x9k", true, time.Time{}), pod("cart-api-7d9f8b6c5-q8wzt", false, time.Time{})}},
			Logs: []LogSet{minedSet("cart-api", false, 0, info...)}, Window: win}, nil, 1, 30},
		{"a restart in the window", Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod("cart-api-7d9f8b6c5-x2x9k", true, win.Start.Add(5*time.Minute))}},
			Metrics: []MetricSet{{Name: "http_requests_total", Series: series}}, Window: win}, nil, 1, 30},
		{"an error line in its logs", Gathered{Logs: []LogSet{minedSet("cart-api", false, 0, withErr...)}, Window: win}, nil, 0, 12},
		{"a finding of its own voids its metrics", Gathered{Metrics: []MetricSet{{Name: "http_requests_total", Series: series}}, Window: win},
			[]Finding{{Kind: KindErrorRate, Subject: "cart-api", Source: SrcMetrics, Severity: SevWarning}}, 0, 12},
		{"a few log lines say little", Gathered{Logs: []LogSet{minedSet("cart-api", false, 0, info[:4]...)}, Window: win}, nil, 0, 12},
	}
	for _, c := range cases {
		p := healthyProofOf(&c.ev, "cart-api", c.found)
		if p.kinds() != c.kinds {
			t.Errorf("%s: %d kinds (%+v), want %d", c.name, p.kinds(), p, c.kinds)
		}
		if got := healthyConfidence(12, []healthyProof{p}); got != c.conf || got > 70 {
			t.Errorf("%s: confidence %v, want %v", c.name, got, c.conf)
		}
		if c.kinds == 3 && !strings.Contains(strings.Join(p.evidence, "; "), "2 pods Ready") {
			t.Errorf("%s: evidence %q", c.name, p.evidence)
		}
	}
}
