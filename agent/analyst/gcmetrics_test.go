package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDetectGCPauseMetrics reads the pauses of whole-heap collections from
// the metrics runtimes export (Micrometer, the hotspot exporter,
// OpenTelemetry, prom-client, prometheus-net), and leaves minor
// collections and short major ones alone.
func TestDetectGCPauseMetrics(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(15 * time.Minute)
	stalls := func(pause float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(onset) {
				return 0.08
			}
			return pause
		}
	}
	cases := []struct {
		name    string
		metric  string
		labels  evidence.Labels
		pause   float64
		want    bool
		subject string
		says    string
	}{
		{name: "Micrometer major GC", metric: "jvm_gc_pause_seconds (mean)", pause: 4.1, want: true, subject: "pricing-engine", says: "4.10 s",
			labels: evidence.Labels{"application": "pricing-engine", "namespace": "pricing", "action": "end of major GC", "gc": "G1 Old Generation", "cause": "G1 Compaction Pause"}},
		{name: "Micrometer minor GC is ordinary", metric: "jvm_gc_pause_seconds (mean)", pause: 1.4,
			labels: evidence.Labels{"application": "pricing-engine", "action": "end of minor GC", "gc": "G1 Young Generation", "cause": "G1 Evacuation Pause"}},
		{name: "hotspot exporter PS MarkSweep", metric: "jvm_gc_collection_seconds (mean)", pause: 2.5, want: true, subject: "billing", says: "PS MarkSweep",
			labels: evidence.Labels{"job": "billing", "gc": "PS MarkSweep"}},
		{name: "OpenTelemetry JVM runtime metrics", metric: "jvm_gc_duration_seconds (mean)", pause: 1.8, want: true, subject: "ledger",
			labels: evidence.Labels{"service": "ledger", "jvm_gc_action": "end of major GC", "jvm_gc_name": "G1 Old Generation"}},
		{name: "prom-client major GC of Node", metric: "nodejs_gc_duration_seconds (mean)", pause: 1.2, want: true, subject: "web-bff",
			labels: evidence.Labels{"app": "web-bff", "kind": "major"}},
		{name: ".NET gen2 collections", metric: "dotnet_gc_pause_seconds (mean)", pause: 1.6, want: true, subject: "orders-svc",
			labels: evidence.Labels{"app": "orders-svc", "generation": "gen2"}},
		{name: "a major pause under a second is no stop", metric: "jvm_gc_pause_seconds (mean)", pause: 0.4,
			labels: evidence.Labels{"application": "pricing-engine", "action": "end of major GC", "gc": "G1 Old Generation"}},
		{name: "a request duration is no GC", metric: "http_server_requests_seconds (mean)", pause: 3,
			labels: evidence.Labels{"application": "pricing-engine", "outcome": "SUCCESS", "kind": "major"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := MetricSet{Name: c.metric, Class: MetricLatency, Unit: "s", Origin: SrcMetrics,
				Series: []evidence.Series{wseries(w, c.labels, stalls(c.pause))}}
			fs := detectGCPauseMetrics([]MetricSet{set}, w)
			if !c.want {
				if len(fs) != 0 {
					t.Fatalf("found %v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("found %d findings, want 1", len(fs))
			}
			f := fs[0]
			if f.Kind != KindGCPressure || f.Subject != c.subject || !f.Time.Equal(onset) {
				t.Errorf("finding %s of %q at %s, want gc_pressure of %q at %s", f.Kind, f.Subject, ts(f.Time), c.subject, ts(onset))
			}
			if all := f.Summary + " " + strings.Join(f.Evidence, " "); !strings.Contains(all, c.says) {
				t.Errorf("finding does not say %q: %s", c.says, all)
			}
			if f.fact("pause_max") == "" || f.fact("pause_source") == "" {
				t.Errorf("facts %v lack the pause and its source", f.Facts)
			}
		})
	}
}

// TestGCPressureTakesItsThrottling makes a workload's own CFS throttling
// and heap in use part of its GC hypothesis, and leaves another's alone.
func TestGCPressureTakesItsThrottling(t *testing.T) {
	h := &Hypothesis{Kind: KindGCPressure, Subject: "pricing-engine"}
	gc := &Finding{Kind: KindGCPressure, Subject: "pricing-engine", Source: SrcMetrics}
	gc.setFact("pause_max", "3.90 s")
	h.Primary = []*Finding{gc}
	throttled := &Finding{Kind: KindCPUThrottling, Subject: "pricing-engine", Source: SrcMetrics}
	other := &Finding{Kind: KindCPUThrottling, Subject: "quote-api", Source: SrcMetrics}
	heap := &Finding{Kind: KindSaturation, Subject: "pricing-engine", Source: SrcMetrics}
	heap.setFact("metric", "jvm_memory_used_bytes")
	cpu := &Finding{Kind: KindSaturation, Subject: "pricing-engine", Source: SrcMetrics}
	cpu.setFact("metric", "container_cpu_usage_seconds_total")
	for _, c := range []struct {
		f    *Finding
		want bool
	}{{throttled, true}, {other, false}, {heap, true}, {cpu, false}} {
		if got := gcPressure.related(h, c.f); got != c.want {
			t.Errorf("related(%s of %s, %s) = %v, want %v", c.f.Kind, c.f.Subject, c.f.fact("metric"), got, c.want)
		}
	}
}

// TestThrottledUnexplained holds back CPU throttling blamed without its
// limit, a change to it, an alert or a load surge.
func TestThrottledUnexplained(t *testing.T) {
	bare := func() *Hypothesis {
		f := &Finding{Kind: KindCPUThrottling, Subject: "pricing-engine", Source: SrcMetrics}
		f.setFact("peak", "29%")
		return &Hypothesis{Kind: KindCPUThrottling, Subject: "pricing-engine", Primary: []*Finding{f}}
	}
	withLimit := bare()
	withLimit.Primary[0].setFact("cpu_limit", "500m")
	withCut := bare()
	withCut.Trigger = &Finding{Kind: KindResourceChange, Subject: "pricing-engine"}
	withSurge := bare()
	withSurge.Support = []*Finding{{Kind: KindLoadSurge, Subject: "pricing-engine"}}
	other := bare()
	other.Kind = KindGCPressure
	for _, c := range []struct {
		name string
		h    *Hypothesis
		want bool
	}{{"nothing of the limit", bare(), true}, {"its cpu limit read", withLimit, false}, {"a cut of the limit", withCut, false},
		{"a surge fills it", withSurge, false}, {"not throttling", other, false}} {
		if got := throttledUnexplained(c.h); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
