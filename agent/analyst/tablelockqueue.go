package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A table lock queue behind a schema change. A DDL takes a table-level
// lock that conflicts with the locks ordinary statements take, and a
// database grants locks in the order they were asked for:
//
//   - The DDL holds the lock and runs long: PostgreSQL's plain CREATE
//     INDEX (without CONCURRENTLY) holds a ShareLock on the table for the
//     whole build, so every INSERT, UPDATE and DELETE (RowExclusiveLock)
//     waits while reads go on; an ALTER TABLE that rewrites the table
//     holds an AccessExclusiveLock and stops reads too.
//   - The DDL waits for the lock behind an older session that still holds
//     a weaker lock on the table (MySQL's metadata lock of any open
//     transaction that touched the table, an analyst's SQL editor left
//     with an uncommitted transaction; PostgreSQL's AccessShareLock of an
//     idle-in-transaction session): its pending exclusive request queues
//     every later query on the table behind it, reads included, although
//     the DDL itself would take a moment.
//
// Either way the database is idle (no CPU, no I/O saturation) while the
// callers time out. It is read from the server's own views as a SQL
// client prints them: the session list (pg_stat_activity with
// wait_event_type Lock, SHOW PROCESSLIST's "Waiting for table metadata
// lock"), the lock tables (pg_locks, performance_schema.metadata_locks)
// with their granted and pending requests, the open transactions
// (information_schema.innodb_trx) and what the holding client calls itself
// (session_connect_attrs' program_name, application_name).

// KindTableLockQueue is a table's statements queued behind a DDL's table
// lock.
const KindTableLockQueue Kind = "table_lock_queue"

var tableLockQueue = &mechanism{
	kind:    KindTableLockQueue,
	class:   classCause,
	label:   "queries queued behind a schema change's table lock (DDL lock queue)",
	detect:  detectTableLockQueue,
	related: relatedToTop(KindTableLockQueue),
	// The lock waits on the same server, one hop further: what holds them.
	refines: []Kind{KindDBBlocked},
	// The release or migration that ran the DDL.
	fitsChange:     changeSays(ddlRunChangeRE),
	strictTriggers: true,
	describe:       describeTableLockQueue,
	recommend:      recommendTableLockQueue,
}

var (
	// A change that runs a schema change: a DDL, a migration, a release
	// whose hook migrates.
	ddlRunChangeRE = regexp.MustCompile(`(?i)ALTER\s+TABLE|ADD\s+(?:INDEX|COLUMN|KEY)|CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+(?:INDEX|COLUMN)|schema (?:change|migration)|\bDDL\b|migrat|flyway|liquibase|alembic|\bV\d+__|pre-upgrade|pre-install|\bhook\b`)
	// A statement that takes a table lock stronger than reads and writes
	// take: a DDL, LOCK TABLE, a rewrite.
	tableLockStmtRE = regexp.MustCompile(`(?i)^\s*(?:/\*.*?\*/\s*)?(ALTER\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+(?:INDEX|TABLE)|TRUNCATE|LOCK\s+TABLES?|VACUUM\s+FULL|CLUSTER|REINDEX|RENAME\s+TABLE|OPTIMIZE\s+TABLE)\b`)
	// MySQL's states of a session waiting for a table's metadata lock.
	mdlWaitStateRE = regexp.MustCompile(`(?i)^waiting for (?:table )?metadata lock$`)
	// PostgreSQL's table lock modes that conflict with writes.
	pgStrongModes = []string{"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"}
	// A table a statement reads or writes.
	stmtTableRE = regexp.MustCompile("(?i)\\b(?:from|into|update|join|table|on)\\s+[\"`]?([\\w.]+)[\"`]?")
)

// lockSession is one session of a database's session list, with what the
// lock tables and the open transactions say of it.
type lockSession struct {
	pid, user, app, client, state, command, query string
	waitLock                                      bool      // it waits for a table lock
	age                                           string    // how long it has been in its state (processlist TIME)
	since                                         time.Time // its transaction's start, when stated
	openTrx                                       bool      // an open transaction (innodb_trx, idle in transaction)
	program                                       string    // what the client calls itself
	granted, pending                              []string  // lock modes it holds and waits for
	object                                        string    // the table its locks are on
}

// who names a session: its application or program, its user, its client.
func (s *lockSession) who() string {
	var parts []string
	if s.user != "" {
		parts = append(parts, "user "+s.user)
	}
	if s.program != "" {
		parts = append(parts, s.program)
	} else if s.app != "" && !strings.EqualFold(s.app, "null") {
		parts = append(parts, "application "+s.app)
	}
	if s.client != "" {
		parts = append(parts, "from "+s.client)
	}
	d := "session " + s.pid
	if len(parts) > 0 {
		d += " (" + strings.Join(parts, ", ") + ")"
	}
	return d
}

// lockQueueRead is what the SQL clients' outputs say of one instance.
type lockQueueRead struct {
	inst, where, source string
	mysql               bool
	sessions            map[string]*lockSession
	order               []string
	tableSize           string // the table's rows and size, when listed
	progress            string // the DDL's progress, when listed
}

func (q *lockQueueRead) session(pid string) *lockSession {
	if s := q.sessions[pid]; s != nil {
		return s
	}
	s := &lockSession{pid: pid}
	q.sessions[pid] = s
	q.order = append(q.order, pid)
	return s
}

func nullCell(v string) string {
	if strings.EqualFold(strings.TrimSpace(v), "null") {
		return ""
	}
	return strings.TrimSpace(v)
}

// readLockQueues reads the SQL clients' outputs per database instance
// (groupSQLCommands), in the order the instances were first queried.
func readLockQueues(cmds []evidence.CommandOutput) []*lockQueueRead {
	var out []*lockQueueRead
	for _, g := range groupSQLCommands(cmds) {
		inst, where := sqlInstanceOf(g[0])
		q := &lockQueueRead{inst: shortDBHost(inst), where: where, source: g[0].Source, sessions: map[string]*lockSession{}}
		for _, c := range g {
			if m := findSubmatch(sqlClientRE, orWord(c.Run, c.Command)); m != nil && (strings.EqualFold(m[2], "mysql") || strings.EqualFold(m[2], "mariadb")) {
				q.mysql = true
			}
			for _, t := range sqlTables(c.Lines) {
				q.read(&t)
			}
		}
		out = append(out, q)
	}
	return out
}

func (q *lockQueueRead) read(t *sqlTable) {
	has := func(c string) bool { return slices.Contains(t.cols, c) }
	for r := range t.rows {
		cell := func(names ...string) string {
			for _, n := range names {
				if v := nullCell(t.cell(r, n)); v != "" {
					return v
				}
			}
			return ""
		}
		switch {
		// pg_locks: pid, mode, granted (relation, waitstart).
		case has("pid") && has("mode") && has("granted"):
			s := q.session(cell("pid"))
			mode := cell("mode")
			if g := strings.ToLower(cell("granted")); g == "t" || g == "true" {
				s.granted = append(s.granted, mode)
			} else {
				s.pending = append(s.pending, mode)
			}
			if o := cell("relation", "relname", "object_name"); o != "" && !allDigits(o) {
				s.object = o
			}
		// performance_schema.metadata_locks joined to threads.
		case has("lock_status") && has("lock_type") && (has("processlist_id") || has("owner_thread_id")):
			if ot := strings.ToUpper(cell("object_type")); ot != "" && ot != "TABLE" {
				continue
			}
			s := q.session(cell("processlist_id", "owner_thread_id"))
			q.mysql = true
			if st := strings.ToUpper(cell("lock_status")); st == "GRANTED" {
				s.granted = append(s.granted, cell("lock_type"))
			} else if st == "PENDING" {
				s.pending = append(s.pending, cell("lock_type"))
				s.waitLock = true
			}
			if o := cell("object_name"); o != "" {
				s.object = o
			}
			s.user = orWord(s.user, cell("processlist_user"))
			s.client = orWord(s.client, cell("processlist_host"))
		// information_schema.innodb_trx: the open transactions.
		case has("trx_mysql_thread_id"):
			q.mysql = true
			s := q.session(cell("trx_mysql_thread_id"))
			s.openTrx = true
			if at, ok := parseDBTime(cell("trx_started")); ok {
				s.since = at
			}
		// performance_schema.session_connect_attrs.
		case has("attr_name") && has("attr_value") && has("processlist_id"):
			s := q.session(cell("processlist_id"))
			switch strings.ToLower(cell("attr_name")) {
			case "program_name":
				s.program = cell("attr_value")
			case "_client_name":
				if s.program == "" {
					s.program = cell("attr_value")
				}
			}
		// pg_stat_activity.
		case has("pid") && (has("wait_event_type") || has("state")) && (has("query") || has("xact_start")):
			s := q.session(cell("pid"))
			s.user = orWord(s.user, cell("usename"))
			s.app = orWord(s.app, cell("application_name"))
			s.client = orWord(s.client, cell("client_addr"))
			s.state = cell("state")
			s.query = orWord(cell("query"), s.query)
			if strings.EqualFold(cell("wait_event_type"), "lock") && strings.EqualFold(orWord(cell("wait_event"), "relation"), "relation") {
				s.waitLock = true
			}
			if strings.HasPrefix(strings.ToLower(s.state), "idle in transaction") {
				s.openTrx = true
			}
			if at, ok := parsePGTime(cell("xact_start")); ok {
				s.since = at
			}
		// MySQL's processlist.
		case has("id") && has("command") && (has("info") || has("state")):
			q.mysql = true
			s := q.session(cell("id"))
			s.user = orWord(s.user, cell("user"))
			s.client = orWord(s.client, cell("host"))
			s.command = cell("command")
			s.state = cell("state")
			s.query = cell("info")
			s.age = cell("time")
			if matchLine(mdlWaitStateRE, s.state) {
				s.waitLock = true
			}
		// pg_stat_progress_create_index.
		case has("blocks_total") && has("blocks_done") && has("pid"):
			if total, done := cell("blocks_total"), cell("blocks_done"); total != "" && total != "0" {
				q.progress = fmt.Sprintf("%s of %s blocks scanned (%s)", done, total, orWord(cell("phase"), "building"))
			}
		// A table's size (pg_stat_user_tables with a size).
		case has("relname") && has("n_live_tup"):
			if sz := cell("size", "total_size", "pg_size_pretty"); sz != "" {
				q.tableSize = fmt.Sprintf("%s: %s live rows, %s", cell("relname"), cell("n_live_tup"), sz)
			}
		}
	}
}

// stmtTable is the table a statement names first, lower case, without
// quotes.
func stmtTable(stmt string) string {
	if m := findSubmatch(regexp.MustCompile("(?i)\\bON\\s+(?:ONLY\\s+)?[\"`]?([\\w.]+)[\"`]?\\s*(?:USING\\s+\\w+\\s*)?\\("), stmt); m != nil {
		return strings.ToLower(m[1])
	}
	if m := findSubmatch(stmtTableRE, stmt); m != nil {
		return strings.ToLower(m[1])
	}
	return ""
}

// shortDBHost is a database server's host name without its domain
// ("orders-db.c9x2kq7hzv1p.eu-central-1.rds.amazonaws.com" and
// "orders-db.internal" are orders-db); an address stays whole.
func shortDBHost(h string) string {
	first, _, ok := strings.Cut(h, ".")
	if !ok || allDigits(first) || len(first) < 3 {
		return h
	}
	return first
}

// detectTableLockQueue finds, per instance, a DDL that holds or waits for
// a table lock while at least two other sessions wait for the table.
func detectTableLockQueue(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, q := range readLockQueues(ev.Commands) {
		f := q.finding(ev)
		if f != nil {
			out = append(out, *f)
		}
	}
	return out
}

func (q *lockQueueRead) finding(ev *Gathered) *Finding {
	var ddl *lockSession
	for _, pid := range q.order {
		s := q.sessions[pid]
		if matchLine(tableLockStmtRE, s.query) && !strings.Contains(strings.ToUpper(s.query), "CONCURRENTLY") && (ddl == nil || s.waitLock && !ddl.waitLock) {
			ddl = s
		}
	}
	if ddl == nil {
		return nil
	}
	table := orWord(strings.ToLower(ddl.object), stmtTable(ddl.query))
	var waiters []*lockSession
	for _, pid := range q.order {
		s := q.sessions[pid]
		if s == ddl || !(s.waitLock || len(s.pending) > 0) {
			continue
		}
		if t := orWord(strings.ToLower(s.object), stmtTable(s.query)); table != "" && t != "" && t != table && !strings.HasSuffix(t, "."+table) && !strings.HasSuffix(table, "."+t) {
			continue
		}
		waiters = append(waiters, s)
	}
	if len(waiters) < 2 {
		return nil
	}
	waiting := ddl.waitLock || len(ddl.pending) > 0 && len(ddl.granted) == 0 || q.mysql && len(ddl.pending) > 0
	now := ev.Window.End
	f := &Finding{Kind: KindTableLockQueue, Subject: q.inst, Object: "database " + q.inst, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("table", table)
	f.setFact("statement", truncate(ddl.query, 200))
	f.setFact("ddl_session", ddl.who())
	f.setFact("waiters", fmt.Sprint(len(waiters)))
	if q.mysql {
		f.setFact("engine", "mysql")
	}
	start := ddl.since
	if start.IsZero() {
		if d, ok := sqlDuration(ddl.age); ok && d > 0 {
			start = now.Add(-d).Truncate(time.Second)
		}
	}
	e := fmt.Sprintf("the session list on %s (%s) shows %s running %s", q.where, q.source, ddl.who(), quote(ddl.query, 160))
	if !start.IsZero() {
		e += " since " + ts(start)
	}
	if waiting {
		e += fmt.Sprintf(", itself waiting for the lock on %s", orWord(table, "the table"))
	} else if m := strongestMode(ddl.granted); m != "" {
		e += fmt.Sprintf(", holding a %s on %s", m, orWord(table, "the table"))
		f.setFact("mode", m)
	}
	f.Evidence = append(f.Evidence, e)
	var wq []string
	writes, reads := 0, 0
	for _, w := range waiters {
		wq = append(wq, truncate(w.query, 70))
		if matchLine(regexp.MustCompile(`(?i)^\s*(insert|update|delete|merge)\b`), w.query) {
			writes++
		} else {
			reads++
		}
	}
	sort.Strings(wq)
	wq = slices.Compact(wq)
	if len(wq) > 3 {
		wq = wq[:3]
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d sessions on %s wait for the lock on %s (%d writes, %d reads), e.g. %s", len(waiters), q.inst, orWord(table, "the table"), writes, reads, strings.Join(wq, "; ")))
	if writes > 0 && reads == 0 {
		f.setFact("writes_only", "true")
	}
	if q.progress != "" {
		f.setFact("progress", q.progress)
		f.Evidence = append(f.Evidence, "the index build's progress: "+q.progress)
	}
	if q.tableSize != "" {
		f.setFact("table_size", q.tableSize)
		f.Evidence = append(f.Evidence, "the table: "+q.tableSize)
	}
	if waiting {
		// The session ahead of the DDL: one that holds a lock on the
		// table without waiting, the one with the oldest open
		// transaction first.
		var holder *lockSession
		for _, pid := range q.order {
			s := q.sessions[pid]
			if s == ddl || s.waitLock || len(s.pending) > 0 {
				continue
			}
			onTable := len(s.granted) > 0 && (s.object == "" || table == "" || strings.EqualFold(s.object, table))
			idle := s.openTrx && (strings.EqualFold(s.command, "sleep") || strings.HasPrefix(strings.ToLower(s.state), "idle in transaction"))
			if !onTable && !idle {
				continue
			}
			if holder == nil || s.openTrx && !holder.openTrx || s.openTrx == holder.openTrx && !s.since.IsZero() && (holder.since.IsZero() || s.since.Before(holder.since)) {
				holder = s
			}
		}
		if holder == nil {
			return nil
		}
		f.setFact("holder", holder.who())
		f.setFact("holder_user", holder.user)
		hd := fmt.Sprintf("%s holds a lock on %s", holder.who(), orWord(table, "the table"))
		if holder.openTrx {
			hd += " in a transaction open"
			if !holder.since.IsZero() {
				hd += " since " + ts(holder.since)
				f.setFact("holder_since", ts(holder.since))
			}
		}
		if strings.EqualFold(holder.command, "sleep") || strings.HasPrefix(strings.ToLower(holder.state), "idle") {
			hd += ", idle (no statement running"
			if holder.age != "" {
				if d, ok := sqlDuration(holder.age); ok {
					hd += ", for " + fmtLag(d)
				}
			}
			hd += ")"
			f.setFact("holder_idle", "true")
		}
		f.setFact("holder_detail", hd)
		f.Evidence = append(f.Evidence, hd)
	}
	f.Time = start
	if f.Time.IsZero() {
		f.Time = now
	}
	// The change that ran the DDL: a release or migration before it began.
	var best *evidence.Change
	for i := range ev.Changes {
		c := &ev.Changes[i]
		if !matchLine(ddlRunChangeRE, c.Description) || c.Timestamp.After(f.Time.Add(2*time.Minute)) || f.Time.Sub(c.Timestamp) > 6*time.Hour {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	if best != nil {
		f.setFact("ddl_change", fmt.Sprintf("%s %s at %s: %q", orWord(best.Service, best.Kind), best.Kind, ts(best.Timestamp), best.Description))
		if best.Service != "" {
			f.Related = appendNew(f.Related, best.Service)
		}
	}
	for _, c := range clientsOfDatabase(ev, q.inst) {
		if !slices.Contains(f.Related, c.name) {
			f.Related = append(f.Related, c.name)
			f.Evidence = append(f.Evidence, c.why)
		}
	}
	f.setFact("affected", strings.Join(f.Related, ","))
	if waiting {
		f.Summary = fmt.Sprintf("queries on %s of %s queue behind a schema change waiting for its %s", orWord(table, "a table"), q.inst, map[bool]string{true: "metadata lock", false: "table lock"}[q.mysql])
	} else {
		f.Summary = fmt.Sprintf("a schema change on %s of %s holds a table lock that queues %d sessions", orWord(table, "a table"), q.inst, len(waiters))
	}
	return f
}

// strongestMode is the strongest PostgreSQL table lock mode of modes, or
// the first of modes when none is one of PostgreSQL's strong modes.
func strongestMode(modes []string) string {
	best := -1
	for _, m := range modes {
		if i := slices.Index(pgStrongModes, m); i > best {
			best = i
		}
	}
	if best >= 0 {
		return pgStrongModes[best]
	}
	if len(modes) > 0 {
		return modes[0]
	}
	return ""
}

func describeTableLockQueue(h *Hypothesis, sc Scope) string {
	inst, table := h.Subject, orWord(h.fact("table"), "a table")
	stmt := quote(h.fact("statement"), 160)
	waiters := h.fact("waiters")
	if hd := h.fact("holder_detail"); hd != "" {
		lock, queue := "table lock", "table lock"
		if h.fact("engine") == "mysql" {
			lock, queue = "metadata lock", "table metadata lock (MDL)"
		}
		d := fmt.Sprintf("a %s queue on %s: the schema change %s, run by %s, waits for the exclusive %s on %s behind an older session: %s; a DDL's pending exclusive request queues every later query on %s behind it, reads included, so %s sessions wait although the DDL itself would take a moment and the database is otherwise idle", queue, inst, stmt, h.fact("ddl_session"), lock, table, hd, table, waiters)
		if h.fact("holder_idle") != "" {
			d += ". The holder is an open transaction left uncommitted, not a running query: it keeps its lock on " + table + " until it commits, rolls back or its session ends"
		}
		d += h.clause("; the schema change: ", "ddl_change")
		return d
	}
	mode := orWord(h.fact("mode"), "an exclusive table lock")
	d := fmt.Sprintf("a schema change holds a table lock on %s of %s: %s runs %s and holds a %s on %s for its whole run", table, inst, h.fact("ddl_session"), stmt, mode, table)
	switch {
	case mode == "ShareLock" && strings.Contains(strings.ToUpper(h.fact("statement")), "CREATE"):
		d += fmt.Sprintf("; a plain CREATE INDEX (without CONCURRENTLY) takes a ShareLock that conflicts with the RowExclusiveLock of every INSERT, UPDATE and DELETE, so writes to %s wait until the whole index is built while reads go on (%s sessions wait)", table, waiters)
	case mode == "AccessExclusiveLock":
		d += fmt.Sprintf("; an AccessExclusiveLock conflicts with every statement on %s, reads included (%s sessions wait)", table, waiters)
	default:
		d += fmt.Sprintf("; %s sessions wait for it", waiters)
	}
	d += h.clause("; the table is ", "table_size")
	d += h.clause("; the build has done ", "progress")
	d += h.clause("; the schema change: ", "ddl_change")
	return d
}

func recommendTableLockQueue(h *Hypothesis, sc Scope, r *recommender) {
	inst, table := h.Subject, orWord(h.fact("table"), "the table")
	if hd := h.fact("holder"); hd != "" {
		kill := "KILL the holder's connection"
		if h.fact("engine") != "mysql" {
			kill = "end the holder's session (pg_terminate_backend)"
		}
		r.high("End the transaction that holds the lock on %s of %s: have its owner commit or roll back, or %s (%s); the DDL then takes its lock at once and the queue drains. Cancelling the DDL instead releases the queue too, and the migration can be retried", table, inst, kill, hd)
		if h.fact("engine") == "mysql" {
			r.med("Run migrations with a short lock_wait_timeout (SET SESSION lock_wait_timeout = 5) and retry, so a DDL gives up instead of queueing every query behind an open transaction")
			r.low("Keep interactive sessions from holding transactions open on production: autocommit in SQL editors, wait_timeout for interactive users, read-only replicas for ad-hoc queries; alert on transactions open longer than minutes (innodb_trx)")
		} else {
			r.med("Run migrations with a short lock_timeout (SET lock_timeout = '5s') and retry, so a DDL gives up instead of queueing every query behind an open transaction")
			r.low("Bound idle transactions (idle_in_transaction_session_timeout) and alert on transactions open longer than minutes")
		}
		return
	}
	if strings.Contains(strings.ToUpper(h.fact("statement")), "CREATE") && strings.Contains(strings.ToUpper(h.fact("statement")), "INDEX") {
		r.high("Cancel the index build on %s (pg_cancel_backend of %s) so that writes to %s proceed, then build the index with CREATE INDEX CONCURRENTLY, which does not block writes", inst, h.fact("ddl_session"), table)
		r.med("Make the migration framework build indexes on large tables concurrently (a non-transactional migration: Django AddIndexConcurrently with atomic = False, Rails algorithm: :concurrently, Flyway/Liquibase outside a transaction) and set lock_timeout in migrations")
	} else {
		r.high("Cancel the schema change on %s (%s) so that queries on %s proceed, and rerun it in a way that does not lock the table for its whole run (an online schema change, a short lock_timeout with retries, a maintenance window)", inst, h.fact("ddl_session"), table)
		r.med("Review migrations on large tables for the lock they take before they run (table rewrites, index builds) and set lock_timeout in migrations")
	}
	r.low("Alert on sessions waiting for locks (pg_locks not granted, wait_event_type Lock) and on a DDL running longer than a minute")
}
