package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// Connections held and never released: the open connection count climbs
// steadily until the pool or the server's limit is reached.
var connLeak = &mechanism{
	kind:     KindConnLeak,
	class:    classCause,
	label:    "connection leak (connections held and never released)",
	describe: func(h *Hypothesis, sc Scope) string { return describeConnLeak(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Release the leaked connections now: restart %s (or terminate its sessions idle in transaction, e.g. pg_terminate_backend) and set idle_in_transaction_session_timeout / a pool leak-detection threshold", s))
		r.add(finding.PriorityMedium, fmt.Sprintf("Fix the leak in %s: close connections and commit or roll back transactions on every path (errors, aborted streams, early returns)", s))
		r.add(finding.PriorityLow, "Alert on connections idle in transaction and on pool connections in use growing without load")
	},
}

// describeConnLeak tells a connection leak: held connections climbing
// with flat load, and what the database does when they run out.
func describeConnLeak(h *Hypothesis) string {
	top := h.top()
	what := "database connections in use"
	if top.fact("idle_in_transaction") != "" {
		what = "database connections idle in transaction"
	}
	d := fmt.Sprintf("connection leak in %s: %s climb steadily from %s to %s since %s", h.Subject, what, top.fact("low"), top.fact("peak"), orWord(top.fact("since"), "the onset"))
	if r := top.fact("request_ratio"); r != "" {
		d += fmt.Sprintf(" while the request rate stays flat (×%s), so it is not a load surge", r)
	}
	d += ": connections are taken and not released (a transaction left open, a connection not closed on an error path) until the pool or the database's max_connections runs out"
	for _, f := range h.Support {
		if f.Kind == KindDatabase {
			if l := f.fact("line"); l != "" {
				d += " — " + quote(ReadableLine(l), 200)
				break
			}
		}
	}
	return d
}
