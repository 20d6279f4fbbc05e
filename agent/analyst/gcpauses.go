package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Garbage-collection pauses read from a runtime's own GC log, as evidence
// of gc_pressure with its numbers: how long the world stopped, how much of
// the heap was still live after the collection, and the heap's maximum.
// A heap whose live set fills it after a full collection is too small for
// what it holds; it refills within minutes and stops again, so requests
// stall every few minutes without an error. The formats read:
//
//   - JVM unified logging (JDK 9+, G1, Parallel, Serial):
//     "[gc] GC(2435) Pause Full (G1 Compaction Pause) 1218M->1124M(1229M) 3969.680ms";
//     ZGC/Shenandoah allocation stalls: "Allocation Stall (exec-1) 1234.567ms";
//     the heap's maximum from "[gc,init] Heap Max Capacity: 1229M" and the
//     memory it was sized from, "[gc,init] Memory: 3072M".
//   - JDK 8 -XX:+PrintGCDetails: "[Full GC (Allocation Failure) ... 2015M->1998M(2048M), 3.4567890 secs]".
//   - Go GODEBUG=gctrace=1: "gc 812 @3600.1s 38%: 0.08+1900+0.1 ms clock, ... 3890->3870->3850 MB, 3900 MB goal, ..."
//     (the share of CPU spent in GC and the live heap against the goal).
//   - Node.js --trace-gc: "Mark-Compact 1980.5 (2050.3) -> 1975.2 (2051.1) MB, 2345.6 / 0.0 ms".
//   - .NET dotnet-counters: "% Time in GC since last GC (%)   62".

// gcPause is what one GC log line says.
type gcPause struct {
	pause     time.Duration
	full      bool    // a full (compacting, whole-heap) collection
	after     float64 // heap after the collection, MB (0: not said)
	capacity  float64 // heap capacity or goal, MB
	gcShare   float64 // share of CPU time in GC, percent (Go, .NET)
	collector string
}

var (
	jvmPauseRE    = regexp.MustCompile(`\bPause (Full|Young|Remark|Cleanup|Mark Start|Mark End)((?:\s*\([^)]*\))*)\s+(\d+(?:\.\d+)?)([MGK])->(\d+(?:\.\d+)?)([MGK])\((\d+(?:\.\d+)?)([MGK])\)\s+(\d+(?:\.\d+)?)ms`)
	jvmStallRE    = regexp.MustCompile(`\bAllocation Stall \([^)]*\) (\d+(?:\.\d+)?)ms`)
	jdk8FullRE    = regexp.MustCompile(`\[Full GC \(([^)]*)\).*?(\d+)([KMG])->(\d+)([KMG])\((\d+)([KMG])\),.*?(\d+(?:\.\d+)?) secs\]`)
	goGCTraceRE   = regexp.MustCompile(`\bgc \d+ @\d+(?:\.\d+)?s (\d+)%: (\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?)\+(\d+(?:\.\d+)?) ms clock.*?(\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)
	nodeGCRE      = regexp.MustCompile(`\bMark-(?:Compact|sweep) (\d+(?:\.\d+)?) \((\d+(?:\.\d+)?)\) -> (\d+(?:\.\d+)?) \((\d+(?:\.\d+)?)\) MB, (\d+(?:\.\d+)?) / \d+(?:\.\d+)? ms`)
	dotnetGCRE    = regexp.MustCompile(`% Time in GC since last GC \(%\)\s+(\d+(?:\.\d+)?)`)
	jvmHeapMaxRE  = regexp.MustCompile(`\[gc,init\s*\] Heap Max Capacity: (\d+(?:\.\d+)?)([MGK])`)
	jvmMemoryRE   = regexp.MustCompile(`\[gc,init\s*\] Memory: (\d+(?:\.\d+)?)([MGK])`)
	heapChangeRE  = regexp.MustCompile(`(?i)MaxRAMPercentage|InitialRAMPercentage|MaxRAMFraction|-Xmx|-Xms|\bheap\b|GOMEMLIMIT|\bGOGC\b|max[-_]old[-_]space[-_]size|GCHeapHardLimit|GCHeapLimitPercent|memory limit|limits?\.memory|JAVA_(?:TOOL_)?OPTIONS|JAVA_OPTS`)
	gcLineHintRE  = regexp.MustCompile(`(?i)\bPause (?:Full|Young)|Allocation Stall|Full GC|\bgc \d+ @|Mark-(?:Compact|sweep)|Time in GC`)
	gcMinPause    = time.Second
	gcHighCPUPct  = 25.0
	gcLiveFullPct = 80.0
)

// mb converts a size with a K, M or G unit to megabytes.
func mb(v string, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	switch unit {
	case "K":
		return f / 1024
	case "G":
		return f * 1024
	}
	return f
}

// parseGCPause reads one GC log line (ok false when it is none).
func parseGCPause(line string) (gcPause, bool) {
	if m := findSubmatch(jvmPauseRE, line); m != nil {
		ms, _ := strconv.ParseFloat(m[9], 64)
		return gcPause{pause: time.Duration(ms * float64(time.Millisecond)), full: m[1] == "Full", after: mb(m[5], m[6]), capacity: mb(m[7], m[8]), collector: lastParen(m[2])}, true
	}
	if m := findSubmatch(jvmStallRE, line); m != nil {
		ms, _ := strconv.ParseFloat(m[1], 64)
		return gcPause{pause: time.Duration(ms * float64(time.Millisecond)), full: true, collector: "allocation stall"}, true
	}
	if m := findSubmatch(jdk8FullRE, line); m != nil {
		s, _ := strconv.ParseFloat(m[8], 64)
		return gcPause{pause: time.Duration(s * float64(time.Second)), full: true, after: mb(m[4], m[5]), capacity: mb(m[6], m[7]), collector: m[1]}, true
	}
	if m := findSubmatch(goGCTraceRE, line); m != nil {
		share, _ := strconv.ParseFloat(m[1], 64)
		a, _ := strconv.ParseFloat(m[2], 64)
		c, _ := strconv.ParseFloat(m[4], 64)
		live, _ := strconv.ParseFloat(m[7], 64)
		goal, _ := strconv.ParseFloat(m[8], 64)
		return gcPause{pause: time.Duration((a + c) * float64(time.Millisecond)), gcShare: share, after: live, capacity: goal, collector: "Go GC"}, true
	}
	if m := findSubmatch(nodeGCRE, line); m != nil {
		after, _ := strconv.ParseFloat(m[3], 64)
		capMB, _ := strconv.ParseFloat(m[4], 64)
		ms, _ := strconv.ParseFloat(m[5], 64)
		return gcPause{pause: time.Duration(ms * float64(time.Millisecond)), full: true, after: after, capacity: capMB, collector: "V8 Mark-Compact"}, true
	}
	if m := findSubmatch(dotnetGCRE, line); m != nil {
		share, _ := strconv.ParseFloat(m[1], 64)
		return gcPause{gcShare: share, collector: ".NET GC"}, true
	}
	return gcPause{}, false
}

// severe reports whether a pause is of a heap at its limit: a stop of a
// second or more, or most of the CPU going to collection.
func (p gcPause) severe() bool {
	return p.pause >= gcMinPause || p.gcShare >= gcHighCPUPct
}

// detectGCPauses reads the GC logs of each workload: the longest pause in
// the window, how many severe ones, and the live share of the heap after
// them. A finding of gc_pressure carries these numbers.
func detectGCPauses(ev *Gathered, _ []Finding) []Finding {
	type agg struct {
		set                 *LogSet
		n                   int
		worst               gcPause
		worstLine           string
		first               time.Time
		liveMax, capacity   float64
		heapMax, memory     float64
		heapMaxLine, shares string
		// severeSrc: the sources (pods) whose lines held the severe
		// pauses; mixed: a severe template also seen in other sources;
		// gcSrc: every source that logged a GC line at all.
		severeSrc, gcSrc []string
		mixed            bool
	}
	by := map[string]*agg{}
	var order []string
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Subject == "" {
			continue
		}
		a := by[set.Subject]
		if a == nil {
			a = &agg{set: set}
		}
		look := func(line string, at time.Time, count int, srcs []string) bool {
			if m := findSubmatch(jvmHeapMaxRE, line); m != nil {
				a.heapMax = mb(m[1], m[2])
			}
			if m := findSubmatch(jvmMemoryRE, line); m != nil {
				a.memory = mb(m[1], m[2])
			}
			if !matchLine(gcLineHintRE, line) {
				return false
			}
			p, ok := parseGCPause(line)
			if !ok {
				return false
			}
			for _, s := range srcs {
				a.gcSrc = appendNew(a.gcSrc, s)
			}
			if !p.severe() {
				return false
			}
			switch {
			case len(srcs) == 1:
				a.severeSrc = appendNew(a.severeSrc, srcs[0])
			default:
				a.mixed = true
			}
			a.n += count
			if at.Before(a.first) || a.first.IsZero() {
				a.first = at
			}
			if p.pause > a.worst.pause || p.gcShare > a.worst.gcShare && a.worst.pause == 0 {
				a.worst, a.worstLine = p, line
			}
			if p.capacity > 0 && p.after/p.capacity > a.liveMax/max(a.capacity, 1) {
				a.liveMax, a.capacity = p.after, p.capacity
			}
			return true
		}
		for _, t := range set.Templates {
			inWindow := t.Incident > 0
			if !inWindow && !strings.Contains(t.Example, "gc,init") {
				continue
			}
			at := t.FirstIncident
			if at.IsZero() {
				at = t.FirstSeen
			}
			// A template's lines came from its sources: which pod logged
			// the severe one is known only when it has one source.
			srcs := t.Sources
			if len(srcs) == 0 {
				srcs = []string{orWord(t.Source, set.Source)}
			}
			look(t.Example, at, t.Incident, srcs)
			if t.Last != "" {
				look(t.Last, t.LastSeen, 0, srcs)
			}
		}
		for _, l := range set.Lines {
			if l.Time.IsZero() || !l.Time.Before(ev.Window.Start) {
				look(l.Text, l.Time, 0, []string{orWord(l.Source, set.Source)})
			}
		}
		if a.n > 0 || a.heapMax > 0 {
			if by[set.Subject] == nil {
				order = append(order, set.Subject)
			}
			by[set.Subject] = a
		}
	}
	var out []Finding
	for _, subj := range order {
		a := by[subj]
		if a.n == 0 {
			continue
		}
		f := Finding{Kind: KindGCPressure, Subject: subj, Object: "logs of " + subj, Namespace: a.set.Namespace, Time: a.first,
			Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
		f.setFact("line", a.worstLine)
		f.setFact("collector", a.worst.collector)
		f.setFact("pauses", strconv.Itoa(a.n))
		if a.worst.pause >= gcMinPause {
			f.setFact("pause_max", pauseText(a.worst.pause))
		}
		if a.worst.gcShare > 0 {
			f.setFact("gc_share", fmt.Sprintf("%.0f%%", a.worst.gcShare))
		}
		summary := fmt.Sprintf("%s stops for garbage collection", subj)
		if a.worst.pause >= gcMinPause {
			summary += fmt.Sprintf(": pauses of up to %s", pauseText(a.worst.pause))
		} else if a.worst.gcShare > 0 {
			summary += fmt.Sprintf(": %.0f%% of its CPU goes to GC", a.worst.gcShare)
		}
		if a.capacity > 0 {
			live := 100 * a.liveMax / a.capacity
			f.setFact("live", fmt.Sprintf("%.0fM", a.liveMax))
			f.setFact("heap", fmt.Sprintf("%.0fM", a.capacity))
			f.setFact("live_share", fmt.Sprintf("%.0f%%", live))
			if live >= gcLiveFullPct {
				f.setFact("heap_too_small", "true")
				f.Weight = 0.95
				summary += fmt.Sprintf("; %.0fM of its %.0fM heap is still live after them", a.liveMax, a.capacity)
			}
		}
		if a.heapMax > 0 {
			f.setFact("heap_max", fmt.Sprintf("%.0fM", a.heapMax))
			if a.memory > 0 {
				f.setFact("memory", fmt.Sprintf("%.0fM", a.memory))
				f.setFact("heap_share", fmt.Sprintf("%.0f%%", 100*a.heapMax/a.memory))
			}
		}
		// One replica of several stops while the others, whose GC logs
		// were read too, collect in milliseconds: the pauses are that
		// pod's (its heap, its uptime, its share of a skewed load), and a
		// balancer still routing to it sends its share of the requests
		// into the pauses.
		var calm []string
		if len(a.severeSrc) == 1 && !a.mixed {
			for _, s := range a.gcSrc {
				if s != a.severeSrc[0] {
					calm = append(calm, s)
				}
			}
		}
		if len(calm) > 0 {
			f.setFact("one_pod", a.severeSrc[0])
			f.setFact("calm_pods", strconv.Itoa(len(calm)))
			if ip := podIPOf(ev.K8s, a.severeSrc[0]); ip != "" {
				f.setFact("one_pod_ip", ip)
			}
			summary = strings.Replace(summary, subj+" stops", fmt.Sprintf("one pod of %s (%s) stops", subj, a.severeSrc[0]), 1)
		}
		f.Summary = summary
		f.Evidence = []string{fmt.Sprintf("logs of %s: %d garbage-collection pauses of a second or more in the window, the longest: %s", subj, a.n, quote(ReadableLine(a.worstLine), 220))}
		if len(calm) > 0 {
			f.Evidence[0] = fmt.Sprintf("logs of %s (pod %s): %d garbage-collection pauses of a second or more in the window, the longest: %s; the GC logs of %s show no pause of a second",
				subj, a.severeSrc[0], a.n, quote(ReadableLine(a.worstLine), 220), plural(len(calm), "other pod", "other pods"))
		}
		if a.heapMax > 0 && a.memory > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the JVM of %s sized its heap to %s of the %s it was given (%s)", subj, f.fact("heap_max"), f.fact("memory"), f.fact("heap_share")))
		}
		// The change that sized the heap, even before the window: a heap
		// cut days ago fills only when the load rises.
		for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
			if c.Service == subj && matchLine(heapChangeRE, c.Description) {
				f.setFact("heap_change", fmt.Sprintf("%s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(c.Description, 200)))
			}
		}
		if hc := f.fact("heap_change"); hc != "" {
			f.Evidence = append(f.Evidence, hc)
		}
		out = append(out, f)
	}
	return out
}

// describeGCPauses explains gc_pressure from the numbers of the GC log
// ("" when the finding carries none).
func describeGCPauses(h *Hypothesis) string {
	pm, gs := h.fact("pause_max"), h.fact("gc_share")
	if pm == "" && gs == "" {
		return ""
	}
	d := fmt.Sprintf("%s stops for garbage collection", h.Subject)
	if p := h.fact("one_pod"); p != "" {
		d = fmt.Sprintf("one pod of %s, %s", h.Subject, p)
		d += h.wrapped(" (", "one_pod_ip", ")")
		if n := atoiOr(h.fact("calm_pods")); n > 1 {
			d += fmt.Sprintf(", stops for garbage collection while its %d other pods collect in milliseconds", n)
		} else {
			d += ", stops for garbage collection while its other pod collects in milliseconds"
		}
	}
	if pm != "" {
		d += fmt.Sprintf(": %s shows %s pauses of a second or more in the window, up to %s", gcSourceText(h), orWord(h.fact("pauses"), "several"), pm)
		d += h.wrapped(" (", "collector", ")")
	} else {
		d += fmt.Sprintf(": %s of its CPU goes to GC", gs)
	}
	d += ", during which every request waits"
	if h.fact("one_pod") != "" {
		d += " (the share of requests routed to that pod: its callers see some calls time out and the rest go through)"
	}
	if h.fact("heap_too_small") != "" {
		d += fmt.Sprintf("; after each collection %s of its %s heap is still live (%s), so the heap is too small for what it holds, refills within minutes and stops again", h.fact("live"), h.fact("heap"), h.fact("live_share"))
	}
	if hm, mem := h.fact("heap_max"), h.fact("memory"); hm != "" && mem != "" {
		d += fmt.Sprintf("; the JVM sized its maximum heap to %s, %s of the %s memory it was given", hm, h.fact("heap_share"), mem)
	}
	if hc := h.fact("heap_change"); hc != "" && h.Trigger == nil {
		d += "; the heap was set by the " + hc
	}
	return d
}

// pauseText writes a pause in seconds ("3.97 s") or milliseconds.
func pauseText(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// lastParen is the content of the last parenthesis of s ("(Normal) (G1
// Evacuation Pause)": "G1 Evacuation Pause").
func lastParen(s string) string {
	i := strings.LastIndexByte(s, '(')
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSpace(s[i+1:]), ")")
}

// podIPOf is the IP of a pod named in the evidence ("" when unknown): the
// address its callers' logs name it by.
func podIPOf(k K8sEvidence, name string) string {
	for i := range k.Pods {
		if p := &k.Pods[i]; p.Name == name {
			return p.Status.PodIP
		}
	}
	return ""
}
