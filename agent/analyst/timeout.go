package analyst

import (
	"fmt"
	"regexp"
)

// Calls that time out (i/o timeout, deadline exceeded): the dependency is
// slow or unreachable; a network change that drops packets shows as
// timeouts, never as refusals.
var timeoutM = &mechanism{
	kind:       KindTimeout,
	class:      classDependency,
	label:      "timeouts",
	lines:      regexp.MustCompile(`(?i)i/o timeout|timed out|deadline exceeded|ETIMEDOUT|timeout (after|exceeded|while)|504 Gateway Time-?out|Read timed out|request timeout`),
	lineWeight: 0.75,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return networkChangeFits(c) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		target := h.fact("target")
		if target == "" || DependencyName(target) == h.fact("caller") {
			target = dependencyKindOf(h)
		}
		if h.fact("target") == "" && h.fact("caller") == "" && h.fact("line") == "" {
			// Nothing names the dependency: the timeouts are the subject's.
			target = s
		}
		d = fmt.Sprintf("calls from %s to %s time out (the dependency is slow or unreachable): %s", orWord(h.fact("caller"), "the service"), target, quote(ReadableLine(h.fact("line")), 200))
		if c := h.Trigger; c != nil && fitsMechanism(h, c) {
			d = fmt.Sprintf("egress from %s is blocked by a network change (%s): its connections to %s time out (i/o timeout, no connection refused — packets are dropped, not rejected)", orWord(h.fact("caller"), s), networkChangeWord(c), timeoutTargets(h, target))
		}
		if ic := initCrash(h); ic != "" {
			d += fmt.Sprintf("; the init container %s cannot connect and crash-loops (Init:CrashLoopBackOff), so the new pods never start", ic)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		connRefused.recommend(h, sc, r)
	},
}
