package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
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
	detect:     detectTimeoutSet,
	// Slow statements seen from the client and the database's own log,
	// and the database's CPU they drive, are one failure.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSaturation && databaseLike(f)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if set := h.fact("timeout_set"); set != "" {
			d := fmt.Sprintf("the database cancels the statements of %s at a statement timeout set shorter than they run: %s", h.Subject, set)
			if l := h.fact("line"); l != "" && !strings.Contains(set, "—") {
				d += " — " + quote(ReadableLine(l), 200)
			}
			return d + "; the statements themselves did not change, the limit did, so a deploy after it is not the cause"
		}
		d := fmt.Sprintf("slow queries on the database behind %s: statements run for seconds (sequential scans / full table scans, likely a missing index) and hit the statement timeout", h.Subject)
		if cpu := cpuSaturationOf(h); cpu != "" {
			d += "; " + cpu
		}
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("timeout_set") != "" {
			who, v := orWord(h.fact("timeout_scope"), "the setting"), h.fact("timeout_value")
			r.high("Undo or raise the %s set on %s (was set to %s): reset it (ALTER ... RESET %s) or set a value above the longest legitimate statement, then retry the failed work", h.fact("setting"), who, v, h.fact("setting"))
			r.med("Give the long statements their own limit where they run (SET LOCAL %s in the export's transaction, a separate role), or make them fast enough (index, replica, pre-aggregation)", h.fact("setting"))
			r.low("Before lowering a timeout, check the longest runtimes of the roles it applies to (pg_stat_statements max_exec_time, the slow log) and announce it to their owners")
			return
		}
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

var (
	// A statement timeout being set, as the database's own statement log
	// or a change record says it: PostgreSQL's ALTER ROLE/USER/DATABASE ...
	// SET statement_timeout, ALTER SYSTEM SET, a parameter group's value;
	// MySQL's SET GLOBAL/PERSIST max_execution_time, MariaDB's
	// max_statement_time. The value is a duration ("5s", 5000, '30min'):
	// a client's "statement_timeout: canceling statement ..." sets nothing.
	timeoutSetRE = regexp.MustCompile(`(?i)(?:\balter\s+(role|user|database)\s+"?([\w.$-]+)"?\s+(?:in\s+database\s+"?[\w.$-]+"?\s+)?set\s+|\balter\s+system\s+set\s+|\bset\s+(?:global|persist|@@global\.)\s*)?\b(statement_timeout|max_execution_time|max_statement_time)\s*(?:=|:|\bto\b)\s*'?(\d+(?:\.\d+)?\s*(?:ms|s|min|h)?)\b'?`)
	// A statement cancelled at its timeout, in the server's or a client's
	// words.
	timeoutCancelRE = regexp.MustCompile(`(?i)canceling statement due to statement timeout|QueryCanceled|maximum statement execution time exceeded|max_execution_time exceeded|max_statement_time exceeded|Query execution was interrupted`)
)

// timeoutSet is a statement timeout set at a time, on a scope.
type timeoutSet struct {
	setting, value, scope, line string
	at                          time.Time
}

// detectTimeoutSet finds a statement timeout set before statements began
// to be cancelled at it: the setting statement in the database's own log
// (log_statement records ALTER ROLE ... SET statement_timeout) or a change
// that names the setting and its value. The cancelled statements are then
// not slow because of a plan or a deploy: the limit moved under them. A
// finding per subject whose slow-query findings show cancels carries the
// setting, its value, its scope and when.
func detectTimeoutSet(ev *Gathered, found []Finding) []Finding {
	var cancels []Finding
	var first time.Time
	for _, f := range found {
		if f.Kind == KindSlowQuery && matchLine(timeoutCancelRE, f.fact("line")+" "+f.Summary+" "+strings.Join(f.Evidence, " ")) {
			cancels = append(cancels, f)
			if first.IsZero() || f.Time.Before(first) {
				first = f.Time
			}
		}
	}
	for _, ls := range ev.Logs {
		for _, t := range ls.Templates {
			if matchLine(timeoutCancelRE, t.Example) && !t.FirstSeen.IsZero() && (first.IsZero() || t.FirstSeen.Before(first)) {
				first = t.FirstSeen
			}
		}
	}
	if len(cancels) == 0 {
		return nil
	}
	set := latestTimeoutSet(ev, first)
	if set == nil {
		return nil
	}
	what := fmt.Sprintf("%s set to %s", set.setting, set.value)
	if set.scope != "" {
		what += " on " + set.scope
	}
	at := set.at.UTC().Format("2006-01-02 15:04 UTC")
	desc := fmt.Sprintf("%s at %s (%s)", what, at, quote(ReadableLine(set.line), 160))
	var out []Finding
	seen := map[string]bool{}
	for _, c := range cancels {
		if seen[c.Subject] {
			continue
		}
		seen[c.Subject] = true
		f := Finding{Kind: KindSlowQuery, Subject: c.Subject, Object: c.Object, Namespace: c.Namespace,
			Time: set.at, Severity: c.Severity, Weight: 0.9, Source: c.Source,
			Summary:  fmt.Sprintf("statements cancelled at a statement timeout: %s at %s", what, at),
			Evidence: []string{"the statement timeout was set: " + desc}}
		f.setFact("timeout_set", desc)
		f.setFact("timeout_value", set.value)
		f.setFact("timeout_scope", set.scope)
		f.setFact("setting", set.setting)
		f.setFact("why", what+", shorter than the statements run")
		f.setFact("line", c.fact("line"))
		out = append(out, f)
	}
	return out
}

// latestTimeoutSet is the last statement timeout set before the first
// cancel (or at any time when no cancel is dated): from the database's
// statement log, else from the changes.
func latestTimeoutSet(ev *Gathered, first time.Time) *timeoutSet {
	var best *timeoutSet
	consider := func(text string, at time.Time) {
		m := findSubmatch(timeoutSetRE, text)
		if m == nil || at.IsZero() || !first.IsZero() && at.After(first) {
			return
		}
		s := &timeoutSet{setting: strings.ToLower(m[3]), value: m[4], line: text, at: at}
		switch kind := strings.ToLower(m[1]); {
		case kind != "":
			s.scope = kind + " " + m[2]
		case strings.Contains(strings.ToLower(m[0]), "system"), strings.Contains(strings.ToLower(m[0]), "global"), strings.Contains(strings.ToLower(m[0]), "persist"):
			s.scope = "the whole server"
		}
		if best == nil || at.After(best.at) {
			best = s
		}
	}
	for _, ls := range ev.Logs {
		for _, t := range ls.Templates {
			consider(t.Example, t.FirstSeen)
		}
	}
	if best != nil {
		return best
	}
	for _, cs := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range cs {
			consider(c.Description, c.Timestamp)
		}
	}
	return best
}
