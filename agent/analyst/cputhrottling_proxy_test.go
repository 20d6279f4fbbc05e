package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestProxyThrottled: a mesh sidecar's throttling (Istio's istio-proxy,
// Linkerd's linkerd-proxy) is its workload's, answered with the sidecar's
// own CPU limit, not the application's; with the application throttled
// too, or a helper container that is no proxy, it is read as before.
func TestProxyThrottled(t *testing.T) {
	step := func(labels evidence.Labels, before, after float64) evidence.Series {
		var pts []evidence.Point
		for at := win.BaselineStart; !at.After(win.End); at = at.Add(time.Minute) {
			v := before
			if at.After(win.Start.Add(10 * time.Minute)) {
				v = after
			}
			pts = append(pts, evidence.Point{T: at, V: v + float64(at.Minute()%3)*0.001})
		}
		return evidence.Series{Labels: labels, Points: pts}
	}
	pod := func(proxy string) corev1.Pod {
		var p corev1.Pod
		if err := json.Unmarshal([]byte(`{"metadata":{"name":"catalog-7c8d9f6b5c-4hx2m","namespace":"shop","ownerReferences":[{"kind":"ReplicaSet","name":"catalog-7c8d9f6b5c"}]},
  "spec":{"containers":[{"name":"catalog","resources":{"limits":{"cpu":"2"}}},{"name":"`+proxy+`","resources":{"limits":{"cpu":"200m"}}}]}}`), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lbl := func(c string) evidence.Labels {
		return evidence.Labels{"namespace": "shop", "pod": "catalog-7c8d9f6b5c-4hx2m", "container": c}
	}
	cases := []struct {
		name, proxy string
		appAfter    float64
		subject     string
		want        []string
	}{
		{"istio-proxy throttled", "istio-proxy", 0.01, "catalog", []string{"the istio-proxy sidecar of catalog", "sidecar's cpu limit of 200m", "application container has a cpu limit of 2"}},
		{"linkerd-proxy throttled", "linkerd-proxy", 0.01, "catalog", []string{"the linkerd-proxy sidecar of catalog", "200m"}},
		{"the application throttled too", "istio-proxy", 0.7, "catalog", []string{"catalog is CPU throttled"}},
		{"a helper that is no proxy", "config-reloader", 0.01, "config-reloader", []string{"config-reloader is CPU throttled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sets := []MetricSet{{Name: "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total", Class: MetricCPUThrottle, Unit: "%",
				Series: []evidence.Series{step(lbl("catalog"), 0.01, c.appAfter), step(lbl(c.proxy), 0.01, 0.8)}}}
			var fs []Finding
			for _, f := range DetectMetrics(sets, win) {
				if f.Kind == KindCPUThrottling && f.Subject == c.subject {
					fs = append(fs, f)
				}
			}
			if len(fs) != 1 {
				t.Fatalf("throttling findings of %s: %+v", c.subject, fs)
			}
			ev := &Gathered{Metrics: sets, K8s: K8sEvidence{Pods: []corev1.Pod{pod(c.proxy)}}, Window: win}
			detectProxyThrottled(ev, fs)
			EnrichFromPods(fs, ev.K8s.Pods)
			d := cpuThrottling.describe(&Hypothesis{Kind: KindCPUThrottling, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}
