package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Containers in CrashLoopBackOff: a symptom whose exit code and last log
// lines point at the cause (a missing setting, a failing dependency...).
var crashLoop = &mechanism{
	kind:  KindCrashLoop,
	class: classSymptom,
	label: "CrashLoopBackOff",
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "BackoffLimitExceeded", "DeadlineExceeded":
			return 0.6, true
		case "BackOff":
			return 0.7, strings.Contains(msg, "restarting failed container") && !strings.Contains(msg, "pulling image")
		}
		return 0, false
	},
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
