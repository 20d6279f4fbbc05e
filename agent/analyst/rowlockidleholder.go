package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A row lock held by a transaction whose client left it idle. A client
// updates a row (a counter of a gapless number series, a balance, a stock
// level) or selects it FOR UPDATE, and then, before it commits, does
// something else: calls another service, renders a document, waits for a
// queue. The database shows the holder "idle in transaction" (MySQL: a
// sleeping connection with an open InnoDB transaction) and every other
// session writing the same row waiting for it (wait_event transactionid or
// tuple; sys.innodb_lock_waits). Each writer holds the row for its whole
// transaction in turn, so the writes are serialised behind the slowest
// part of the client's work, the client's connection pool fills with
// waiting sessions, and the database's CPU stays low. It is read from the
// session list a SQL client printed (pg_stat_activity with state,
// wait_event and the transaction's age; pg_blocking_pids; MySQL's
// sys.innodb_lock_waits with the blocking thread's processlist entry).

// KindRowLockIdleHolder is row-lock waits behind a transaction its client
// left idle.
const KindRowLockIdleHolder Kind = "row_lock_idle_holder"

var rowLockIdleHolder = &mechanism{
	kind:    KindRowLockIdleHolder,
	class:   classCause,
	label:   "row-lock waits behind a transaction its client keeps open while it works outside the database",
	detect:  detectRowLockIdleHolder,
	related: relatedToTop(KindRowLockIdleHolder),
	// The lock waits on the same server, one hop further: who holds the
	// row and why.
	refines: []Kind{KindDBBlocked},
	// A release of the client that holds the row changed what it does
	// inside its transaction.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		app := strings.ToLower(h.fact("holder_app"))
		return app != "" && (strings.EqualFold(c.Subject, app) || strings.Contains(changeText(c), app))
	},
	describe:  describeRowLockIdleHolder,
	recommend: recommendRowLockIdleHolder,
}

var (
	// PostgreSQL's wait events of a session waiting for another
	// transaction's row lock.
	pgRowWaitRE = regexp.MustCompile(`(?i)^(transactionid|tuple)$`)
	// A column listing the sessions that block one (pg_blocking_pids).
	blockingColRE = regexp.MustCompile(`(?i)^(blocked_by|blocking_pids?|pg_blocking_pids|blocker|blocking_pid|blocking_thread)$`)
	// The first session id of a cell ("{40112}", "40112", "{40112,40113}").
	firstIDRE = regexp.MustCompile(`\d+`)
	// A statement that writes or locks a row.
	rowWriteRE = regexp.MustCompile(`(?i)^\s*(update|delete|insert|select\b.*\bfor (update|no key update|share))\b`)
)

// rowHold is what one instance's session list says of row-lock waits.
type rowHold struct {
	inst, where, source string
	mysql               bool
	waiters             []*lockSession
	holder              *lockSession
	holderAge           string
	table, stmt         string
}

// detectRowLockIdleHolder finds, per instance, at least three sessions
// waiting for a row lock behind one session idle in its transaction.
func detectRowLockIdleHolder(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, c := range groupSQLCommands(ev.Commands) {
		rh := readRowHold(c)
		if rh == nil {
			continue
		}
		out = append(out, rh.finding(ev, found))
	}
	return out
}

// groupSQLCommands groups the SQL clients' outputs by the instance they
// ran against (short host names).
func groupSQLCommands(cmds []evidence.CommandOutput) [][]evidence.CommandOutput {
	idx := map[string]int{}
	var out [][]evidence.CommandOutput
	for _, c := range cmds {
		run := orWord(c.Run, c.Command)
		if !matchLine(sqlClientRE, run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		inst, _ := sqlInstanceOf(c)
		if inst == "" {
			continue
		}
		inst = shortDBHost(inst)
		i, ok := idx[inst]
		if !ok {
			i = len(out)
			idx[inst] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

func readRowHold(cmds []evidence.CommandOutput) *rowHold {
	inst, where := sqlInstanceOf(cmds[0])
	rh := &rowHold{inst: shortDBHost(inst), where: where, source: cmds[0].Source}
	sessions := map[string]*lockSession{}
	ages := map[string]string{}
	var order []string
	sess := func(pid string) *lockSession {
		if s := sessions[pid]; s != nil {
			return s
		}
		s := &lockSession{pid: pid}
		sessions[pid] = s
		order = append(order, pid)
		return s
	}
	blockedBy := map[string]string{} // waiting pid → blocking pid
	for _, c := range cmds {
		if m := findSubmatch(sqlClientRE, orWord(c.Run, c.Command)); m != nil && (strings.EqualFold(m[2], "mysql") || strings.EqualFold(m[2], "mariadb")) {
			rh.mysql = true
		}
		for _, t := range sqlTables(c.Lines) {
			has := func(n string) bool { return slices.Contains(t.cols, n) }
			blockCol := ""
			for _, col := range t.cols {
				if matchLine(blockingColRE, col) {
					blockCol = col
				}
			}
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
				case blockCol != "" && (has("waiting_pid") || has("pid") || has("waiting_thread")):
					w := cell("waiting_pid", "pid", "waiting_thread")
					if b := firstIDRE.FindString(cell(blockCol)); b != "" && w != "" {
						blockedBy[w] = b
						s := sess(w)
						s.waitLock = true
						if q := cell("waiting_query"); q != "" {
							s.query = q
						}
						if tb := cell("locked_table"); tb != "" {
							s.object = strings.Trim(tb, "`")
						}
						if q := cell("blocking_query"); q != "" && sess(b).query == "" {
							sess(b).query = q
						}
					}
				case has("trx_mysql_thread_id"):
					rh.mysql = true
					s := sess(cell("trx_mysql_thread_id"))
					s.openTrx = true
					if at, ok := parseDBTime(cell("trx_started")); ok {
						s.since = at
					}
				case has("pid") && has("state") && has("wait_event_type"):
					s := sess(cell("pid"))
					s.app = orWord(cell("application_name"), s.app)
					s.user = orWord(cell("usename"), s.user)
					s.state = cell("state")
					s.query = orWord(cell("query"), s.query)
					if strings.EqualFold(cell("wait_event_type"), "lock") && matchLine(pgRowWaitRE, cell("wait_event")) {
						s.waitLock = true
					}
					if strings.HasPrefix(strings.ToLower(s.state), "idle in transaction") {
						s.openTrx = true
					}
					for _, col := range t.cols {
						if matchLine(xactAgeColumnRE, col) {
							ages[s.pid] = cell(col)
						}
					}
				case has("id") && has("command") && has("time"):
					rh.mysql = true
					s := sess(cell("id"))
					s.user = orWord(cell("user"), s.user)
					s.command = cell("command")
					s.state = cell("state")
					s.query = orWord(cell("info"), s.query)
					s.age = cell("time")
				}
			}
		}
	}
	var waiters []*lockSession
	for _, pid := range order {
		if s := sessions[pid]; s.waitLock && rowWriteRE.MatchString(s.query) {
			waiters = append(waiters, s)
		}
	}
	if len(waiters) < 3 {
		return nil
	}
	// The table most waiters write.
	count := map[string]int{}
	for _, w := range waiters {
		count[orWord(strings.ToLower(w.object), stmtTable(w.query))]++
	}
	for _, t := range slices.Sorted(maps.Keys(count)) {
		n := count[t]
		if t != "" && (n > count[rh.table] || n == count[rh.table] && t < rh.table) {
			rh.table = t
		}
	}
	if rh.table == "" || count[rh.table]*2 < len(waiters) {
		return nil
	}
	// The holder: the session the waiters are blocked by, else the one
	// session idle in an open transaction.
	named := map[string]int{}
	for _, w := range waiters {
		if b := blockedBy[w.pid]; b != "" {
			named[b]++
		}
	}
	for _, pid := range slices.Sorted(maps.Keys(named)) {
		n := named[pid]
		if n*2 >= len(waiters) && (rh.holder == nil || n > named[rh.holder.pid]) {
			rh.holder = sess(pid)
		}
	}
	if rh.holder == nil && len(named) == 0 {
		var idle []*lockSession
		for _, pid := range order {
			if s := sessions[pid]; strings.HasPrefix(strings.ToLower(s.state), "idle in transaction") {
				idle = append(idle, s)
			}
		}
		if len(idle) == 1 {
			rh.holder = idle[0]
		}
	}
	h := rh.holder
	if h == nil || h.waitLock {
		return nil
	}
	// It runs nothing: idle in its transaction, or a sleeping MySQL
	// connection with an open transaction.
	if !(strings.HasPrefix(strings.ToLower(h.state), "idle in transaction") || strings.EqualFold(h.command, "sleep") && h.openTrx) {
		return nil
	}
	rh.holderAge = ages[h.pid]
	if rh.holderAge == "" && h.age != "" {
		rh.holderAge = h.age
	}
	for _, w := range waiters {
		if stmtTable(w.query) == rh.table || strings.EqualFold(w.object, rh.table) {
			rh.stmt = w.query
			break
		}
	}
	rh.waiters = waiters
	return rh
}

func (rh *rowHold) finding(ev *Gathered, found []Finding) Finding {
	h := rh.holder
	f := Finding{Kind: KindRowLockIdleHolder, Subject: rh.inst, Object: "database " + rh.inst, Time: ev.Window.End, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	app := orWord(h.app, h.user)
	f.setFact("table", rh.table)
	f.setFact("holder", h.who())
	f.setFact("holder_app", app)
	f.setFact("holder_query", truncate(h.query, 160))
	f.setFact("waiters", fmt.Sprint(len(rh.waiters)))
	f.setFact("statement", truncate(rh.stmt, 160))
	if rh.mysql {
		f.setFact("engine", "mysql")
	}
	same := 0
	for _, w := range rh.waiters {
		if strings.EqualFold(orWord(w.app, w.user), app) {
			same++
		}
	}
	if same == len(rh.waiters) {
		f.setFact("same_client", "true")
	}
	hd := fmt.Sprintf("the session list on %s (%s) shows %s idle in its transaction", rh.where, rh.source, h.who())
	if rh.holderAge != "" {
		hd += " (transaction age " + rh.holderAge + ")"
	}
	if h.query != "" {
		hd += ", its last statement " + quote(h.query, 140)
	}
	f.Evidence = append(f.Evidence, hd)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d sessions wait for a row lock it holds on %s: %s", len(rh.waiters), rh.table, quote(rh.stmt, 140)))
	if app != "" {
		f.Related = appendNew(f.Related, app)
	}
	for _, c := range clientsOfDatabase(ev, rh.inst) {
		if !slices.Contains(f.Related, c.name) {
			f.Related = append(f.Related, c.name)
			f.Evidence = append(f.Evidence, c.why)
		}
	}
	// The session list is the state now: the onset is the first symptom
	// of the holder's client in the window (its pool filling, its
	// errors), when one shows.
	for i := range found {
		g := &found[i]
		if app != "" && strings.EqualFold(g.Subject, app) && infoOf(g.Kind).class != classChange && !g.Time.IsZero() && !g.Time.Before(ev.Window.Start) && g.Time.Before(f.Time) {
			f.Time = g.Time
		}
	}
	f.setFact("affected", strings.Join(f.Related, ","))
	f.Summary = fmt.Sprintf("sessions on %s wait for a row lock on %s held by a transaction %s keeps open while idle", rh.inst, rh.table, orWord(app, "its client"))
	return f
}

func describeRowLockIdleHolder(h *Hypothesis, sc Scope) string {
	table, app := h.fact("table"), orWord(h.fact("holder_app"), "its client")
	d := fmt.Sprintf("row-lock waits on %s of %s behind a transaction its client keeps open: %s holds the row lock of its write to %s and is idle in transaction (it runs no statement: %s does other work inside the transaction, such as a call to another service, before it commits)", table, h.Subject, h.fact("holder"), table, app)
	d += h.clause("; its last statement was ", "holder_query")
	d += fmt.Sprintf("; %s sessions wait for the row lock", h.fact("waiters"))
	d += h.clause(" (", "statement")
	if h.fact("statement") != "" {
		d += ")"
	}
	d += ". Every request that writes the row holds it for its whole transaction in turn, so the writes are serialised behind the slowest part of the client's work; the connection pool fills with waiting sessions while the database itself is idle"
	return d
}

func recommendRowLockIdleHolder(h *Hypothesis, sc Scope, r *recommender) {
	app, table := orWord(h.fact("holder_app"), "the client"), h.fact("table")
	r.high("Move the slow work out of %s's transaction: take the row lock on %s (the update) as the last step right before commit, or do the other work (remote calls, rendering) before the transaction or after commit; roll back the release that put it inside the transaction if that is quicker", app, table)
	r.med("Set idle_in_transaction_session_timeout (MySQL: innodb_lock_wait_timeout and a short wait_timeout for the client) and lock_timeout so a held row fails fast instead of queueing every writer")
	r.low("Alert on sessions idle in transaction and on row-lock waits per relation; trace the spans between the row's update and the commit")
}
