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
		if e := h.fact("heap_effective"); e != "" {
			d += " of " + e
			if df := h.fact("heap_default"); df != "" {
				d += ", " + df + ","
			}
			d += " not the one configured (" + h.fact("heap_cap") + ")"
		} else if c := h.fact("heap_cap"); c != "" {
			d += " (" + c + ")"
		}
		if l := h.fact("line"); l != "" {
			d += " and failed the allocation: " + quote(ReadableLine(l), 160)
		}
		if v := h.fact("heap_var"); v != "" {
			d += fmt.Sprintf("; the JVM never reads %s itself (only a launcher script expands it into java's command line; the JVM reads JAVA_TOOL_OPTIONS)", v)
			if ep := h.fact("entrypoint"); ep != "" {
				d += fmt.Sprintf(", and the image's entrypoint runs java directly (%s), so the heap option and every other option in %s are ignored", quote(ep, 120), v)
			}
		}
		if l := h.fact("limit_defaulted"); l != "" {
			d += fmt.Sprintf("; the heap is %s%% of the container's memory limit, and that limit is the namespace's LimitRange default memory limit of %s (the LimitRanger set it: the workload sets no memory limit of its own), so the heap is only about %s",
				h.fact("heap_percent"), l, h.fact("heap_size"))
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
		if l := h.fact("limit_defaulted"); l != "" {
			r.high("Set the memory request and limit of %s in its own values (as its other environments do) instead of the namespace's LimitRange default of %s, sized for its heap at %s%% of the limit", s, l, h.fact("heap_percent"))
		}
		if v := h.fact("heap_var"); v != "" {
			r.high("Pass the JVM options of %s where the JVM reads them: JAVA_TOOL_OPTIONS (or the image's own JVM flags, e.g. Jib's jvmFlags), or -XX:MaxRAMPercentage; check with jcmd 1 VM.flags that MaxHeapSize is the intended one", s)
		}
		r.rollback()
		r.high("Find what fills the heap of %s: take a heap dump at the error (-XX:+HeapDumpOnOutOfMemoryError, or --heapsnapshot-near-heap-limit for Node) and look for the leak, an unbounded cache or one oversized request", s)
		r.med("If the live data legitimately grew, raise the heap limit of %s (%s) together with the container's memory limit, keeping the heap under ~75%% of it", s, orWord(h.fact("heap_cap"), "-Xmx / --max-old-space-size"))
		r.low("Alert on heap use after collection and on the runtime's out-of-memory errors, apart from OOMKilled restarts")
	},
}

// limitRangerAnnotation is the annotation the LimitRanger admission
// plugin writes on a pod it gave defaults to: "LimitRanger plugin set: cpu,
// memory request for container app; cpu, memory limit for container app".
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// limitRangerSetMemoryLimit reports whether the LimitRanger's annotation
// says it set container's memory limit.
func limitRangerSetMemoryLimit(ann, container string) bool {
	_, rest, ok := strings.Cut(ann, "LimitRanger plugin set:")
	if !ok {
		return false
	}
	for _, part := range strings.Split(rest, ";") {
		what, who, ok := strings.Cut(part, " limit for ")
		if !ok || !strings.Contains(what, "memory") {
			continue
		}
		who = strings.TrimSpace(who)
		if who == "container "+container || who == "init container "+container {
			return true
		}
	}
	return false
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
			c := &p.Spec.Containers[j]
			hc := heapCapOf(c)
			if hc != nil && f.fact("heap_cap") == "" {
				f.setFact("heap_cap", hc.setting)
			}
			if j == 0 {
				heapFlagsIgnored(f, ev, p, c, hc)
			}
			// A JVM heap sized as a share of the container's memory
			// (MaxRAMPercentage, or its default 25%) on a limit the
			// namespace's LimitRange set: the workload sets none.
			jvm := strings.Contains(f.fact("line"), "OutOfMemoryError") || hc != nil && hc.runtime == "JVM"
			if !jvm || hc != nil && hc.percent == 0 || f.fact("limit_defaulted") != "" || !limitRangerSetMemoryLimit(p.Annotations[limitRangerAnnotation], c.Name) {
				continue
			}
			lim := c.Resources.Limits.Memory()
			if lim == nil || lim.IsZero() {
				continue
			}
			f.setFact("limit_defaulted", lim.String())
			pct := 25.0
			if hc != nil {
				pct = hc.percent
			}
			f.setFact("heap_percent", strconv.FormatFloat(pct, 'f', -1, 64))
			f.setFact("heap_size", humanBytes(int64(float64(lim.Value())*pct/100)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s: %s: %q: container %s's memory limit %s is the namespace's LimitRange default",
				p.Namespace, p.Name, limitRangerAnnotation, p.Annotations[limitRangerAnnotation], c.Name, lim.String()))
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
