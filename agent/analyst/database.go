package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// Database connection and lock errors seen by its clients: the pool or
// max_connections exhausted, deadlocks, lock timeouts.
var databaseErrors = &mechanism{
	kind:  KindDatabase,
	class: classCause,
	label: "database errors",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("database errors in %s: %s — %s", orWord(h.fact("caller"), s), databaseMechanism(h.fact("line")), quote(ReadableLine(h.fact("line")), 200))
		d += jobOverlapPhrase(h)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Relieve the database: %s (kill idle or long-running sessions, raise max_connections or the pool size with care)", databaseMechanism(h.fact("line"))))
		r.add(finding.PriorityMedium, fmt.Sprintf("Check connection pool settings and leaks in %s", orWord(h.fact("caller"), s)))
		r.add(finding.PriorityLow, "Alert on database connections in use and on pool wait time")
	},
}
