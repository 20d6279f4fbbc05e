package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// A Service whose selector matches none of its pods (labels changed on one
// side only): it has no endpoints and its callers get refused.
var selectorM = &mechanism{
	kind:  KindSelector,
	class: classCause,
	label: "Service selector/label mismatch",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("selector/label mismatch: service %s selects no pods (no ready endpoints), so requests to it fail: %s", s, h.fact("mismatch"))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Make service %s select its pods again: restore the pod labels its selector needs, or update the selector to the new labels (%s)", s, truncate(h.fact("mismatch"), 160)))
		r.add(finding.PriorityMedium, "Keep Service selectors and pod template labels in the same chart and change them together")
		r.add(finding.PriorityLow, "Alert on Services with no ready endpoints (kube_endpoint_address_available == 0) and check selectors in CI")
	},
}
