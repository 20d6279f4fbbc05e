package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Containers killed by their failing liveness (or startup) probe and
// restarted (exit code 143, SIGTERM): typically a probe that fails before
// a slow-starting application is ready.
var livenessKill = &mechanism{
	kind:  KindLivenessKill,
	class: classCause,
	label: "liveness probe kills",
	enrich: func(f *Finding, c *corev1.Container) {
		f.setFact("probe_config", probeConfig(c))
		if c.StartupProbe != nil {
			f.setFact("startup_probe", "true")
		}
	},
	event: func(e *corev1.Event) (float64, bool) {
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "Unhealthy":
			return 0.7, strings.HasPrefix(msg, "liveness probe") || strings.HasPrefix(msg, "startup probe")
		case "Killing":
			return 0.85, strings.Contains(msg, "liveness probe") || strings.Contains(msg, "startup probe")
		}
		return 0, false
	},
	eventFacts: func(f *Finding, e *corev1.Event) { f.setFact("probe", probeKind(e.Message)) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		probe := orWord(h.fact("probe"), "liveness")
		d = fmt.Sprintf("%s containers are killed by their failing %s probe and restarted (exit code 143, SIGTERM, not OOMKilled)", s, probe)
		if c := h.fact("probe_config"); c != "" {
			d += fmt.Sprintf(": the %s probe (%s) fails before the application is ready", probe, c)
		} else {
			d += ": the probe fails before the application is ready"
		}
		if h.fact("startup_probe") == "" {
			d += ", and there is no startupProbe to cover a slow start"
		}
		if m := h.fact("message"); m != "" {
			d += " — " + quote(truncate(m, 160), 170)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Stop the liveness probe from killing %s while it starts: raise the liveness probe's initialDelaySeconds (or failureThreshold) above the start-up time, or add a startupProbe", s))
		r.add(finding.PriorityMedium, fmt.Sprintf("Make %s report live quickly (warm caches in the background, separate liveness from readiness)", s))
		r.add(finding.PriorityLow, "Alert on containers restarted by probe failures (Killing events) and on rollouts that stop progressing")
	},
}

// probeConfig describes a container's liveness probe timing.
func probeConfig(c *corev1.Container) string {
	if c == nil || c.LivenessProbe == nil {
		return ""
	}
	lp := c.LivenessProbe
	return fmt.Sprintf("initialDelaySeconds %d, periodSeconds %d, failureThreshold %d", lp.InitialDelaySeconds, max(lp.PeriodSeconds, 10), max(lp.FailureThreshold, 3))
}
