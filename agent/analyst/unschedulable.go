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
