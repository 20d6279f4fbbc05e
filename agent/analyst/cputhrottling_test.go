package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestCPUThrottlingLines(t *testing.T) {
	testLines(t, cpuThrottling, []lineCase{
		{"WARN com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta=1m2s).", KindCPUThrottling},
		{"Event loop blocked for more than 500ms", KindCPUThrottling},
		{"INFO event loop started", ""},
	})
}

// TestThrottlingClaim checks that an alert's claim of CPU throttling is
// confirmed by the throttled share of the workload's CFS periods, refuted
// when the share stays low, and kept weaker when no metric can tell.
func TestThrottlingClaim(t *testing.T) {
	t0 := time.Date(2026, 10, 14, 15, 0, 0, 0, time.UTC)
	series := func(v float64) []MetricSet {
		var pts []evidence.Point
		for i := -60; i <= 60; i += 5 {
			x := 0.01
			if i >= -8 {
				x = v
			}
			pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: x})
		}
		return []MetricSet{{Class: MetricCPUThrottle, Unit: "%", Series: []evidence.Series{{
			Labels: evidence.Labels{"namespace": "docs", "pod": "pdf-renderer-7d4c8b9f65-h2wsl", "container": "renderer"}, Points: pts}}}}
	}
	sc := Scope{Message: "Alert CPUThrottlingHigh firing: 83.4% throttling of CPU in namespace docs for container renderer in pod pdf-renderer-7d4c8b9f65-h2wsl.",
		Alert: "CPUThrottlingHigh", Window: Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}}
	cases := []struct {
		name    string
		metrics []MetricSet
		want    bool
		weight  float64
	}{
		{"confirmed by the metrics", series(0.86), true, 0.95},
		{"refuted by the metrics", series(0.04), false, 0},
		{"no metric to tell", nil, true, 0.7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectThrottlingClaim(&Gathered{Metrics: c.metrics, Scope: sc, Window: sc.Window}, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if c.want && (fs[0].Subject != "pdf-renderer" || fs[0].Weight != c.weight) {
				t.Errorf("finding on %s weight %.2f, want pdf-renderer %.2f", fs[0].Subject, fs[0].Weight, c.weight)
			}
		})
	}
	if fs := detectThrottlingClaim(&Gathered{Metrics: series(0.9), Scope: Scope{Message: "checkout is slow", Window: sc.Window}, Window: sc.Window}, nil); len(fs) != 0 {
		t.Errorf("no alert claim, findings %+v", fs)
	}
}
