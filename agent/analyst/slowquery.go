package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// Slow queries: database statements running for seconds (sequential scans
// of large tables, a dropped index) and hitting the statement timeout, seen
// in the database's own log and in its clients'.
var slowQuery = &mechanism{
	kind:       KindSlowQuery,
	class:      classCause,
	label:      "slow queries (sequential scans, statement timeouts)",
	lines:      regexp.MustCompile(`(?i)duration: \d{4,}(\.\d+)? ms\s+(statement|execute|bind|parse)|canceling statement due to statement timeout|statement timeout|Query_time: [1-9]|\bSeq Scan on\b|sequential scan`),
	lineWeight: 0.85,
	// Slow statements seen from the client and the database's own log,
	// and the database's CPU they drive, are one failure.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSaturation && databaseLike(f)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("slow queries on the database behind %s: statements run for seconds (sequential scans / full table scans, likely a missing index) and hit the statement timeout", h.Subject)
		if cpu := cpuSaturationOf(h); cpu != "" {
			d += "; " + cpu
		}
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 200)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Add the missing index for the slow statements (EXPLAIN shows the sequential scan) or cancel the offending queries")
		r.med("Run ANALYZE after large data imports or backfills and review query plans in pg_stat_statements")
		r.low("Alert on statement duration and sequential scans on large tables")
	},
}

// cpuSaturationOf names a CPU saturation the slow queries drive, from the
// hypothesis's supporting findings.
func cpuSaturationOf(h *Hypothesis) string {
	for _, f := range h.Support {
		if f.Kind == KindSaturation && strings.Contains(strings.ToLower(f.Summary), "cpu") {
			return "they drive the database CPU up (" + f.Summary + ")"
		}
	}
	return ""
}
