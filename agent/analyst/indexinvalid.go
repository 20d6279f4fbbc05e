package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindIndexInvalid is an index the database keeps but does not use: a
// PostgreSQL CREATE INDEX CONCURRENTLY that failed (cancelled at a
// statement or lock timeout, a deadlock, a duplicate key of a unique
// index) leaves the index behind marked INVALID. The planner ignores it;
// when a migration dropped the index it replaces first, the queries that
// used the old one scan the whole table from then on, slow without an
// error.
const KindIndexInvalid Kind = "index_invalid"

// The evidence read:
//
//   - psql's \d TABLE, whose Indexes: list marks the index INVALID
//     ("orders_customer_id_created_at_idx" btree (customer_id, created_at DESC) INVALID);
//   - a query of pg_index.indisvalid (a row of the index whose indisvalid is f);
//   - the database's statement log: the build's "STATEMENT:  CREATE INDEX
//     CONCURRENTLY ..." under its ERROR ("canceling statement due to
//     statement timeout", "deadlock detected", "could not create unique
//     index"), the "DROP INDEX ..." before it;
//   - a migration tool's log quoting the failed statement with its error
//     (golang-migrate, Flyway, Alembic, Rails: "(details: pq: canceling
//     statement due to statement timeout)");
//   - plans: auto_explain or EXPLAIN's "Seq Scan on TABLE".
var indexInvalid = &mechanism{
	kind:   KindIndexInvalid,
	class:  classCause,
	label:  "index left invalid by a failed concurrent build (queries scan the table)",
	detect: detectIndexInvalid,
	// The slow statements and the database's CPU they drive are its
	// consequences, in whichever log or metric they show.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Kind == KindSlowQuery || f.Kind == KindSaturation && databaseLike(f) || f.Kind == KindSlowOperation && databaseLike(f)
	},
	// A migration or schema change built and dropped the indexes.
	fitsChange: changeSays(indexChangeRE),
	describe:   describeIndexInvalid,
	recommend:  recommendIndexInvalid,
}

var (
	// indexBuildRE is a concurrent index build; its index and table.
	indexBuildRE = regexp.MustCompile(`(?i)\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([\w$.]+)"?\s+ON\s+(?:ONLY\s+)?"?([\w$.]+)"?`)
	// indexDropRE is an index dropped.
	indexDropRE = regexp.MustCompile(`(?i)\bDROP\s+INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+EXISTS\s+)?"?([\w$.]+)"?`)
	// indexBuildFailRE is what cancels or fails an index build.
	indexBuildFailRE = regexp.MustCompile(`(?i)canceling statement due to (?:statement|lock) timeout|canceling statement due to user request|deadlock detected|could not create unique index|terminating connection due to administrator command|lock_timeout|statement_timeout`)
	// invalidIndexRE is an index psql's \d lists as INVALID.
	invalidIndexRE = regexp.MustCompile(`^\s*"([\w$.]+)"\s+(?:PRIMARY KEY,\s+|UNIQUE(?: CONSTRAINT)?,\s+)?(?:btree|hash|gin|gist|brin|spgist|bloom)\b.*\bINVALID\s*$`)
	// psqlTableRE is the header of psql's \d TABLE.
	psqlTableRE = regexp.MustCompile(`^\s*(?:Table|Partitioned table)\s+"([\w$.]+)"`)
	// seqScanRE is a plan's full scan of a table.
	seqScanRE = regexp.MustCompile(`(?:Parallel\s+)?Seq Scan on "?([\w$.]+)"?`)
	// identRE is an SQL identifier, bare or qualified.
	identRE = regexp.MustCompile(`^[\w$.]+$`)
	// indexChangeRE is a change that builds or drops indexes.
	indexChangeRE = regexp.MustCompile(`(?i)migrat|\bindex|schema|\bddl\b|flyway|liquibase|alembic|\bmigrate\b`)
	// rdsGroupRE is an RDS or Aurora log group: the instance or cluster it
	// is of.
	rdsGroupRE = regexp.MustCompile(`^/aws/(?:rds|docdb|neptune)/(?:instance|cluster)/([^/]+)/`)
)

// tableName drops a schema ("public.orders" → "orders").
func tableName(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// rdsInstanceOfGroup is the RDS instance or cluster a log group is of, ""
// for another group.
func rdsInstanceOfGroup(group string) string {
	if m := findSubmatch(rdsGroupRE, group); m != nil {
		return m[1]
	}
	return ""
}

// invalidIndex is what the evidence says of an index left invalid.
type invalidIndex struct {
	index, table      string
	invalidFrom       string // where it is shown INVALID (\d, pg_index)
	failure, failLine string // what cancelled its build, and the line
	failedAt          time.Time
	dropped           string // the index dropped before it
	droppedAt         time.Time
	seqScan           string // a plan's full scan of its table
	instance          string
	source, subject   string
}

// invalidIndexes reads the indexes the command outputs show INVALID:
// index → table.
func invalidIndexes(cmds []evidence.CommandOutput) map[string][2]string {
	out := map[string][2]string{}
	for _, c := range cmds {
		table := ""
		pgIndex := strings.Contains(strings.ToLower(c.Run+" "+c.Command), "indisvalid")
		for _, l := range c.Lines {
			if m := findSubmatch(psqlTableRE, l); m != nil {
				table = tableName(m[1])
			}
			if m := findSubmatch(invalidIndexRE, l); m != nil {
				out[m[1]] = [2]string{table, "psql \\d lists it INVALID: " + strings.TrimSpace(l)}
				continue
			}
			if !pgIndex || !strings.Contains(l, "|") {
				continue
			}
			cells := strings.Split(l, "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if !slices.Contains(cells, "f") || !matchLine(identRE, cells[0]) {
				continue
			}
			t := ""
			if len(cells) > 2 && cells[1] != "f" && cells[1] != "t" {
				t = tableName(cells[1])
			}
			out[tableName(cells[0])] = [2]string{t, "pg_index.indisvalid is false: " + strings.TrimSpace(l)}
		}
	}
	return out
}

// detectIndexInvalid finds an index left invalid by a failed concurrent
// build, with the index it replaced, while statements on its table are
// slow or scan it whole.
func detectIndexInvalid(ev *Gathered, found []Finding) []Finding {
	shown := invalidIndexes(ev.Commands)
	byIndex := map[string]*invalidIndex{}
	var order []string
	get := func(index, table string) *invalidIndex {
		index = tableName(index)
		ii := byIndex[index]
		if ii == nil {
			ii = &invalidIndex{index: index, table: tableName(table)}
			byIndex[index] = ii
			order = append(order, index)
		}
		if ii.table == "" {
			ii.table = tableName(table)
		}
		return ii
	}
	for idx, v := range shown {
		ii := get(idx, v[0])
		ii.invalidFrom = v[1]
	}
	type dropped struct {
		index string
		at    time.Time
	}
	var drops []dropped
	seq := map[string]string{}
	for _, set := range ev.Logs {
		var fails []struct {
			at   time.Time
			line string
		}
		for _, t := range set.Templates {
			if matchLine(indexBuildFailRE, t.Example) && !matchLine(indexBuildRE, t.Example) {
				fails = append(fails, struct {
					at   time.Time
					line string
				}{t.FirstSeen, t.Example})
			}
			if m := findSubmatch(indexDropRE, t.Example); m != nil {
				drops = append(drops, dropped{tableName(m[1]), t.FirstSeen})
			}
			for _, l := range t.Lines() {
				if m := findSubmatch(seqScanRE, l); m != nil && seq[tableName(m[1])] == "" {
					seq[tableName(m[1])] = l
				}
			}
		}
		for _, t := range set.Templates {
			m := findSubmatch(indexBuildRE, t.Example)
			if m == nil {
				continue
			}
			// The build failed: the database logs it as the STATEMENT of an
			// ERROR, or a failure is logged with it (a migration tool's
			// error quotes the statement).
			var failLine string
			var failedAt time.Time
			for _, f := range fails {
				for _, at := range []time.Time{t.FirstSeen, t.LastSeen} {
					if !at.IsZero() && !f.at.IsZero() && absDur(f.at.Sub(at)) <= 5*time.Second {
						failLine, failedAt = f.line, f.at
					}
				}
			}
			if failLine == "" && !strings.Contains(t.Example, "STATEMENT:") {
				continue
			}
			ii := get(m[1], m[2])
			// The database's own log says it best; a client's quote of the
			// failure does when it is all there is.
			if ii.source == "" || rdsInstanceOfGroup(set.Source) != "" {
				ii.failLine, ii.failedAt = failLine, failedAt
				if failLine == "" {
					ii.failedAt = t.FirstSeen
				}
				ii.failure = orWord(findString(indexBuildFailRE, failLine), "the build failed")
				ii.source, ii.subject = set.Source, set.Subject
			}
			if inst := rdsInstanceOfGroup(set.Source); inst != "" {
				ii.instance = inst
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(seqScanRE, l); m != nil && seq[tableName(m[1])] == "" {
				seq[tableName(m[1])] = strings.TrimSpace(l)
			}
		}
	}
	var slow []Finding
	for _, f := range found {
		if f.Kind == KindSlowQuery {
			slow = append(slow, f)
		}
	}
	var out []Finding
	for _, idx := range order {
		ii := byIndex[idx]
		ii.seqScan = seq[ii.table]
		// Slow statements or a full scan of its table: the invalid index
		// matters to this incident.
		if len(slow) == 0 && ii.seqScan == "" {
			continue
		}
		for _, d := range drops {
			if d.index == ii.index || !ii.failedAt.IsZero() && d.at.After(ii.failedAt) {
				continue
			}
			if ii.dropped == "" || d.at.Before(ii.droppedAt) {
				ii.dropped, ii.droppedAt = d.index, d.at
			}
		}
		if ii.instance == "" {
			ii.instance = indexInstance(ev, slow)
		}
		subject := orWord(ii.instance, orWord(ii.subject, "the database"))
		at := ii.failedAt
		if !ii.droppedAt.IsZero() && (at.IsZero() || ii.droppedAt.Before(at)) {
			at = ii.droppedAt
		}
		if at.IsZero() {
			at = ev.Window.Start
		}
		f := Finding{Kind: KindIndexInvalid, Subject: subject, Object: "index " + ii.index, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
		if ii.source != "" && strings.HasPrefix(ii.source, "/aws/") {
			f.Source = SrcCloudWatch
		}
		f.setFact("index", ii.index)
		f.setFact("table", ii.table)
		f.setFact("dropped", ii.dropped)
		f.setFact("failure", ii.failure)
		f.setFact("line", orWord(ii.failLine, ii.invalidFrom))
		f.setFact("seq_scan", ii.seqScan)
		f.setFact("db_instance", ii.instance)
		why := fmt.Sprintf("index %s on %s left INVALID", ii.index, orWord(ii.table, "its table"))
		if ii.failure != "" {
			why += " by a CREATE INDEX CONCURRENTLY cancelled (" + ii.failure + ")"
		}
		if ii.dropped != "" {
			why += fmt.Sprintf(" after %s was dropped", ii.dropped)
		}
		// The migration that built and dropped the indexes ran from a
		// service's change: that change is about this index.
		for _, c := range ev.Changes {
			if c.Service != "" && matchLine(indexChangeRE, c.Description) && !c.Timestamp.After(at.Add(time.Minute)) && at.Sub(c.Timestamp) <= 24*time.Hour && !slices.Contains(f.Related, c.Service) {
				f.Related = append(f.Related, c.Service)
			}
		}
		f.setFact("why", why)
		f.Summary = fmt.Sprintf("%s: %s", subject, why)
		if ii.invalidFrom != "" {
			f.Evidence = append(f.Evidence, ii.invalidFrom)
		}
		if ii.failLine != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the concurrent build of %s failed at %s: %s", ii.index, ts(ii.failedAt), quote(ReadableLine(ii.failLine), 200)))
		}
		if ii.dropped != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("index %s was dropped at %s, before its replacement was valid", ii.dropped, ts(ii.droppedAt)))
		}
		if ii.seqScan != "" {
			f.Evidence = append(f.Evidence, "the plan scans the whole table: "+quote(ReadableLine(ii.seqScan), 200))
		}
		out = append(out, f)
	}
	return out
}

// indexInstance is the database instance the slow statements are on: the
// RDS group of their log, the one RDS instance the metrics show, or their
// own db_instance.
func indexInstance(ev *Gathered, slow []Finding) string {
	for _, set := range ev.Logs {
		if inst := rdsInstanceOfGroup(set.Source); inst != "" {
			return inst
		}
	}
	var rds []string
	for _, ms := range ev.Metrics {
		for _, s := range ms.Series {
			if id := firstLabel(s.Labels, "DBInstanceIdentifier", "DBClusterIdentifier"); id != "" && !slices.Contains(rds, id) {
				rds = append(rds, id)
			}
		}
	}
	if len(rds) == 1 {
		return rds[0]
	}
	for _, f := range slow {
		if i := f.fact("db_instance"); i != "" {
			return i
		}
	}
	return ""
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func describeIndexInvalid(h *Hypothesis, sc Scope) string {
	idx, table := orWord(h.fact("index"), "an index"), orWord(h.fact("table"), "its table")
	d := fmt.Sprintf("queries on table %s of %s scan the whole table: index %s is INVALID", table, h.Subject, idx)
	if f := h.fact("failure"); f != "" {
		d += fmt.Sprintf(", left so by its CREATE INDEX CONCURRENTLY, which was cancelled (%s) before it finished", f)
	}
	d += "; PostgreSQL keeps an invalid index but never uses it"
	if dr := h.fact("dropped"); dr != "" {
		d += fmt.Sprintf(", and the index it replaces, %s, had been dropped first, so nothing serves the statements that used it (slow, not failing)", dr)
	}
	d += h.quoteClause(" — ", "seq_scan", 160)
	return d
}

func recommendIndexInvalid(h *Hypothesis, sc Scope, r *recommender) {
	idx, table := orWord(h.fact("index"), "the invalid index"), orWord(h.fact("table"), "its table")
	r.high("Rebuild %s on %s of %s outside the statement timeout: SET statement_timeout = 0; DROP INDEX CONCURRENTLY IF EXISTS %s; CREATE INDEX CONCURRENTLY %s ON %s (...) — or REINDEX INDEX CONCURRENTLY %s (PostgreSQL 12+) — then check that pg_index.indisvalid is true", idx, table, h.Subject, idx, idx, table, idx)
	if dr := h.fact("dropped"); dr != "" {
		r.med("Write index migrations to build the new index before dropping the old one (%s was dropped before %s was valid), with the statement timeout disabled for the build; do not force a failed migration's version without checking what it left", dr, idx)
	} else {
		r.med("Run concurrent index builds with the statement timeout disabled for their session, and check what a failed migration left before forcing its version")
	}
	r.low("Alert on invalid indexes after each migration (SELECT indexrelid::regclass FROM pg_index WHERE NOT indisvalid) and on sequential scans of large tables (pg_stat_user_tables.seq_scan)")
}
