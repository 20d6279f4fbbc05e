package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestMemoryClaim checks an alert's claim that a container is near its
// memory limit against its working set: refuted when the usage is page
// cache, confirmed when the working set itself is at the limit, and left
// alone when nothing can tell.
func TestMemoryClaim(t *testing.T) {
	t0 := time.Date(2026, 12, 17, 11, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	series := func(name string, v float64) MetricSet {
		var pts []evidence.Point
		for i := -60; i <= 60; i += 5 {
			pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return MetricSet{Name: name, Class: MetricSaturation, Unit: "bytes", Origin: SrcMetrics, Series: []evidence.Series{{
			Labels: evidence.Labels{"namespace": "payments", "pod": "payments-gateway-5f6d8b9c47-8rjzt", "container": "gateway"}, Points: pts}}}
	}
	const gi = 1 << 30
	sc := Scope{Message: "ContainerMemoryNearLimit fired for payments-gateway: 'Container gateway in pod payments/payments-gateway-5f6d8b9c47-8rjzt is using 94% of its memory limit (1Gi)'. Are we about to get OOM killed?",
		Service: "payments-gateway", Namespace: "payments", Window: w}
	cases := []struct {
		name    string
		metrics []MetricSet
		want    string // "" for no finding
	}{
		{"page cache", []MetricSet{series("container_memory_usage_bytes", 0.95*gi), series("container_memory_working_set_bytes", 0.36*gi), series("container_memory_cache", 0.58*gi)}, "false positive"},
		{"working set at the limit", []MetricSet{series("container_memory_usage_bytes", 0.97*gi), series("container_memory_working_set_bytes", 0.95*gi)}, "is real"},
		{"no working set to check", []MetricSet{series("container_memory_usage_bytes", 0.95*gi)}, ""},
	}
	for _, c := range cases {
		fs := detectMemoryClaim(&Gathered{Metrics: c.metrics, Scope: sc, Window: w}, nil)
		if (len(fs) == 1) != (c.want != "") {
			t.Errorf("%s: findings %+v", c.name, fs)
			continue
		}
		if c.want == "" {
			continue
		}
		h := &Hypothesis{Kind: KindMemoryClaim, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		if d := describe(h, sc); !strings.Contains(d, c.want) || !strings.Contains(d, "working set") {
			t.Errorf("%s: description %q, want %q", c.name, d, c.want)
		}
	}
	if fs := detectMemoryClaim(&Gathered{Metrics: cases[0].metrics, Scope: Scope{Message: "payments-gateway is slow", Service: "payments-gateway", Window: w}, Window: w}, nil); len(fs) != 0 {
		t.Errorf("no memory alert, findings %+v", fs)
	}
}

// TestMemoryClaimRecovered: a working set that came near the limit and
// went back down, with no OOM kill and no restart, answers "is it still a
// problem?" with no: the alert was true and is over. A restart in the
// window, or a working set still high, is no recovery.
func TestMemoryClaimRecovered(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 8, 10, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-2 * time.Hour), Start: t0.Add(-time.Hour), End: t0.Add(time.Hour)}
	const gi = float64(1 << 30)
	peakFrom, peakTo := t0.Add(-14*time.Minute), t0.Add(8*time.Minute)
	curve := func(after float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			switch {
			case at.Before(peakFrom):
				return 2.1 * gi
			case !at.After(peakTo):
				return 3.8 * gi
			}
			return after
		}
	}
	set := func(name string, labels evidence.Labels, f func(time.Time) float64) MetricSet {
		var pts []evidence.Point
		for at := w.BaselineStart; !at.After(w.End); at = at.Add(time.Minute) {
			pts = append(pts, evidence.Point{T: at, V: f(at)})
		}
		return MetricSet{Name: name, Class: MetricSaturation, Unit: "bytes", Origin: SrcMetrics, Series: []evidence.Series{{Labels: labels, Points: pts}}}
	}
	pod := evidence.Labels{"namespace": "ml", "pod": "ranker-6d9f7c5b4-x2x9p", "container": "app"}
	restarts := func(n float64) MetricSet {
		return set("kube_pod_container_status_restarts_total", pod, func(at time.Time) float64 {
			if at.After(peakTo) {
				return n
			}
			return 0
		})
	}
	changes := []evidence.Change{{Timestamp: peakFrom.Add(-5 * time.Minute), Service: "ranker", Kind: "config", Description: "daily embedding index reload"}}
	earlier := []evidence.Change{{Timestamp: peakFrom.Add(-5*time.Minute - 24*time.Hour), Service: "ranker", Kind: "config", Description: "daily embedding index reload"}}
	cases := []struct {
		name    string
		message string
		metrics []MetricSet
		want    []string
		not     string
	}{
		{"cAdvisor working set back down, no restart",
			"KubeContainerMemoryNearLimit fired for ranker at 07:58 (memory limit 4Gi). Is it still a problem?",
			[]MetricSet{set("container_memory_working_set_bytes", pod, curve(2.2*gi)), restarts(0)},
			[]string{"has recovered", "no longer a problem", "95%", "daily embedding index reload", "recurs"}, ""},
		{"restarted after the peak: not a recovery",
			"ContainerMemoryUsageHigh: ranker is using 95% of its memory limit (4Gi). still an issue?",
			[]MetricSet{set("container_memory_working_set_bytes", pod, curve(2.2*gi)), restarts(1)},
			nil, "recovered"},
		{"still at the limit: real",
			"KubeContainerMemoryNearLimit for ranker (memory limit 4Gi). Is it still a problem?",
			[]MetricSet{set("container_memory_working_set_bytes", pod, curve(3.8*gi))},
			[]string{"is real"}, "recovered"},
	}
	for _, c := range cases {
		sc := Scope{Message: c.message, Service: "ranker", Namespace: "ml", Window: w}
		fs := detectMemoryClaim(&Gathered{Metrics: c.metrics, Scope: sc, Window: w, Changes: changes, Earlier: earlier}, nil)
		if len(fs) != 1 {
			t.Errorf("%s: findings %+v", c.name, fs)
			continue
		}
		h := &Hypothesis{Kind: KindMemoryClaim, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		d := describe(h, sc)
		for _, x := range c.want {
			if !strings.Contains(d, x) {
				t.Errorf("%s: description lacks %q: %s", c.name, x, d)
			}
		}
		if c.not != "" && strings.Contains(d, c.not) {
			t.Errorf("%s: description says %q: %s", c.name, c.not, d)
		}
	}
}
