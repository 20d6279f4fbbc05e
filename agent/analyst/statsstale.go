package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A table whose planner statistics no longer describe it. A bulk load, a
// backfill or a restore writes millions of rows into a table and nothing
// analyzes it afterwards (the loader turned autovacuum off on the table
// for speed and left it off, or autoanalyze has not come round yet): the
// planner still believes the table as small and as distributed as at its
// last ANALYZE, misestimates how many rows a filter keeps and picks a
// plan that was cheap for the old table (a backward scan of an ordering
// index filtering millions of rows, a nested loop over what it thinks is
// a handful). The queries are slow without an error and the database's
// CPU and reads rise. PostgreSQL says it in its own views and plans:
//
//   - pg_stat_user_tables: n_mod_since_analyze close to n_live_tup, and
//     last_analyze / last_autoanalyze from before the load;
//   - pg_class: reltuples far below the live rows, reloptions
//     {autovacuum_enabled=false};
//   - EXPLAIN ANALYZE: a node on the table whose "Rows Removed by
//     Filter" runs to millions, its estimated rows far from the actual;
//   - the loader's own log: "ALTER TABLE t SET (autovacuum_enabled =
//     false)", "inserted N rows into t", "COPY N".
//
// psql prints the views aligned, expanded (\x) or boxed (pgcli); the
// loader's change or its table, when the evidence names it, is the
// trigger.

// KindStatsStale is a table queried with planner statistics from before
// most of its rows were written.
const KindStatsStale Kind = "stats_stale"

var statsStale = &mechanism{
	kind:   KindStatsStale,
	class:  classCause,
	label:  "stale planner statistics after a bulk load (bad query plan)",
	detect: detectStatsStale,
	// The slow statements and the database's load they drive are its
	// consequences, in whichever log or metric they show.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSaturation && databaseLike(f) || f.Kind == KindSlowOperation && databaseLike(f) ||
			namedByTop(h, f, KindStatsStale)
	},
	// The load that wrote the rows (its job, the table, a backfill or
	// import) is the trigger; a deploy of a client is not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		if tb := strings.ToLower(h.fact("table")); tb != "" && strings.Contains(t, tb) {
			return true
		}
		if l := strings.ToLower(h.fact("loader")); l != "" && strings.Contains(t, l) {
			return true
		}
		return matchLine(bulkLoadChangeRE, t)
	},
	describe:  describeStatsStale,
	recommend: recommendStatsStale,
}

var (
	// bulkLoadChangeRE is a change that writes many rows at once.
	bulkLoadChangeRE = regexp.MustCompile(`(?i)backfill|bulk|\bimport|\bload\b|\bloader\b|\brestore|pg_restore|\bcopy\b|autovacuum`)
	// autovacuumOffRE is a table's autovacuum turned off: ALTER TABLE's
	// statement (in a loader's or the database's log), or reloptions.
	autovacuumOffRE  = regexp.MustCompile(`(?i)\bALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?"?([\w$.]+)"?\s+SET\s*\(\s*autovacuum_enabled\s*=\s*'?(?:false|off|0)\b`)
	reloptionsOffRE  = regexp.MustCompile(`(?i)autovacuum_enabled\s*=\s*(?:false|off|0)\b`)
	bulkRowsRE       = regexp.MustCompile(`(?i)\b(?:inserted|copied|loaded|wrote|imported)\s+([\d,_]+)\s+(?:rows|records|tuples)\s+(?:into|to)\s+"?([\w$.]+)"?`)
	copyRowsRE       = regexp.MustCompile(`(?i)^\s*COPY\s+(\d+)\s*$`)
	planFilteredRE   = regexp.MustCompile(`Rows Removed by Filter:\s*(\d+)`)
	planNodeRE       = regexp.MustCompile(`^\s*(?:->\s+)?((?:Parallel\s+)?(?:Seq Scan|Index Scan(?: Backward)?|Index Only Scan(?: Backward)?|Bitmap Heap Scan)(?: using ([\w$.]+))? on "?([\w$.]+)"?)`)
	planEstimateRE   = regexp.MustCompile(`\(cost=[\d.]+\.\.[\d.]+ rows=(\d+) width=\d+\) \(actual time=[\d.]+\.\.[\d.]+ rows=(\d+)`)
	staleStatsNumRE  = regexp.MustCompile(`^-?\d+$`)
	statsTimeColumns = []string{"last_analyze", "last_autoanalyze"}
)

// tableStats is what the evidence says of one table's statistics.
type tableStats struct {
	table                 string
	live, mods, reltuples int64
	lastAnalyze           string
	autovacOff            string // where autovacuum is shown off
	plan, planIndex       string // a plan node on the table and the index it uses
	filtered, est, actual int64
	instance              string
	never                 bool // no last_analyze nor last_autoanalyze, or reltuples -1
}

func sqlInt(s string) int64 {
	s = strings.TrimSpace(s)
	if !matchLine(staleStatsNumRE, s) {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// stale reports whether most of the table was written since it was last
// analyzed.
func (s *tableStats) stale() bool {
	if s.mods >= 100000 && s.live > 0 && s.mods*5 >= s.live {
		return true
	}
	// The planner's row count far below the rows there are.
	return s.live >= 100000 && s.reltuples >= 0 && s.reltuples*5 <= s.live
}

// detectStatsStale reads tables most of whose rows were written since
// their last ANALYZE, with the plan gone wrong on them or autovacuum off,
// and the load that wrote them.
func detectStatsStale(ev *Gathered, _ []Finding) []Finding {
	byTable := map[string]*tableStats{}
	var order []string
	get := func(name string) *tableStats {
		name = tableName(strings.Trim(name, `"`))
		s := byTable[name]
		if s == nil {
			s = &tableStats{table: name, live: -1, mods: -1, reltuples: -1, filtered: -1, est: -1, actual: -1}
			byTable[name] = s
			order = append(order, name)
		}
		return s
	}
	for _, c := range ev.Commands {
		inst, _ := sqlInstanceOf(c)
		for _, t := range sqlTables(c.Lines) {
			if !slices.Contains(t.cols, "relname") {
				continue
			}
			for r := range t.rows {
				name := t.cell(r, "relname")
				if name == "" {
					continue
				}
				s := get(name)
				if s.instance == "" {
					s.instance = inst
				}
				if n := sqlInt(t.cell(r, "n_live_tup")); n >= 0 {
					s.live = n
				}
				if n := sqlInt(t.cell(r, "n_mod_since_analyze")); n >= 0 {
					s.mods = n
				}
				if n := sqlInt(t.cell(r, "reltuples")); n >= 0 {
					s.reltuples = n
				}
				for _, col := range statsTimeColumns {
					if v := t.cell(r, col); v != "" && v > s.lastAnalyze {
						s.lastAnalyze = v
					}
				}
				// Never analyzed: both times shown empty, or the planner's
				// row count unknown (-1, PostgreSQL 14 and later).
				if slices.Contains(t.cols, "last_analyze") && slices.Contains(t.cols, "last_autoanalyze") && nullCell(t.cell(r, "last_analyze")) == "" && nullCell(t.cell(r, "last_autoanalyze")) == "" ||
					strings.TrimSpace(t.cell(r, "reltuples")) == "-1" {
					s.never = s.lastAnalyze == ""
				}
				if o := t.cell(r, "reloptions"); matchLine(reloptionsOffRE, o) {
					s.autovacOff = "pg_class.reloptions " + o
				}
			}
		}
		// EXPLAIN ANALYZE: the node on a table that filtered the most.
		node, index, table := "", "", ""
		est, actual := int64(-1), int64(-1)
		for _, l := range c.Lines {
			l = strings.TrimPrefix(strings.TrimSpace(l), "|") // a boxed plan's cell
			if m := findSubmatch(planNodeRE, l); m != nil {
				node, index, table = strings.TrimSpace(m[1]), m[2], tableName(m[3])
				est, actual = -1, -1
				if e := findSubmatch(planEstimateRE, l); e != nil {
					est, actual = sqlInt(e[1]), sqlInt(e[2])
				}
				continue
			}
			if m := findSubmatch(planFilteredRE, l); m != nil && table != "" {
				n := sqlInt(m[1])
				s := get(table)
				if n > s.filtered {
					s.filtered, s.plan, s.planIndex, s.est, s.actual = n, node, index, est, actual
					if s.instance == "" {
						s.instance = inst
					}
				}
			}
		}
	}
	// The loader's log: autovacuum turned off on the table, the rows it
	// wrote.
	type load struct {
		who, line, offLine string
		rows               int64
		at                 time.Time
	}
	loads := map[string]*load{}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				at := t.FirstSeen
				if lt, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
					at = lt
				}
				if m := findSubmatch(autovacuumOffRE, l); m != nil {
					tb := tableName(m[1])
					ld := loads[tb]
					if ld == nil {
						ld = &load{who: set.Subject}
						loads[tb] = ld
					}
					ld.offLine = l
					if byTable[tb] != nil && byTable[tb].autovacOff == "" {
						byTable[tb].autovacOff = fmt.Sprintf("%s turned it off: %s", set.Subject, quote(ReadableLine(l), 160))
					}
				}
				if m := findSubmatch(bulkRowsRE, l); m != nil {
					n, _ := strconv.ParseInt(strings.NewReplacer(",", "", "_", "").Replace(m[1]), 10, 64)
					tb := tableName(m[2])
					ld := loads[tb]
					if ld == nil {
						ld = &load{who: set.Subject}
						loads[tb] = ld
					}
					if n > ld.rows {
						ld.rows, ld.line, ld.at, ld.who = n, l, at, set.Subject
					}
				}
			}
		}
	}
	// The stalest table the plan went wrong on, or whose autovacuum is
	// off.
	var best *tableStats
	for _, name := range order {
		s := byTable[name]
		if !s.stale() {
			continue
		}
		if s.filtered < 100000 && s.autovacOff == "" && (s.est < 0 || s.actual < 0) {
			continue
		}
		if best == nil || s.filtered > best.filtered || s.filtered == best.filtered && s.mods > best.mods {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	instance := orWord(best.instance, "the database")
	f := Finding{Kind: KindStatsStale, Subject: instance, Object: "table " + best.table, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("table", best.table)
	f.setFact("db_instance", instance)
	stat := fmt.Sprintf("table %s of %s", best.table, instance)
	var facts []string
	if best.mods >= 0 {
		facts = append(facts, fmt.Sprintf("%d rows modified since its last analyze", best.mods))
	}
	if best.live >= 0 {
		facts = append(facts, fmt.Sprintf("%d live", best.live))
	}
	if best.reltuples >= 0 {
		facts = append(facts, fmt.Sprintf("the planner's estimate (pg_class.reltuples) %d", best.reltuples))
	}
	if best.lastAnalyze != "" {
		facts = append(facts, "last analyzed "+best.lastAnalyze)
	}
	f.setFact("counts", strings.Join(facts, ", "))
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", stat, strings.Join(facts, ", ")))
	if best.autovacOff != "" {
		f.setFact("autovacuum", "autovacuum is disabled on it (autovacuum_enabled=false), so no autoanalyze refreshes them")
		f.Evidence = append(f.Evidence, fmt.Sprintf("autovacuum is off on %s: %s", best.table, best.autovacOff))
		f.Weight = 0.9
	}
	if best.filtered >= 0 {
		p := fmt.Sprintf("%s removes %d rows by filter", best.plan, best.filtered)
		if best.est >= 0 && best.actual >= 0 {
			p += fmt.Sprintf(" (estimated %d rows, actual %d)", best.est, best.actual)
		}
		f.setFact("plan", p)
		f.Evidence = append(f.Evidence, "the query plan: "+p)
	}
	f.Time = ev.Window.Start
	statsNeverAnalyzed(&f, ev, best, byTable)
	if ld := loads[best.table]; ld != nil {
		f.setFact("loader", ld.who)
		var what string
		switch {
		case ld.line != "":
			what = fmt.Sprintf("%s loaded %d rows into %s at %s: %s", ld.who, ld.rows, best.table, hm(ld.at), quote(ReadableLine(ld.line), 160))
			f.Time = ld.at
		default:
			what = fmt.Sprintf("%s turned autovacuum off on %s: %s", ld.who, best.table, quote(ReadableLine(ld.offLine), 160))
		}
		if ld.offLine != "" && ld.line != "" {
			what += " after turning autovacuum off on it"
		}
		f.setFact("load", what)
		f.Evidence = append(f.Evidence, what)
		if ld.who != instance {
			f.Related = appendNew(f.Related, ld.who)
		}
	}
	if s := ev.Scope.Service; s != "" && s != instance {
		f.Related = appendNew(f.Related, s)
		f.setFact("caller", s)
	}
	f.setFact("why", fmt.Sprintf("the planner's statistics of %s are stale, so its queries run with a bad plan", best.table))
	f.Summary = fmt.Sprintf("%s: stale planner statistics on table %s (bad query plan)", instance, best.table)
	return []Finding{f}
}

var (
	// pgUpgradeRE is a change that moved the database to a new major
	// version (pg_upgrade, a dump and restore): the planner statistics
	// are not carried over.
	pgUpgradeRE = regexp.MustCompile(`(?i)pg_upgrade|major(?: version)? upgrade|\b(?:postgres(?:ql)?|pg)\s*\d+\s*(?:->|→|to)\s*\d+|\b\d{2}\s*(?:->|→)\s*\d{2}\b`)
	// An automation task that analyzes, and its answer.
	analyzeTaskRE = regexp.MustCompile(`(?i)TASK \[([^\]]*(?:analy[sz]e|vacuumdb)[^\]]*)\]`)
	analyzeOffRE  = regexp.MustCompile(`(?i)\b(\w*analy[sz]e\w*)[=:]\s*(false|no|0|off)\b`)
)

// statsNeverAnalyzed says that the table was never analyzed and, when the
// database was upgraded to a new major version before, that the upgrade
// left it without statistics: pg_upgrade does not carry them, and the
// ANALYZE it asks for (vacuumdb --analyze-in-stages) did not run, in the
// words of the automation's log when a transcript shows its task skipped.
func statsNeverAnalyzed(f *Finding, ev *Gathered, best *tableStats, byTable map[string]*tableStats) {
	if !best.never {
		return
	}
	var others []string
	for name, s := range byTable {
		if s.never && name != best.table && s.live > 0 {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	n := "it has never been analyzed (no last_analyze or last_autoanalyze"
	if best.reltuples == -1 {
		n += ", pg_class.reltuples -1"
	}
	n += ")"
	if len(others) > 0 {
		n += fmt.Sprintf(", nor have %s", strings.Join(others, ", "))
	}
	f.setFact("never", n)
	f.Evidence = append(f.Evidence, "never analyzed: "+best.table+prefixed(", ", strings.Join(others, ", ")))
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if !matchLine(pgUpgradeRE, c.Description) || c.Timestamp.After(ev.Window.End) {
			continue
		}
		f.setFact("upgrade", fmt.Sprintf("the major version upgrade %s (%s) left them without statistics: pg_upgrade does not carry the planner statistics over, and no ANALYZE (vacuumdb --analyze-in-stages) ran after it", quote(c.Description, 160), c.Timestamp.UTC().Format("2006-01-02 15:04 UTC")))
		f.setFact("cause_at", c.Timestamp.UTC().Format(time.RFC3339))
		f.setFact("cause_event", "major version upgrade without ANALYZE: "+quote(c.Description, 160))
		f.Evidence = append(f.Evidence, "change: "+quote(c.Description, 200))
		f.Weight = max(f.Weight, 0.9)
	}
	// The automation's log: the analyze task skipped, a flag turning it
	// off.
	var said []string
	for _, c := range ev.Commands {
		for i, l := range c.Lines {
			if m := findSubmatch(analyzeTaskRE, l); m != nil {
				for j := i + 1; j < len(c.Lines) && j <= i+3; j++ {
					if strings.Contains(c.Lines[j], "skipping:") {
						said = append(said, fmt.Sprintf("the task %q was skipped", strings.TrimSpace(m[1])))
						break
					}
				}
			}
			if m := findSubmatch(analyzeOffRE, l); m != nil && !slices.Contains(said, "it ran with "+m[0]) {
				said = append(said, "it ran with "+m[0])
			}
		}
	}
	if len(said) > 0 && f.fact("upgrade") != "" {
		f.setFact("skipped", strings.Join(said, "; "))
		f.Evidence = append(f.Evidence, "the upgrade's log: "+strings.Join(said, "; "))
	}
}

func describeStatsStale(h *Hypothesis, sc Scope) string {
	tb := orWord(h.fact("table"), "a table")
	d := fmt.Sprintf("the planner statistics of table %s on %s are stale", tb, h.Subject)
	d += h.wrapped(" (", "counts", ")")
	d += h.clause(" since ", "load")
	d += h.clause("; ", "never")
	d += h.clause("; ", "upgrade")
	d += h.clause(": ", "skipped")
	d += h.clause("; ", "autovacuum")
	d += "; the planner misestimates the table and picks a bad query plan"
	d += h.clause(": ", "plan")
	d += "; each query is slow without failing and the database reads far more than it returns"
	if c := h.fact("caller"); c != "" {
		d += fmt.Sprintf(", so %s is slow", c)
	}
	return d
}

func recommendStatsStale(h *Hypothesis, sc Scope, r *recommender) {
	tb := orWord(h.fact("table"), "the table")
	r.high("Run ANALYZE %s on %s now (VERBOSE shows it sampled), then check the plan with EXPLAIN (ANALYZE, BUFFERS)", tb, h.Subject)
	if h.fact("autovacuum") != "" {
		r.high("Re-enable autovacuum on %s: ALTER TABLE %s RESET (autovacuum_enabled)", tb, tb)
	}
	r.med("Make bulk loads and backfills ANALYZE the tables they write (and restore any autovacuum setting they changed) before they finish")
	r.low("Alert on tables whose n_mod_since_analyze is a large share of n_live_tup, or whose autovacuum is disabled")
}
