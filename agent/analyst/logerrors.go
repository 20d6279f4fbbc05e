package analyst

import (
	"fmt"
)

// Errors that are new in the incident window, or surge in it: a symptom
// the log line describes when no more specific mechanism claims it.
var logErrors = &mechanism{
	kind:  KindLogErrors,
	class: classSymptom,
	label: "new or surging errors",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s logs new or surging errors: %s", s, quote(ReadableLine(h.fact("line")), 220))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
