package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// KindGCPressure: a JVM (Elasticsearch, a Java service) whose heap is full
// spends its time in garbage collection, so its requests stall.
const KindGCPressure Kind = "gc_pressure"

// A heap at its limit: long old-generation GC pauses, GC overhead of
// seconds per interval, circuit breakers refusing requests ("Data too
// large"), full collections a collector falls back to when the heap is
// exhausted (unified JVM logging's "Pause Full (G1 Compaction Pause)",
// "To-space exhausted"; not an explicit System.gc()). Callers see slow or
// failing calls to it.
var gcPressure = &mechanism{
	kind:       KindGCPressure,
	class:      classCause,
	label:      "JVM heap pressure (long garbage-collection pauses)",
	lines:      regexp.MustCompile(`(?i)\[gc\]\[old\].*duration \[\d+(?:\.\d+)?s\]|overhead, spent \[\d+(?:\.\d+)?s\] collecting|CircuitBreakingException|\bData too large\b|Full GC \(Allocation Failure\)|\bGC overhead\b|\bPause Full \((?:G1 Compaction|Allocation Failure|Ergonomics|G1 Humongous|G1 Evacuation|GCLocker|Metadata GC Threshold)|\bTo-space exhausted\b`),
	lineWeight: 0.85,
	// A caller's slow or failing calls that name the JVM's host; the
	// JVM's own starvation warnings ("Thread starvation or clock leap
	// detected"): a stop-the-world pause stops every thread, as a starved
	// CPU would.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind == KindCPUThrottling && f.Subject == h.Subject && f.Source == SrcLogs {
			return true
		}
		// Its own CFS throttling, measured while it collects: a full
		// collection runs its GC threads on every core and spends the
		// quota, so the throttling is the pauses' doing, not a rival.
		if f.Kind == KindCPUThrottling && f.Subject == h.Subject && h.fact("pause_max") != "" {
			return true
		}
		// Its own heap in use rising to its maximum: what the collections
		// cannot free.
		if f.Kind == KindSaturation && f.Subject == h.Subject && matchLine(heapMetricRE, f.fact("metric")) {
			return true
		}
		switch infoOf(f.Kind).class {
		case classDependency, classSymptom:
		default:
			if f.Kind != KindSlowOperation {
				return false
			}
		}
		return h.Subject != "" && strings.Contains(strings.ToLower(f.fact("line")), strings.ToLower(h.Subject))
	},
	detect:  detectGCPauses,
	metrics: detectGCPauseMetrics,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(heapChangeRE, t) || strings.Contains(t, "heap") || strings.Contains(t, "fielddata") || strings.Contains(t, "mapping") || strings.Contains(t, "xmx") || strings.Contains(t, "cache")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if d := describeGCPauses(h); d != "" {
			return d
		}
		d := fmt.Sprintf("the JVM heap of %s is full: it spends its time in garbage collection (long old-generation GC pauses), so its requests stall", h.Subject)
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("heap_too_small") != "" {
			if c := h.Trigger; c != nil && matchLine(heapChangeRE, c.fact("description")+" "+c.Summary) {
				r.high("Give %s its heap back: revert the %s (%s), or raise the memory limit so that the same share sizes a heap above its live set", h.Subject, infoOf(c.Kind).label, truncate(c.fact("description"), 120))
			} else if c != nil && matchLine(gcFillChangeRE, c.fact("description")+" "+c.Summary) {
				// A cache or buffer enlarged: what it holds is the live set.
				r.high("Revert the %s that enlarged what %s keeps on its heap (%s), or size it to fit the heap (%s live of %s after a full collection)", infoOf(c.Kind).label, h.Subject, truncate(c.fact("description"), 120), h.fact("live"), h.fact("heap"))
			} else {
				r.high("Give %s a heap above its live set (%s live of %s): raise the maximum heap (-Xmx, MaxRAMPercentage, GOMEMLIMIT) and the memory limit with it", h.Subject, h.fact("live"), h.fact("heap"))
			}
			r.med("Find what %s holds on the heap (a heap dump or class histogram) in case the live set grew", h.Subject)
			r.low("Alert on GC pause time per minute and on heap used after GC above 80%% of the maximum")
			return
		}
		r.high("Relieve the heap of %s: undo what filled it (a mapping or cache change, e.g. fielddata on a text field), or restart it and raise its heap within the memory limit", h.Subject)
		r.med("Find what holds the heap of %s (heap dump, node stats: fielddata, caches, large aggregations)", h.Subject)
		r.low("Alert on JVM old-generation GC time and heap use above 85%%")
	},
}

// gcLogRE is a unified JVM logging line of the gc tag set
// ("[95.910s][info][gc] GC(58) Pause Full ...", "[info][gc,heap]").
var gcLogRE = regexp.MustCompile(`\[(?:info|debug)\s*\]\[gc[\],]`)

// levelless reports whether the level a line declares says nothing of how
// bad it is: unified JVM logging writes every collection at info, the
// longest full pause as the shortest young one.
func levelless(line string) bool { return matchLine(gcLogRE, line) }
