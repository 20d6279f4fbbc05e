package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Garbage-collection pauses read from a runtime's own metrics, when no GC
// log was handed over: the mean pause of its whole-heap (major, old
// generation, full) collections per interval. A minor collection's pause
// of a few hundred milliseconds is ordinary; a major one that stops the
// world for a second or more is a heap at its limit, the same as a GC
// log's "Pause Full" (gcpauses.go). The forms read:
//
//   - Micrometer (Spring Boot): jvm_gc_pause_seconds{action="end of major GC",
//     gc="G1 Old Generation", cause="G1 Compaction Pause"};
//   - the Prometheus JMX/simpleclient hotspot exporter:
//     jvm_gc_collection_seconds{gc="G1 Old Generation" | "PS MarkSweep" |
//     "ConcurrentMarkSweep" | "MarkSweepCompact"};
//   - OpenTelemetry's JVM runtime metrics: jvm_gc_duration_seconds{jvm_gc_action="end of major GC"};
//   - Node.js prom-client: nodejs_gc_duration_seconds{kind="major"};
//   - .NET prometheus-net / OpenTelemetry: dotnet_gc_pause_seconds or
//     process_runtime_dotnet_gc_... {generation="gen2"}.
//
// Its finding is gc_pressure with the longest mean pause; the log form, when
// both were read, says more (the live heap after the pause) and both
// support one hypothesis.

var (
	// gcPauseMetricRE names a metric of GC pause or collection time.
	gcPauseMetricRE = regexp.MustCompile(`(?i)(?:^|_)gc_(?:pause|collection|duration)|gc_pause|garbage_?collect`)
	// gcMajorLabelRE is a label value naming a whole-heap collection.
	gcMajorLabelRE = regexp.MustCompile(`(?i)\bmajor\b|old gen|\bold\b|tenured|marksweep|mark-?compact|mark ?sweep|\bfull\b|compaction|^gen ?2$|^2$`)
	// heapMetricRE is a metric of a runtime's heap in use.
	heapMetricRE = regexp.MustCompile(`(?i)jvm_memory_(?:used|committed)|jvm_memory_bytes_used|heap_?(?:used|size|inuse|alloc)|go_memstats_heap|nodejs_heap|dotnet_gc_heap|gc_heap_size|process_runtime_\w*heap`)
	// gcFillChangeRE is a change that enlarges what a process keeps on
	// its heap: a cache's size or entries, a buffer, a batch held in
	// memory.
	gcFillChangeRE = regexp.MustCompile(`(?i)cache|max[_-]?entries|maximum_?size|\bbuffer|batch[_-]?size|preload|in[- ]memory`)
)

// gcMajorSeries reports whether a series of a GC pause metric is of
// whole-heap collections, and names the collector its labels say.
func gcMajorSeries(labels map[string]string) (collector string, major bool) {
	for _, k := range []string{"action", "jvm_gc_action", "gc", "jvm_gc_name", "kind", "type", "generation", "gen", "cause"} {
		v := labels[k]
		if v == "" || !matchLine(gcMajorLabelRE, v) {
			continue
		}
		collector = labels["gc"]
		if collector == "" {
			collector = orWord(labels["jvm_gc_name"], v)
		}
		return collector, true
	}
	return "", false
}

// detectGCPauseMetrics makes a gc_pressure finding of a workload whose
// major collections paused it for a second or more on average within the
// window.
func detectGCPauseMetrics(sets []MetricSet, w Window) []Finding {
	type agg struct {
		worst     float64
		at        time.Time
		collector string
		metric    string
		ns        string
	}
	by := map[string]*agg{}
	var order []string
	for _, ms := range sets {
		if ms.Class != MetricLatency || ms.Unit != "s" || !matchLine(gcPauseMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			collector, major := gcMajorSeries(s.Labels)
			if !major {
				continue
			}
			subject := SubjectOfLabels(s.Labels)
			if subject == "" {
				continue
			}
			a := by[subject]
			for _, p := range inWindow(s.Points, w.Start, w.End) {
				if p.V < gcMinPause.Seconds() {
					continue
				}
				if a == nil {
					a = &agg{ns: s.Labels["namespace"]}
					by[subject] = a
					order = append(order, subject)
				}
				if a.at.IsZero() || p.T.Before(a.at) {
					a.at = p.T
				}
				if p.V > a.worst {
					a.worst, a.collector, a.metric = p.V, collector, ms.Name
				}
			}
		}
	}
	var out []Finding
	for _, subject := range order {
		a := by[subject]
		pause := pauseText(time.Duration(a.worst * float64(time.Second)))
		f := Finding{Kind: KindGCPressure, Subject: subject, Object: "metrics " + a.metric, Namespace: a.ns, Time: a.at,
			Severity: SevCritical, Weight: 0.85, Source: SrcMetrics,
			Summary: fmt.Sprintf("%s stops for garbage collection: its major collections paused it for %s on average (%s)", subject, pause, a.metric)}
		f.setFact("pause_max", pause)
		f.setFact("pause_source", "metric "+a.metric)
		f.setFact("collector", a.collector)
		f.setFact("metric", a.metric)
		f.Evidence = []string{fmt.Sprintf("%s of %s: whole-heap collections (%s) paused it for %s on average, first at %s", a.metric, subject, orWord(a.collector, "major GC"), pause, ts(a.at))}
		out = append(out, f)
	}
	return out
}

// gcSourceText says where a gc_pressure finding's pauses were read: "its
// GC log" or the metric.
func gcSourceText(h *Hypothesis) string {
	if s := h.fact("pause_source"); s != "" && !hasGCLog(h) {
		return "its " + strings.TrimPrefix(s, "metric ")
	}
	return "its GC log"
}

// hasGCLog reports whether a hypothesis holds pauses read from a GC log.
func hasGCLog(h *Hypothesis) bool {
	for _, f := range append(append([]*Finding{}, h.Primary...), h.Support...) {
		if f.Kind == KindGCPressure && f.Source != SrcMetrics && f.fact("pause_max") != "" {
			return true
		}
	}
	return false
}
