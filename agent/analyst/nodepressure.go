package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/finding"
)

// A node under memory, disk or PID pressure: the kubelet evicts pods to
// reclaim the resource.
var nodePressure = &mechanism{
	kind:  KindNodePressure,
	class: classCause,
	label: "node pressure",
	nodeCondition: func(n *corev1.Node, c corev1.NodeCondition) *Finding {
		res := map[corev1.NodeConditionType]string{corev1.NodeMemoryPressure: "memory", corev1.NodeDiskPressure: "disk", corev1.NodePIDPressure: "pid"}[c.Type]
		if res == "" || c.Status != corev1.ConditionTrue {
			return nil
		}
		obj := "node " + n.Name
		f := &Finding{Kind: KindNodePressure, Severity: SevCritical, Weight: 0.9}
		f.setFact("resource", res)
		f.Summary = fmt.Sprintf("%s has %s since %s", obj, c.Type, hm(c.LastTransitionTime.Time))
		f.Evidence = []string{fmt.Sprintf("%s condition %s=True since %s, reason %s: %s", obj, c.Type, ts(c.LastTransitionTime.Time), orDash(c.Reason), quote(c.Message, 200))}
		if res == "disk" {
			if q, ok := n.Status.Allocatable[corev1.ResourceEphemeralStorage]; ok {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s allocatable ephemeral-storage %s", obj, q.String()))
			}
		}
		return f
	},
	event: func(e *corev1.Event) (float64, bool) {
		switch e.Reason {
		case "EvictionThresholdMet", "NodeHasDiskPressure", "NodeHasInsufficientMemory", "NodeHasInsufficientPID":
			return 0.8, true
		case "FreeDiskSpaceFailed", "ImageGCFailed":
			// The kubelet could not reclaim image space: a warning, not
			// pressure. Pressure needs a condition, a taint or evictions.
			return 0.3, true
		}
		return 0, false
	},
	eventFacts: pressureFacts,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if found[i].Kind == KindNodePressure {
				topMemoryPod(ev, &found[i])
				rootVolumeCut(ev, &found[i])
				hostPathFiller(ev, &found[i]) // hostpathfiller.go
			}
		}
		return nil
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		res := h.fact("resource")
		d = fmt.Sprintf("node %s is under %s pressure (%s): the kubelet evicts pods to reclaim it", s, orWord(res, "resource"), pressureCondition(res))
		if p := h.fact("top_pod"); p != "" {
			d += fmt.Sprintf("; the largest consumer of memory on the node is pod %s of %s, using %s", p, h.fact("top_workload"), h.fact("top_memory"))
			if sh := h.fact("top_share"); sh != "" {
				d += fmt.Sprintf(" (%s of the node's allocatable memory)", sh)
			}
			d += " (kubectl top pod)"
			if c := evictedConsumer(h); c != "" {
				d += "; the kubelet evicts pods using more than their memory request, lowest priority first, not the pod using most: " + c
			}
		} else if hp := describeHostPathFiller(h); hp != "" {
			d += "; " + hp
			if c := largestConsumer(h); c != "" {
				d += " (" + c + ")"
			}
		} else if c := largestConsumer(h); c != "" && h.fact("volume_cut") == "" {
			d += "; " + c
		}
		if v := describeVolumeCut(h); v != "" {
			d += "; " + v
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		res := h.fact("resource")
		node := s
		if h.Kind == KindEviction {
			node = orWord(h.fact("node"), "the node")
		}
		if recommendVolumeCut(h, r) || recommendHostPathFiller(h, r) {
			return
		}
		switch res {
		case "disk":
			r.add(finding.PriorityHigh, fmt.Sprintf("Free disk space on %s (prune unused images, rotate logs, clear emptyDir volumes) to end the disk pressure", node))
		case "memory":
			if w := h.fact("top_workload"); w != "" {
				r.add(finding.PriorityHigh, fmt.Sprintf("Relieve memory pressure on %s: give %s a memory limit and a request near what it uses (%s), or move it to nodes sized for it", node, w, h.fact("top_memory")))
			} else {
				r.add(finding.PriorityHigh, fmt.Sprintf("Relieve memory pressure on %s: move or limit the pods using most memory", node))
			}
		default:
			r.add(finding.PriorityHigh, fmt.Sprintf("Relieve the %s pressure on %s and reschedule the evicted pods", orWord(res, "resource"), node))
		}
		r.add(finding.PriorityMedium, "Set requests and limits (and ephemeral-storage limits) on pods so the scheduler accounts for them")
		r.add(finding.PriorityLow, "Alert on node MemoryPressure/DiskPressure conditions and on evictions")
	},
}

// evictionUseRE reads the kubelet's eviction message: "Container shipper
// was using 61341208Ki, request is 0, has larger consumption of
// ephemeral-storage."
var evictionUseRE = regexp.MustCompile(`Container (\S+) was using (\d+\w*), (?:request is (\S+), )?has larger consumption of ([\w-]+)`)

// largestConsumer names what fills a node under pressure: the container
// the kubelet's eviction message says uses the most of the resource.
func largestConsumer(h *Hypothesis) string {
	best, bestUse := "", int64(0)
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		if f.Kind != KindEviction {
			continue
		}
		m := findSubmatch(evictionUseRE, f.fact("message"))
		if m == nil {
			continue
		}
		q, err := resource.ParseQuantity(m[2])
		if err != nil || q.Value() <= bestUse {
			continue
		}
		bestUse = q.Value()
		best = fmt.Sprintf("the largest consumer of %s is container %s of %s, using %s", m[4], m[1], f.Subject, humanBytes(q.Value()))
		if m[3] == "0" {
			best += " with no request for it"
		}
		best += " (the kubelet's eviction message)"
	}
	return best
}

// evictedConsumer names the container the kubelet's eviction message says
// it evicted, with its use and request.
func evictedConsumer(h *Hypothesis) string {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		if f.Kind != KindEviction {
			continue
		}
		m := findSubmatch(evictionUseRE, f.fact("message"))
		if m == nil {
			continue
		}
		q, err := resource.ParseQuantity(m[2])
		if err != nil {
			continue
		}
		c := fmt.Sprintf("it evicted container %s of %s, using %s", m[1], f.Subject, humanBytes(q.Value()))
		if m[3] != "" {
			c += " against a request of " + m[3]
		}
		return c
	}
	return ""
}

// topMemoryPod names, for a node under memory pressure, the pod using the
// most memory on it in the usage readings handed over (kubectl top pod),
// with its share of the node's allocatable memory.
func topMemoryPod(ev *Gathered, f *Finding) {
	if r := f.fact("resource"); r != "" && r != "memory" {
		return
	}
	var top *PodUsage
	for i := range ev.K8s.Usage {
		u := &ev.K8s.Usage[i]
		if u.Node == "" || !strings.EqualFold(u.Node, f.Subject) {
			continue
		}
		if top == nil || u.Memory.Cmp(top.Memory) > 0 {
			top = u
		}
	}
	if top == nil || top.Memory.Value() <= 0 {
		return
	}
	share := ""
	for _, n := range ev.K8s.Nodes {
		if n.Name == f.Subject {
			if a, ok := n.Status.Allocatable[corev1.ResourceMemory]; ok && a.Value() > 0 {
				share = fmt.Sprintf("%d%%", top.Memory.Value()*100/a.Value())
				// A consumer of a small share is no answer.
				if top.Memory.Value()*4 < a.Value() {
					return
				}
			}
		}
	}
	f.setFact("top_pod", top.Namespace+"/"+top.Name)
	f.setFact("top_workload", workloadOfName(top.Name))
	f.setFact("top_memory", humanBytes(top.Memory.Value()))
	f.setFact("top_share", share)
	f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl top pod: %s/%s on node %s uses %s of memory%s", top.Namespace, top.Name, f.Subject, humanBytes(top.Memory.Value()), orWord(map[bool]string{true: ", " + share + " of its allocatable memory"}[share != ""], "")))
	if w := workloadOfName(top.Name); w != "" && !slices.Contains(f.Related, w) {
		f.Related = append(f.Related, w)
	}
	// The workload using the node's memory is a system of the incident:
	// it is what to limit or move.
	if w := workloadOfName(top.Name); w != "" {
		f.setFact("affected", appendAffected(f.fact("affected"), w))
	}
}

// appendAffected adds a name to a comma-separated "affected" fact.
func appendAffected(list, name string) string {
	for _, x := range strings.Split(list, ",") {
		if strings.TrimSpace(x) == name {
			return list
		}
	}
	if list == "" {
		return name
	}
	return list + "," + name
}

// humanBytes writes a size in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit && exp < 4; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
