package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A namespace ResourceQuota refuses the pods of a workload (FailedCreate:
// exceeded quota): the workload cannot create them.
var quotaExceeded = &mechanism{
	kind:  KindQuota,
	class: classCause,
	label: "resource quota exceeded",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "FailedCreate" && strings.Contains(strings.ToLower(e.Message), "exceeded quota")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s cannot create pods: resource quota exceeded (%s)", s, truncate(h.fact("message"), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Raise the resource quota of namespace %s or lower the requests of %s", orWord(h.top().Namespace, sc.Namespace), s))
		r.add(finding.PriorityLow, "Alert when namespace quota use passes 80%")
	},
}
