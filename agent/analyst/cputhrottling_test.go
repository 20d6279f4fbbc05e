package analyst

import (
	"encoding/json"
	"strings"
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

// TestThrottlingTriggerOnlyCPUChange checks that a throttling alert with a
// change just before it blames the CPU limit: a change is its trigger only
// when it changed the CPU (a limit cut); a ConfigMap or log-level change
// near the onset is a coincidence, neither the trigger nor the root.
func TestThrottlingTriggerOnlyCPUChange(t *testing.T) {
	t0 := time.Date(2026, 10, 14, 15, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	var pts []evidence.Point
	for i := -60; i <= 60; i += 5 {
		v := 0.01
		if i >= 5 {
			v = 0.86
		}
		pts = append(pts, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
	}
	metrics := []MetricSet{{Class: MetricCPUThrottle, Unit: "%", Series: []evidence.Series{{
		Labels: evidence.Labels{"namespace": "docs", "pod": "pdf-renderer-7d4c8b9f65-h2wsl", "container": "renderer"}, Points: pts}}}}
	sc := Scope{Message: "Alert CPUThrottlingHigh firing: 83.4% throttling of CPU in namespace docs for container renderer in pod pdf-renderer-7d4c8b9f65-h2wsl. PDF exports also feel slow.",
		Alert: "CPUThrottlingHigh", Service: "pdf-renderer", Namespace: "docs", Window: w}
	latency := Finding{Kind: KindLatency, Subject: "pdf-renderer", Object: "metrics http_request_duration_seconds", Namespace: "docs", Time: t0.Add(6 * time.Minute),
		Severity: SevWarning, Weight: 0.8, Source: SrcMetrics, Summary: "latency (http_request_duration_seconds) of pdf-renderer rose from 0.8 s to 4.1 s",
		Facts: map[string]string{"metric": "http_request_duration_seconds", "peak": "4.1 s", "baseline": "0.8 s"}}
	cases := []struct {
		name, changes string
		trigger       string // a word of the trigger's description, "" for none
	}{
		{"log-level ConfigMap change just before", `[
  {"timestamp": "2026-10-14T14:58:00Z", "service": "pdf-renderer", "kind": "config", "description": "pdf-renderer ConfigMap: LOG_LEVEL info -> debug, PDF_FONT_CACHE_DIR /tmp/fonts", "revision": "docs-config#418", "author": "jlee"}
]`, ""},
		{"CPU limit cut, then a log-level change", `[
  {"timestamp": "2026-10-14T14:52:00Z", "service": "pdf-renderer", "kind": "config", "description": "resource right-sizing (cost review Q4): pdf-renderer requests/limits cpu 1 -> 250m", "revision": "infra-live#2291", "author": "finops-bot"},
  {"timestamp": "2026-10-14T14:58:00Z", "service": "pdf-renderer", "kind": "config", "description": "pdf-renderer ConfigMap: LOG_LEVEL info -> debug", "revision": "docs-config#418", "author": "jlee"}
]`, "250m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var changes []evidence.Change
			if err := json.Unmarshal([]byte(c.changes), &changes); err != nil {
				t.Fatal(err)
			}
			fs := detectThrottlingClaim(&Gathered{Metrics: metrics, Changes: changes, Scope: sc, Window: w}, nil)
			fs = append(fs, latency)
			fs = append(fs, DetectChanges(changes, w)...)
			a := Reason(fs, sc)
			if a.Healthy || a.Hypotheses[0].Kind != KindCPUThrottling {
				t.Fatalf("root %v, want cpu_throttling", a.Hypotheses)
			}
			h := a.Hypotheses[0]
			r := Build(a, sc, nil, "")
			switch {
			case c.trigger == "" && h.Trigger != nil:
				t.Errorf("trigger %q, want none", h.Trigger.Summary)
			case c.trigger != "" && (h.Trigger == nil || !strings.Contains(h.Trigger.fact("description"), c.trigger)):
				t.Errorf("trigger %v, want the change with %q", h.Trigger, c.trigger)
			}
			if c.trigger == "" && (strings.Contains(r.RootCause.Description, "LOG_LEVEL") || strings.Contains(r.Recommendations[0].Action, "LOG_LEVEL")) {
				t.Errorf("the coincident change is blamed: %q / %q", r.RootCause.Description, r.Recommendations[0].Action)
			}
		})
	}
}
