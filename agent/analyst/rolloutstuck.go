package analyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// A rollout whose new pods never become ready (ProgressDeadlineExceeded):
// a symptom of what keeps them from starting or passing their probes.
var rolloutStuck = &mechanism{
	kind:  KindRolloutStuck,
	class: classSymptom,
	label: "rollout stuck",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.8, e.Reason == "ProgressDeadlineExceeded"
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the rollout of %s is stuck: new pods do not become ready", s)
		if h.fact("available") != "" && h.fact("desired") != "" {
			d += fmt.Sprintf(" (%s of %s replicas available)", h.fact("available"), h.fact("desired"))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
