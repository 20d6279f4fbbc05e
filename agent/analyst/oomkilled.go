package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Containers (or host processes) killed for running out of memory: the
// kernel OOM killer at the memory limit (exit code 137), a leak, a load
// surge or a JVM heap larger than the limit.
var oomKilled = &mechanism{
	kind:  KindOOMKilled,
	class: classCause,
	label: "OOMKilled (out of memory)",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "OOMKilling" || e.Reason == "OOMKilled"
	},
	// A container killed by the kernel OOM killer is about the workload,
	// not the node it ran on.
	eventTarget: func(e *corev1.Event, t *eventTarget) {
		io := e.InvolvedObject
		if io.Kind != "Node" {
			return
		}
		if wl := oomWorkload(e.Message, io.Name, t.Pods); wl != "" {
			t.Subject = wl
			t.Related = append(t.Related, io.Name)
			t.Object = "node " + io.Name + " process of " + wl
		}
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		desc := changeText(c)
		return c.fact("memory_limit_change") != "" || strings.Contains(desc, "xmx") || strings.Contains(desc, "heap")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		lim := h.fact("memory_limit")
		leak := leakRate(h)
		switch {
		case h.fact("host") != "" && h.fact("process") != "":
			d = fmt.Sprintf("the %s process on host %s is killed by the kernel OOM killer (out of memory)", h.fact("process"), h.fact("host"))
			if dep := processDependency(h.fact("process")); dep != "" {
				d = fmt.Sprintf("%s is down: %s", capitalizeName(dep), d)
			}
			if hostGaveUp(h) {
				d += " and systemd gave up restarting it (start request repeated too quickly)"
			}
		case jvmHeapOverLimit(h) != "":
			d = fmt.Sprintf("%s containers are OOMKilled (out of memory, exit code 137): %s, so the JVM grows past the limit and the kernel kills it (no Java OutOfMemoryError)", s, jvmHeapOverLimit(h))
		case loadSurgeOf(h) != nil && (h.Trigger == nil || !fitsMechanism(h, h.Trigger)):
			ls := loadSurgeOf(h)
			d = fmt.Sprintf("%s containers are OOMKilled (out of memory, exit code 137): a load surge (~%s× %s, %s → %s in total from %s) drives their memory past the limit", s, ls.fact("ratio"), loadWord(ls.fact("metric")), ls.fact("baseline"), ls.fact("peak"), hm(ls.Time))
			if lim != "" {
				d += fmt.Sprintf(" of %s", lim)
			}
			d += "; memory rose together with the load, not as a steady leak"
		case leak != "":
			d = fmt.Sprintf("%s has a memory leak: its working set grows steadily by ~%s until the containers are OOMKilled (out of memory, exit code 137)", s, leak)
			if lim != "" {
				d += fmt.Sprintf(" at the memory limit of %s", lim)
			}
		default:
			d = fmt.Sprintf("%s containers are OOMKilled: the process runs out of memory (exit code 137)", s)
			if lim != "" {
				d += fmt.Sprintf(" and is killed when it exceeds its memory limit of %s", lim)
			} else if h.top().Source != SrcLogs {
				d += " (no memory limit is set, so the node's memory ran out)"
			}
		}
		if n := restartsOf(h); n > 0 {
			if h.fact("crashloop") != "" {
				d += fmt.Sprintf("; the pods restart repeatedly (%s, CrashLoopBackOff)", plural(n, "restart", "restarts"))
			} else {
				d += fmt.Sprintf("; the containers were restarted (%s)", plural(n, "restart", "restarts"))
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		lim := h.fact("memory_limit")
		r.rollback()
		if h.fact("host") != "" && h.fact("process") != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Restart %s on %s and give the host more memory, or cap its memory use (e.g. maxmemory and an eviction policy)", h.fact("process"), h.fact("host")))
			r.add(finding.PriorityMedium, fmt.Sprintf("Find what grew the memory of %s and make its callers degrade gracefully when it is down", h.fact("process")))
			r.add(finding.PriorityLow, "Alert on host memory use and on the dependency's availability")
			return
		}
		if x := jvmHeapOverLimit(h); x != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Set the JVM heap of %s below its container memory limit (%s): -Xmx at most ~75%% of the limit, or -XX:MaxRAMPercentage=75 instead of a fixed -Xmx; or raise the limit above the heap plus off-heap memory", s, x))
			r.add(finding.PriorityMedium, "Size JVM heaps from the container limit (MaxRAMPercentage) rather than fixed -Xmx values in config")
			r.add(finding.PriorityLow, "Validate in CI that -Xmx stays below the container memory limit")
			return
		}
		if leakRate(h) != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Restart %s before it reaches its memory limit (or raise the limit from %s) to buy time", s, orWord(lim, "its current value")))
			r.add(finding.PriorityMedium, fmt.Sprintf("Find the memory leak in %s (heap profile of an instance after an hour: unbounded caches, maps, buffers)", s))
			r.add(finding.PriorityLow, fmt.Sprintf("Alert on the growth of the memory working set of %s, not only on OOMKilled restarts", s))
			return
		}
		if lim != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Raise the memory limit of %s (currently %s) so the pods stop being OOMKilled, e.g. to twice the current limit", s, lim))
		} else {
			r.add(finding.PriorityHigh, fmt.Sprintf("Set a memory request and limit on %s sized to its working set", s))
		}
		r.add(finding.PriorityMedium, fmt.Sprintf("Profile the memory use of %s (heap dumps, allocation profiles) to find the leak or growth behind the out of memory kills", s))
		r.add(finding.PriorityLow, fmt.Sprintf("Alert on container memory working set above 90%% of the limit and on OOMKilled restarts of %s", s))
	},
}
