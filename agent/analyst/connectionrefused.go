package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// Connections refused (ECONNREFUSED, no healthy upstream): nothing listens
// on the target's address — it is down, restarting or has no endpoints.
var connRefused = &mechanism{
	kind:       KindConnRefused,
	class:      classDependency,
	label:      "connection refused",
	lines:      regexp.MustCompile(`(?i)connection refused|ECONNREFUSED|actively refused|upstream connect error|no healthy upstream|503 Service Unavailable`),
	lineWeight: 0.8,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return networkChangeFits(c) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s is down or not accepting connections: %s gets connection refused calling %s", s, orWord(h.fact("caller"), "its caller"), orWord(h.fact("target"), s))
		d += h.quoteClause(": ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Restore %s: check its pods, endpoints and recent changes; fail over or scale it up", s))
		r.add(finding.PriorityMedium, fmt.Sprintf("Add timeouts, retries with backoff and circuit breaking in %s for calls to %s", orWord(h.fact("caller"), "the caller"), s))
		r.add(finding.PriorityLow, fmt.Sprintf("Alert on the availability of %s", s))
	},
}
