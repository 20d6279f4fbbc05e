package analyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Pods the scheduler cannot place (FailedScheduling): they stay Pending.
// The scheduler's message says why (insufficient CPU or memory, taints,
// node selectors or affinity no node satisfies).
var unschedulableM = &mechanism{
	kind:  KindUnschedulable,
	class: classCause,
	label: "unschedulable pods",
	pod:   pendingPod,
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "FailedScheduling"
	},
	eventCritical: true,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		msg := h.fact("message")
		d = fmt.Sprintf("%s pods are unschedulable and stay Pending (FailedScheduling): %s", s, truncate(msg, 220))
		if why := schedulingReason(msg); why != "" {
			d += " — " + why
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Make room for %s: add nodes (or let the cluster autoscaler scale up) or lower the pods' resource requests", s))
		r.add(finding.PriorityMedium, "Review taints, tolerations, node selectors and affinity rules of the pending pods")
		r.add(finding.PriorityLow, "Alert on pods Pending for more than a few minutes and keep spare cluster capacity")
	},
}

// pendingPod judges a Pending pod the scheduler cannot place.
func pendingPod(p *corev1.Pod, base Finding) ([]Finding, bool) {
	if p.Status.Phase != corev1.PodPending {
		return nil, false
	}
	var out []Finding
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			f := base
			f.Kind, f.Severity, f.Weight = KindUnschedulable, SevCritical, 0.9
			f.Time = c.LastTransitionTime.Time
			if f.Time.IsZero() {
				f.Time = p.CreationTimestamp.Time
			}
			f.Summary = fmt.Sprintf("%s cannot be scheduled: %s", base.Object, c.Message)
			f.Evidence = []string{fmt.Sprintf("%s is Pending, PodScheduled=False (Unschedulable) since %s: %s", base.Object, ts(f.Time), quote(c.Message, 300))}
			f.setFact("message", c.Message)
			out = append(out, f)
		}
	}
	return out, false
}
