package analyst

import (
	"fmt"
)

// An application that crashes on its own error (a panic, an uncaught
// exception, a fatal error): the log line says where.
var appCrash = &mechanism{
	kind:  KindAppCrash,
	class: classSymptom,
	label: "application crash",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s crashes with an application error: %s", s, quote(ReadableLine(h.fact("line")), 220))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
