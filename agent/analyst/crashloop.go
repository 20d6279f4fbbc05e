package analyst

import (
	"fmt"
)

// Containers in CrashLoopBackOff: a symptom whose exit code and last log
// lines point at the cause (a missing setting, a failing dependency...).
var crashLoop = &mechanism{
	kind:  KindCrashLoop,
	class: classSymptom,
	label: "CrashLoopBackOff",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s containers are in CrashLoopBackOff", s)
		if c := h.fact("exit_code"); c != "" {
			d += fmt.Sprintf(", exiting with code %s (%s)", c, exitMeaningStr(c))
		}
		if l := h.fact("last_log"); l != "" {
			d += "; last log line: " + quote(ReadableLine(l), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
