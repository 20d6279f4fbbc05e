package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Pods failing their readiness (or liveness) probe: taken out of service
// or restarted. A symptom: the probe says something is wrong, not what.
var probeFailure = &mechanism{
	kind:  KindProbeFailure,
	class: classSymptom,
	label: "probe failures (pods not ready)",
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		return 0.75, e.Reason == "Unhealthy" && !strings.HasPrefix(msg, "liveness probe") && !strings.HasPrefix(msg, "startup probe") && !readinessExecMissingEvent(e)
	},
	eventFacts: func(f *Finding, e *corev1.Event) { f.setFact("probe", probeKind(e.Message)) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s fails its %s probe, so its pods are taken out of service or restarted: %s", s, orWord(h.fact("probe"), "readiness"), truncate(h.fact("message"), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}
