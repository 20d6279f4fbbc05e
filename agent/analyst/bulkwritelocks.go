package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A bulk write that holds row locks for its whole run. One statement
// deletes or updates many rows (a purge of old rows, a backfill) in a
// single transaction; it locks every row it reads and keeps the locks
// until it commits. Without an index on the column it filters by, it
// reads (and under InnoDB's REPEATABLE READ locks, gaps included) the
// whole table, so every other writer of the table (an INSERT's insert
// intention lock, an UPDATE of a row it passed) waits for it and gives up
// at the lock wait timeout. It is read from the database's lock views as a
// SQL client printed them: sys.innodb_lock_waits (waiting and blocking
// thread, the blocking query and its transaction's age) or
// pg_blocking_pids with pg_stat_activity; SHOW ENGINE INNODB STATUS (the
// blocking thread's client address and user, its row lock count); EXPLAIN
// of the statement (type ALL, no key; Seq Scan) and SHOW INDEX (no index
// on the filtered column); the client's address resolved to its pod.

// KindBulkWriteLocks is writers waiting for the row locks of one long
// bulk write.
const KindBulkWriteLocks Kind = "bulk_write_locks"

var bulkWriteLocks = &mechanism{
	kind:    KindBulkWriteLocks,
	class:   classCause,
	label:   "a long bulk write (one DELETE/UPDATE over many rows) holding row locks other writers wait for",
	detect:  detectBulkWriteLocks,
	related: relatedToTop(KindBulkWriteLocks),
	refines: []Kind{KindDBBlocked},
	// A release of the job that runs the bulk write changed how it
	// writes.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		job := strings.ToLower(h.fact("client"))
		return job != "" && (strings.EqualFold(c.Subject, job) || strings.Contains(changeText(c), job)) || matchLine(bulkChangeRE, changeText(c))
	},
	describe:  describeBulkWriteLocks,
	recommend: recommendBulkWriteLocks,
}

var (
	// A change that alters a bulk write: a purge, a cleanup, batching.
	bulkChangeRE = regexp.MustCompile(`(?i)\bpurge|cleanup|clean-up|retention|batch(ed|ing)?\b|single[- ]statement|backfill`)
	// A bulk write statement: DELETE or UPDATE filtered by a range or a
	// condition, not one row by its key.
	bulkStmtRE = regexp.MustCompile(`(?i)^\s*(DELETE\s+FROM|UPDATE)\s+` + "[`\"]?" + `([\w.]+)`)
	// The column a statement filters by ("WHERE created_at < …").
	whereColRE = regexp.MustCompile("(?i)\\bWHERE\\s+[`\"]?(\\w+)[`\"]?\\s*(?:<|>|<=|>=|=|BETWEEN|IN|IS|LIKE)")
	// InnoDB status: a transaction's header and its thread's line.
	innodbTrxRE    = regexp.MustCompile(`^---TRANSACTION \d+, ACTIVE (\d+) sec`)
	innodbThreadRE = regexp.MustCompile(`^MySQL thread id (\d+), OS thread handle \d+, query id \d+ (\S+) (\S+)`)
	innodbLocksRE  = regexp.MustCompile(`(\d+) row lock\(s\)`)
)

// bulkWrite is what the lock views say of one blocking bulk write.
type bulkWrite struct {
	inst, where, source string
	pid, query, table   string
	trxAge              string
	waiters             int
	waitQuery           string
	host, user          string
	rowLocks            string
	scan                string // what EXPLAIN says of its plan
	column              string // the column it filters by
	noIndex             string // the indexes of its table, none on column
	isolation           string
}

func detectBulkWriteLocks(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, cmds := range groupSQLCommands(ev.Commands) {
		if b := readBulkWrite(cmds); b != nil {
			out = append(out, b.finding(ev, found))
		}
	}
	return out
}

func readBulkWrite(cmds []evidence.CommandOutput) *bulkWrite {
	inst, where := sqlInstanceOf(cmds[0])
	b := &bulkWrite{inst: shortDBHost(inst), where: where, source: cmds[0].Source}
	blocking := map[string]int{}
	queries := map[string]string{}
	ages := map[string]string{}
	waitQ := map[string]string{}
	var tables []sqlTable
	var lines []string
	for _, c := range cmds {
		tables = append(tables, sqlTables(c.Lines)...)
		lines = append(lines, c.Lines...)
	}
	for _, t := range tables {
		if !slices.Contains(t.cols, "blocking_pid") && !slices.Contains(t.cols, "blocking_thread") {
			continue
		}
		for r := range t.rows {
			p := nullCell(orWord(t.cell(r, "blocking_pid"), t.cell(r, "blocking_thread")))
			if p == "" {
				continue
			}
			blocking[p]++
			if q := nullCell(t.cell(r, "blocking_query")); q != "" {
				queries[p] = q
			}
			if a := nullCell(t.cell(r, "blocking_trx_age")); a != "" {
				ages[p] = a
			}
			if q := nullCell(t.cell(r, "waiting_query")); q != "" {
				waitQ[p] = q
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(blocking)) {
		n := blocking[p]
		if n >= 2 && bulkStmtRE.MatchString(queries[p]) && (b.pid == "" || n > blocking[b.pid]) {
			b.pid = p
		}
	}
	if b.pid == "" {
		return nil
	}
	b.query, b.trxAge, b.waiters, b.waitQuery = queries[b.pid], ages[b.pid], blocking[b.pid], waitQ[b.pid]
	b.table = strings.ToLower(findSubmatch(bulkStmtRE, b.query)[2])
	if m := findSubmatch(whereColRE, b.query); m != nil {
		b.column = strings.ToLower(m[1])
	}
	// SHOW ENGINE INNODB STATUS: the blocking thread's client and locks.
	for i, l := range lines {
		m := findSubmatch(innodbThreadRE, strings.TrimSpace(l))
		if m == nil || m[1] != b.pid {
			continue
		}
		b.host, b.user = m[2], m[3]
		for j := i - 1; j >= 0 && j >= i-4; j-- {
			if lm := findSubmatch(innodbLocksRE, lines[j]); lm != nil {
				b.rowLocks = lm[1]
			}
			if tm := findSubmatch(innodbTrxRE, strings.TrimSpace(lines[j])); tm != nil && b.trxAge == "" {
				b.trxAge = tm[1] + " sec"
			}
		}
		// The full statement follows the thread's line.
		if i+1 < len(lines) && bulkStmtRE.MatchString(lines[i+1]) && len(strings.TrimSpace(lines[i+1])) > len(b.query) {
			b.query = strings.TrimSpace(lines[i+1])
		}
	}
	// EXPLAIN of a statement on the table, SHOW INDEX of the table, the
	// isolation level.
	var indexed []string
	for _, t := range tables {
		for r := range t.rows {
			switch {
			case slices.Contains(t.cols, "possible_keys") && slices.Contains(t.cols, "type") && strings.EqualFold(t.cell(r, "table"), b.table):
				if strings.EqualFold(t.cell(r, "type"), "ALL") && nullCell(t.cell(r, "key")) == "" {
					b.scan = fmt.Sprintf("EXPLAIN shows a full table scan (type ALL, no usable key, %s rows examined)", orWord(t.cell(r, "rows"), "all"))
				}
			case slices.Contains(t.cols, "key_name") && slices.Contains(t.cols, "column_name") && strings.EqualFold(t.cell(r, "table"), b.table):
				indexed = append(indexed, strings.ToLower(t.cell(r, "column_name")))
			case slices.Contains(t.cols, "variable_name") && slices.Contains(t.cols, "value"):
				if n := strings.ToLower(t.cell(r, "variable_name")); n == "transaction_isolation" || n == "tx_isolation" {
					b.isolation = t.cell(r, "value")
				}
			}
		}
	}
	for _, l := range lines {
		if m := regexp.MustCompile(`(?i)Seq Scan on (\w+)`).FindStringSubmatch(l); m != nil && strings.EqualFold(m[1], b.table) && b.scan == "" {
			b.scan = "EXPLAIN shows a sequential scan of " + b.table
		}
	}
	if b.column != "" && len(indexed) > 0 && !slices.Contains(indexed, b.column) {
		b.noIndex = fmt.Sprintf("SHOW INDEX of %s lists indexes on %s only: none on %s", b.table, strings.Join(slices.Compact(indexed), ", "), b.column)
	}
	// A bulk write, not one row's update: its plan reads the table, it
	// holds many row locks, or its transaction has run for minutes.
	age, _ := sqlDuration(strings.TrimSuffix(b.trxAge, " sec"))
	locks, _ := strconv.Atoi(b.rowLocks)
	if b.scan == "" && b.noIndex == "" && locks < 1000 && age < time.Minute {
		return nil
	}
	return b
}

func (b *bulkWrite) finding(ev *Gathered, found []Finding) Finding {
	f := Finding{Kind: KindBulkWriteLocks, Subject: b.inst, Object: "database " + b.inst, Time: ev.Window.End, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	if b.scan != "" || b.noIndex != "" {
		f.Weight = 0.9
	}
	// The transaction began its age before the capture.
	if d, ok := sqlDuration(strings.TrimSuffix(b.trxAge, " sec")); ok && d > 0 {
		f.Time = ev.Window.End.Add(-d).Truncate(time.Second)
	}
	// Its client: the pod whose address the thread connects from.
	client := ""
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if b.host != "" && p.Status.PodIP == b.host {
			if j := jobOfPod(p); j != "" {
				client = orWord(cronJobOf(j), j)
			} else {
				client = WorkloadOfPod(p)
			}
			f.setFact("client_pod", p.Name)
		}
	}
	f.setFact("client", client)
	f.setFact("table", b.table)
	f.setFact("statement", truncate(b.query, 200))
	f.setFact("column", b.column)
	f.setFact("scan", b.scan)
	f.setFact("no_index", b.noIndex)
	f.setFact("waiters", fmt.Sprint(b.waiters))
	f.setFact("trx_age", b.trxAge)
	f.setFact("row_locks", b.rowLocks)
	f.setFact("isolation", b.isolation)
	who := "session " + b.pid
	var parts []string
	if b.user != "" {
		parts = append(parts, "user "+b.user)
	}
	if b.host != "" {
		parts = append(parts, "from "+b.host)
	}
	if client != "" {
		parts = append(parts, "pod "+f.fact("client_pod")+" of "+client)
	}
	if len(parts) > 0 {
		who += " (" + strings.Join(parts, ", ") + ")"
	}
	f.setFact("holder", who)
	e := fmt.Sprintf("the lock waits on %s (%s): %d sessions wait for row locks of %s, which runs %s", b.where, b.source, b.waiters, who, quote(b.query, 160))
	if b.trxAge != "" {
		e += " in a transaction open " + b.trxAge
	}
	f.Evidence = append(f.Evidence, e)
	if b.rowLocks != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("SHOW ENGINE INNODB STATUS: its transaction holds %s row locks", b.rowLocks))
	}
	for _, x := range []string{b.scan, b.noIndex} {
		if x != "" {
			f.Evidence = append(f.Evidence, x)
		}
	}
	if client != "" {
		f.Related = appendNew(f.Related, client)
	}
	// The writers that time out: the lock waits found on the callers.
	for i := range found {
		g := &found[i]
		if g.Kind == KindDBBlocked && g.Subject != b.inst && !isNodeName(g.Subject) {
			f.Related = appendNew(f.Related, g.Subject)
		}
	}
	for _, c := range clientsOfDatabase(ev, b.inst) {
		f.Related = appendNew(f.Related, c.name)
	}
	f.setFact("affected", strings.Join(f.Related, ","))
	f.Summary = fmt.Sprintf("writers on %s wait for the row locks of a bulk write on %s (%s)", b.inst, b.table, truncate(b.query, 80))
	return f
}

func describeBulkWriteLocks(h *Hypothesis, sc Scope) string {
	table := h.fact("table")
	d := fmt.Sprintf("a bulk write holds row locks on %s of %s: %s runs %s as one statement in one transaction", table, h.Subject, h.fact("holder"), quote(h.fact("statement"), 160))
	d += h.clause(", open ", "trx_age")
	d += h.clause(", holding row locks: ", "row_locks")
	if c := h.fact("column"); c != "" && (h.fact("scan") != "" || h.fact("no_index") != "") {
		d += fmt.Sprintf("; there is no index on %s, so it is a full table scan that locks every row it reads", c)
		if strings.Contains(strings.ToUpper(h.fact("isolation")), "REPEATABLE") {
			d += " (next-key locks under REPEATABLE READ, gaps included)"
		}
	}
	d += h.clause(" — ", "scan")
	d += fmt.Sprintf("; %s other writers of %s wait for its row locks (an INSERT's insert intention lock, an UPDATE of a row it passed) until the lock wait timeout ends them, and their callers fail; the database itself is not overloaded", h.fact("waiters"), table)
	return d
}

func recommendBulkWriteLocks(h *Hypothesis, sc Scope, r *recommender) {
	table, col := h.fact("table"), h.fact("column")
	who := orWord(h.fact("client"), "the job")
	r.high("Stop the bulk write on %s (KILL or cancel %s; it rolls back) so that the writers proceed, and run %s in small batches (a LIMIT of a few thousand rows per transaction, committed one after another) instead of one statement", h.Subject, h.fact("holder"), who)
	if col != "" {
		r.med("Add an index on %s(%s) so the purge reads and locks only the rows it deletes, not the whole table", table, col)
	} else {
		r.med("Make the bulk write use an index so it reads and locks only the rows it changes")
	}
	r.low("Schedule bulk writes away from traffic and alert on row-lock waits and on transactions open for minutes")
}
