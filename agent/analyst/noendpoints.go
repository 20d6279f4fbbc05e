package analyst

import (
	"fmt"
)

// A Service with no ready endpoints: every request to it fails. A symptom
// of pods that are not ready or a selector that matches none.
var noEndpoints = &mechanism{
	kind:  KindNoEndpoints,
	class: classSymptom,
	label: "no ready endpoints",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("service %s has no ready endpoints, so requests to it fail", s)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
