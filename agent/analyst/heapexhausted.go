package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A managed runtime out of its own heap: the JVM's "OutOfMemoryError: Java
// heap space" (or "GC overhead limit exceeded") when the heap reaches its
// -Xmx or MaxRAMPercentage, V8's "JavaScript heap out of memory" at its
// --max-old-space-size. The runtime refuses the allocation itself and the
// process exits (exit code 1, 3 with ExitOnOutOfMemoryError, 134 for V8's
// abort): the container was not killed by the kernel at its memory limit,
// so the answer is not OOMKilled/exit 137 unless the container's own
// termination says so. What fills the heap (a leak, a load, a large
// request) is the question; the cap is the runtime's setting.

// KindHeapExhausted is a runtime out of its own heap.
const KindHeapExhausted Kind = "heap_exhausted"

var heapExhausted = &mechanism{
	kind:       KindHeapExhausted,
	class:      classCause,
	label:      "runtime out of its own heap (the heap limit the runtime sets, not a kernel OOM kill)",
	lines:      heapOOMRE,
	lineWeight: 0.88,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindHeapExhausted {
				explainHeapExhausted(f, ev)
			}
		}
		return nil
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange) || matchLine(heapSettingRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		rt := "its runtime"
		if strings.Contains(h.fact("line"), "JavaScript") || strings.Contains(h.fact("line"), "Reached heap limit") || strings.Contains(h.fact("line"), "mark-compacts") {
			rt = "its Node.js (V8) runtime"
		} else if strings.Contains(h.fact("line"), "OutOfMemoryError") {
			rt = "its JVM"
		}
		d := fmt.Sprintf("%s runs out of heap: %s reached its own heap limit", s, rt)
		if c := h.fact("heap_cap"); c != "" {
			d += " (" + c + ")"
		}
		if l := h.fact("line"); l != "" {
			d += " and failed the allocation: " + quote(ReadableLine(l), 160)
		}
		switch code := h.fact("exit_code"); {
		case h.fact("kernel_killed") != "":
			d += "; the container was then OOMKilled by the kernel at its memory limit"
		case code != "" && code != "137":
			d += fmt.Sprintf("; the process exits with code %s on it: the runtime's own heap limit, not the kernel's OOM killer at the container's memory limit (not OOMKilled, no exit code 137)", code)
		default:
			d += "; the runtime refuses the allocation itself, which is not the kernel's OOM kill at the container's memory limit (OOMKilled, exit code 137)"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.high("Find what fills the heap of %s: take a heap dump at the error (-XX:+HeapDumpOnOutOfMemoryError, or --heapsnapshot-near-heap-limit for Node) and look for the leak, an unbounded cache or one oversized request", s)
		r.med("If the live data legitimately grew, raise the heap limit of %s (%s) together with the container's memory limit, keeping the heap under ~75%% of it", s, orWord(h.fact("heap_cap"), "-Xmx / --max-old-space-size"))
		r.low("Alert on heap use after collection and on the runtime's out-of-memory errors, apart from OOMKilled restarts")
	},
}

var heapOOMRE = regexp.MustCompile(`OutOfMemoryError: (?:Java heap space|GC overhead limit exceeded|Requested array size exceeds VM limit)|JavaScript heap out of memory|Reached heap limit Allocation failed|Ineffective mark-compacts near heap limit`)

// explainHeapExhausted adds the heap cap the workload's container sets and
// how it last ended.
func explainHeapExhausted(f *Finding, ev *Gathered) {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if workloadOfName(p.Name) != f.Subject && !strings.HasPrefix(p.Name, f.Subject+"-") {
			continue
		}
		for j := range p.Spec.Containers {
			if hc := heapCapOf(&p.Spec.Containers[j]); hc != nil && f.fact("heap_cap") == "" {
				f.setFact("heap_cap", hc.setting)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.LastTerminationState.Terminated
			if t == nil {
				t = cs.State.Terminated
			}
			if t == nil || t.ExitCode == 0 {
				continue
			}
			f.setFact("exit_code", strconv.Itoa(int(t.ExitCode)))
			if t.Reason == "OOMKilled" {
				f.setFact("kernel_killed", "true")
			}
		}
	}
}
