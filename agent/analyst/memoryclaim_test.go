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
