package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindDBBlocked: a database whose sessions (or whose replica's WAL replay)
// wait behind a long transaction. The database is up and answers, so its
// callers see no error of their own, only slow calls or stale reads; the
// root is the transaction that holds the rows (a batch's SELECT … FOR
// UPDATE whose commit is deferred to the end of its run) or the snapshot
// (a long report query on a hot standby), and the client that opened it.
const KindDBBlocked Kind = "db_blocked"

var dbBlocked = &mechanism{
	kind:   KindDBBlocked,
	class:  classCause,
	label:  "database sessions blocked on row locks (a long transaction or one hot row)",
	detect: detectDBBlocked,
	// The callers slowed down at the same time (their latency, slow
	// queries, timeouts) and what names the database's host.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind == KindDBBlocked || infoOf(f.Kind).class == classChange {
			return false
		}
		for _, p := range h.Primary {
			if slices.Contains(p.Related, f.Subject) {
				return true
			}
		}
		host := strings.ToLower(h.Subject)
		return host != "" && strings.Contains(strings.ToLower(f.fact("line")), host)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if h.fact("hot_table") != "" {
			// More replicas do not make one row hotter than the
			// traffic does (scalingChangeRE).
			t := changeText(c)
			return matchLine(hotRowChangeRE, t) && !matchLine(scalingChangeRE, t)
		}
		return matchLine(dbBlockChangeRE, changeText(c))
	},
	// Waits that queue on one hot row come from how the row is written
	// and how many write it at once: a scaling change or an unrelated
	// config change near them is a coincidence, not their trigger.
	strictFor: func(h *Hypothesis) bool { return h.fact("hot_table") != "" },
	describe:  describeDBBlocked,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		b := orWord(h.fact("blocker"), "the long transaction")
		if h.fact("condition") == "replication" && h.fact("engine") == "mysql" {
			r.high("Send the reads that need fresh data to the primary until %s catches up, and find what its applier runs (SHOW PROCESSLIST: the system user threads and their statements; SHOW REPLICA STATUS: Replica_SQL_Running_State, Last_SQL_Error)", h.Subject)
			r.med("Keep large transactions and schema changes from holding the applier (batch big writes, run DDL with gh-ost or pt-online-schema-change) and use parallel replication (replica_parallel_workers)")
			r.low("Alert on replication lag (Seconds_Behind_Source) and route reads by lag")
			return
		}
		if h.fact("condition") == "replication" {
			r.high("End the query that holds back replay on %s (%s): cancel it (pg_cancel_backend) so the replica catches up; point reads that need fresh data at the primary meanwhile", h.Subject, b)
			r.med("Bound how long a standby query may delay replay (max_standby_streaming_delay, not -1) and move long reports to a dedicated replica or a snapshot")
			r.low("Alert on replication lag (seconds behind the primary) and on the oldest transaction's age on replicas")
			return
		}
		if t := h.fact("hot_table"); t != "" {
			r.high("Take the contention off the hot row of %s on %s: keep the transaction that updates it short (update the row last and commit at once, no calls to other services while it is held), or queue the updates of that item through one worker", t, h.Subject)
			r.med("Split the hot row (per-warehouse or bucketed counters summed on read), or reserve with a conditional single-statement update; set lock_timeout so callers fail fast instead of queueing")
			r.low("Alert on lock waits per relation and on the length of the lock wait queue")
			return
		}
		if h.fact("queue_head") != "" {
			r.high("Keep schema changes from queueing behind long sessions on %s: run DDL (ALTER TABLE, ATTACH PARTITION) with a short lock_timeout and retry it, so a request for an AccessExclusiveLock never waits behind %s while every query queues behind it", h.Subject, b)
			r.med("Schedule the DDL job and %s so that they do not overlap (the DDL before or after the run), or run the dump from a replica", b)
			r.low("Log and alert on lock waits (log_lock_waits, pg_locks not granted) and on the length of the wait queue")
			return
		}
		r.high("End or commit the long transaction that holds the locks on %s (%s): kill its session or stop the run, and the waiting sessions proceed", h.Subject, b)
		r.med("Commit %s in small batches instead of one transaction over the whole run (no SELECT … FOR UPDATE over the table), and schedule it outside peak traffic", b)
		r.low("Alert on row-lock waits and on the oldest open transaction's age; set lock wait timeouts so callers fail fast")
	},
}

var (
	// Series counting sessions waiting for a lock, or timing the waits.
	lockWaitMetricRE = regexp.MustCompile(`(?i)row_lock_current_waits|lock_current_waits|lock_waits|locks_waiting|waiting_(queries|sessions|locks)|blocked_(queries|sessions|processes)|lock_wait_count`)
	lockTimeMetricRE = regexp.MustCompile(`(?i)row_lock_time(_avg|_max)?$|lock_wait_(time|seconds)`)
	// Series of a replica's delay behind its primary.
	replLagMetricRE = regexp.MustCompile(`(?i)replication_lag|replica_lag|replay_lag|seconds_behind_(master|source|primary)|slave_lag|standby_lag|lag_seconds$`)
	// Series of the oldest or longest open transaction, per user/application.
	txAgeMetricRE = regexp.MustCompile(`(?i)max_tx_duration|oldest_(transaction|xact|tx)|xact_age|transaction_age|long_running_(transactions?|queries)|trx_(time|age)|max_(transaction|query)_(duration|age)`)
	// A database server's own log saying sessions or replay wait.
	dbWaitLineRE = regexp.MustCompile(`(?i)recovery still waiting|recovery conflict|conflict with recovery|still waiting for \w*Lock|Lock wait timeout exceeded|deadlock detected|Process holding the lock|blocked by process|waiting for (table metadata|row) lock`)
	// A client's log saying it opened a transaction that holds rows.
	holdLineRE = regexp.MustCompile(`(?i)\bfor update\b|\bbegin( transaction)?\b|\bstart transaction\b|\block tables?\b|commit deferred|deferred commit|autocommit\s*[=:]\s*(false|0|off)\b|long[- ]running (transaction|query)|idle in transaction`)
	// The statement that opens the holding transaction, over a line that
	// only says the commit waits.
	strongHoldRE = regexp.MustCompile(`(?i)\bfor update\b|\bbegin( transaction)?\b|\bstart transaction\b|\block tables?\b`)
	// What a change may do to make a transaction block others.
	dbBlockChangeRE = regexp.MustCompile(`(?i)max_standby|hot_standby|standby|replica|lock_timeout|lock_wait_timeout|isolation|idle_in_transaction|statement_timeout|oncalendar|schedule|cron|timer|batch|reconcile|report|dashboard|refresh`)
	sqlUserLabels   = []string{"usename", "user", "username", "application_name", "application", "client", "datname"}
	// The row a lock wait is on, as the database's own log names it:
	// PostgreSQL's CONTEXT ("while updating tuple (1822,14) in relation
	// "stock_levels""), InnoDB's lock monitor ("RECORD LOCKS space id 58
	// page no 3 n bits 72 index PRIMARY of table `shop`.`stock`").
	waitRowRE = regexp.MustCompile(`(?i)while (?:updating|locking|deleting) tuple \((\d+,\d+)\) in relation "([^"]+)"|RECORD LOCKS space id \d+ (page no \d+) n bits \d+ index \S+ of table ` + "`" + `[^` + "`" + `]+` + "`" + `\.` + "`" + `([^` + "`" + `]+)` + "`")
	// The values a logged statement was bound to (PostgreSQL's DETAIL
	// parameters line, MySQL's general log keeps them inline).
	boundParamsRE = regexp.MustCompile(`(?i)\bparameters:\s*(.+)$`)
	// A database's log, or a client's, saying a deadlock was detected.
	deadlockLineRE = regexp.MustCompile(`(?i)deadlock detected|deadlock found|deadlock victim|was deadlocked|ORA-00060|ER_LOCK_DEADLOCK|SQLSTATE\W*40P01`)
	// What a change may do to make many sessions write one row at once:
	// a sale or a launch concentrating traffic on one item, a
	// transaction made longer or wider.
	hotRowChangeRE = regexp.MustCompile(`(?i)\bsale\b|flash|promo|campaign|launch|drop\b|transaction|isolation|lock|for update|reserv|counter`)
	// A question that asks whether there are deadlocks.
	deadlockAskRE = regexp.MustCompile(`(?i)\bdead-?locks?\b|\bdeadlocked\b`)
)

// hotRow is the one row lock waits queue on, when the database's log
// says the first and the last of many waits are on the same row.
type hotRow struct {
	table, row string // relation and tuple (or page) the waits name
	waits      int    // waits naming a row
	params     string // the values the waiting statements were bound to
}

// hotRowOf finds, in a database's own log, whether its lock waits queue on
// one row: the waits' context names one relation, and the first and the
// last of at least ten name the same row. Many sessions updating the same
// row (a stock counter during a sale, a balance, a sequence table)
// serialise: each holds the row until it commits, the rest queue.
func hotRowOf(set *LogSet) *hotRow {
	var hr *hotRow
	for _, t := range set.Templates {
		m := findSubmatch(waitRowRE, t.Example)
		if m == nil || t.Incident == 0 {
			continue
		}
		row, table := m[1]+m[3], m[2]+m[4]
		last := findSubmatch(waitRowRE, orWord(t.Last, t.Example))
		if last == nil || last[2]+last[4] != table {
			return nil // waits on more than one relation
		}
		if hr != nil && hr.table != table {
			return nil
		}
		if hr == nil {
			hr = &hotRow{table: table}
		}
		hr.waits += t.Incident
		if last[1]+last[3] == row && t.Incident >= 10 && (hr.row == "" || hr.row == row) {
			hr.row = row
		}
	}
	if hr == nil || hr.row == "" {
		return nil
	}
	// The bound values of the slow statements, when the first and the
	// last of many are the same (the same item's key).
	best := 0
	for _, t := range set.Templates {
		m, l := findSubmatch(boundParamsRE, t.Example), findSubmatch(boundParamsRE, orWord(t.Last, t.Example))
		if m == nil || l == nil || m[1] != l[1] || t.Incident < 10 || t.Incident <= best {
			continue
		}
		best, hr.params = t.Incident, strings.TrimSpace(m[1])
	}
	return hr
}

// deadlocksIn counts what the evidence says of deadlocks on inst: lines
// of its own log (or any log) saying a deadlock was detected, and the rise
// of a deadlock counter (pg_stat_database_deadlocks,
// mysql_global_status_innodb_deadlocks...) in the window. counter names
// the counter read, "" when none was.
func deadlocksIn(ev *Gathered, inst string) (lines, counted int, counter string) {
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if t.Incident > 0 && matchLine(deadlockLineRE, t.Example) {
				lines += t.Incident
			}
		}
	}
	w := ev.Window
	for _, ms := range ev.Metrics {
		if !strings.Contains(strings.ToLower(ms.Name), "deadlock") {
			continue
		}
		for _, s := range ms.Series {
			if d := dbInstanceOf(s.Labels); d != "" && d != inst {
				continue
			}
			counter = ms.Name
			var first, last float64
			seen := false
			for _, p := range inWindow(s.Points, w.Start, w.End) {
				if !seen {
					first, seen = p.V, true
				}
				last = p.V
			}
			if ms.Class == MetricErrors {
				// Read as a rate: any point above zero is a deadlock.
				for _, p := range inWindow(s.Points, w.Start, w.End) {
					if p.V > 0 {
						counted++
						break
					}
				}
			} else if last > first {
				counted += int(last - first)
			}
		}
	}
	return lines, counted, counter
}

// dbSignal is one database instance's blocking condition.
type dbSignal struct {
	instance  string // host of the database (no port)
	condition string // "lock" or "replication"
	onset     time.Time
	before    float64
	peak      float64
	metric    string
	unit      string
	evidence  []string
	line      string // the database's own log line, when it has one
	src       string
	stated    *sqlState // what a SQL client's output stated, when one did
	hot       *hotRow   // the one row the lock waits queue on
	server    *LogSet   // the database's own log that shows the waits
}

// detectDBBlocked finds database instances whose sessions wait on locks or
// whose replay stalls, and the transaction behind it.
func detectDBBlocked(ev *Gathered, found []Finding) []Finding {
	w := ev.Window
	sigs := map[string]*dbSignal{}
	get := func(inst, cond string) *dbSignal {
		k := inst + "|" + cond
		if sigs[k] == nil {
			sigs[k] = &dbSignal{instance: inst, condition: cond}
		}
		return sigs[k]
	}
	for _, ms := range ev.Metrics {
		cond := ""
		switch {
		case matchLine(lockWaitMetricRE, ms.Name):
			cond = "lock"
		case matchLine(replLagMetricRE, ms.Name) && !strings.Contains(strings.ToLower(ms.Name), "consumer"):
			cond = "replication"
		default:
			continue
		}
		for _, s := range ms.Series {
			inst := dbInstanceOf(s.Labels)
			if inst == "" {
				continue
			}
			scale := 1.0
			if cond == "replication" && (strings.Contains(ms.Name, "_ms") || strings.Contains(ms.Name, "millis")) {
				scale = 0.001
			}
			before, peak, onset, ok := riseOf(s.Points, w, scale, cond)
			if !ok {
				continue
			}
			sg := get(inst, cond)
			if sg.onset.IsZero() || onset.Before(sg.onset) || peak > sg.peak {
				sg.before, sg.peak, sg.metric = before, peak, ms.Name
				if sg.onset.IsZero() || onset.Before(sg.onset) {
					sg.onset = onset
				}
			}
			sg.src = SrcMetrics
		}
	}
	// What a SQL client run against the database printed (psql in the
	// replica's pod through kubectl exec, mysql on its host): a replay lag
	// stated at the time of the capture began that long before it.
	states := map[string]*sqlState{}
	for _, st := range sqlStates(ev.Commands) {
		states[st.instance] = st
		if st.lag < 2*time.Minute {
			continue
		}
		sg := get(st.instance, "replication")
		onset := w.End.Add(-st.lag).Truncate(time.Second)
		if sg.onset.IsZero() || onset.Before(sg.onset) {
			sg.onset = onset
		}
		if sg.src == "" {
			sg.src = SrcKubernetes
		}
		sg.stated = st
		e := fmt.Sprintf("%s on %s (%s) states %s %s: replay stopped about %s", findSubmatch(sqlClientRE, orWord(st.command, "psql"))[2], st.where, st.source, st.lagCol, fmtLag(st.lag), ts(onset.Truncate(time.Minute)))
		if st.standby {
			e += "; it is a standby (pg_is_in_recovery = t)"
		}
		if st.stalled != "" {
			e += "; " + st.stalled
		}
		sg.evidence = append(sg.evidence, e)
	}
	// A database's own log saying what waits.
	waitKey := func(set *LogSet, line string) (inst, cond string) {
		cond = "lock"
		if strings.Contains(strings.ToLower(line), "recovery") {
			cond = "replication"
		}
		inst = set.Subject
		if inst == "" {
			inst = subjectOfSource(set.Source)
		}
		return inst, cond
	}
	// The log alone counts when its waits repeat: PostgreSQL's lines
	// name their lock mode and wait queue, so one episode spreads over
	// several templates.
	waits := map[string]int{}
	for set, t := range incidentTemplates(ev) {
		if matchLine(dbWaitLineRE, t.Example) {
			inst, cond := waitKey(set, t.Example)
			waits[inst+"|"+cond] += t.Incident
		}
	}
	for set, t := range incidentTemplates(ev) {
		if !matchLine(dbWaitLineRE, t.Example) {
			continue
		}
		inst, cond := waitKey(set, t.Example)
		sg := sigs[inst+"|"+cond]
		if sg == nil {
			if waits[inst+"|"+cond] < 3 {
				continue
			}
			sg = get(inst, cond)
			sg.onset = firstOf(t.FirstIncident, t.FirstSeen)
			sg.src = SrcLogs
		} else if sg.src == SrcLogs && sg.metric == "" {
			sg.onset = earliest(sg.onset, firstOf(t.FirstIncident, t.FirstSeen))
		}
		if sg.server == nil && cond == "lock" {
			sg.server = set
		}
		if sg.hot == nil && cond == "lock" {
			sg.hot = hotRowOf(set)
		}
		if sg.line == "" {
			sg.line = t.Example
			sg.evidence = append(sg.evidence, fmt.Sprintf("%s logged %d lines of %q from %s", orWord(set.Subject, set.Source), t.Incident, ReadableLine(t.Example), ts(firstOf(t.FirstIncident, t.FirstSeen))))
		}
	}
	keys := slices.Sorted(maps.Keys(sigs))
	var out []Finding
	for _, k := range keys {
		sg := sigs[k]
		if sg.onset.IsZero() || sg.onset.Before(w.BaselineStart) {
			continue
		}
		f := Finding{Kind: KindDBBlocked, Subject: sg.instance, Object: "database " + sg.instance, Time: sg.onset, Severity: SevCritical,
			Weight: 0.75, Source: sg.src}
		f.setFact("host", sg.instance)
		f.setFact("condition", sg.condition)
		f.setFact("line", sg.line)
		if sg.metric != "" {
			f.setFact("metric", sg.metric)
			f.setFact("before", fmtCount(sg.before, sg.condition))
			f.setFact("peak", fmtCount(sg.peak, sg.condition))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s rose from %s to %s (beyond normal since %s)", sg.metric, sg.instance, fmtCount(sg.before, sg.condition), fmtCount(sg.peak, sg.condition), ts(sg.onset)))
		}
		if lt := lockTimeOf(ev.Metrics, sg.instance, w); lt != "" && sg.condition == "lock" {
			f.setFact("lock_time", lt)
			f.Evidence = append(f.Evidence, lt)
		}
		f.Evidence = append(f.Evidence, sg.evidence...)
		if who, detail, since := txHolderOf(ev.Metrics, sg.instance, w); who != "" {
			f.setFact("blocker", who)
			f.setFact("blocker_detail", detail)
			f.Evidence = append(f.Evidence, detail)
			f.Weight = 0.9
			_ = since
		} else if st := states[sg.instance]; st != nil && st.holder != "" {
			// The longest open transaction a session list (pg_stat_activity,
			// SHOW PROCESSLIST) showed on the instance.
			f.setFact("blocker", st.holder)
			f.setFact("blocker_detail", fmt.Sprintf("a transaction of %s open %s on %s (%s)", st.holder, fmtLag(st.holderAge), st.where, quote(st.holderDetail, 160)))
			f.Evidence = append(f.Evidence, "the session list on "+st.where+" shows "+f.fact("blocker_detail"))
			f.Weight = 0.9
		} else if q := lockQueueOf(ev, sg.server); q != nil {
			// The server's own log names the session that holds the lock
			// and the queue behind it.
			f.setFact("blocker", q.holder)
			f.setFact("blocker_detail", q.detail)
			f.setFact("queue_head", q.head)
			f.Evidence = append(f.Evidence, q.evidence...)
			f.Weight = 0.9
		} else if who, host, line, at := holderInLogs(ev.Logs, sg, w); who != "" {
			f.setFact("blocker", who)
			f.setFact("blocker_host", host)
			f.setFact("blocker_line", line)
			f.setFact("blocker_since", ts(at))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s opened a transaction at %s that holds its rows: %s", who, ts(at), quote(ReadableLine(line), 200)))
			f.Weight = 0.9
		}
		if who := f.fact("blocker"); who != "" {
			if c := changeOfBlocker(ev.Changes, who, sg.onset); c != nil {
				f.setFact("blocker_change", fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
				f.Evidence = append(f.Evidence, f.fact("blocker_change"))
			}
			f.Related = append(f.Related, blockerName(who))
		}
		if c := changeOfDatabase(append(slices.Clone(ev.Earlier), ev.Changes...), sg.instance, sg.onset); c != nil {
			f.setFact("db_change", fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			f.Evidence = append(f.Evidence, f.fact("db_change"))
		}
		for _, v := range victimsOf(found, sg) {
			if !slices.Contains(f.Related, v) {
				f.Related = append(f.Related, v)
			}
		}
		if st := sg.stated; st != nil && st.mysql || strings.HasPrefix(strings.ToLower(sg.metric), "mysql") || strings.Contains(strings.ToLower(sg.metric), "seconds_behind") {
			f.setFact("engine", "mysql")
		}
		if st := sg.stated; st != nil {
			f.setFact("lag_stated", fmtLag(st.lag))
			for _, x := range st.settings {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s runs with %s: a query on the standby may hold back replay without limit", st.where, x))
			}
			if len(st.settings) > 0 {
				f.setFact("standby_setting", st.settings[0])
			}
		}
		// Clients that read from it see what it holds back (stale reads
		// from a lagging replica) without an error of their own.
		for _, c := range clientsOfDatabase(ev, sg.instance) {
			if c.name == blockerName(f.fact("blocker")) || slices.Contains(f.Related, c.name) {
				continue
			}
			f.Related = append(f.Related, c.name)
			f.Evidence = append(f.Evidence, c.why)
		}
		f.setFact("db_instance", sg.instance)
		f.setFact("affected", strings.Join(f.Related, ","))
		if hr := sg.hot; hr != nil && f.fact("blocker") == "" {
			f.setFact("hot_table", hr.table)
			f.setFact("hot_row", hr.row)
			f.setFact("hot_params", hr.params)
			e := fmt.Sprintf("the lock waits on %s queue on one row: %d waits name relation %s, and the first and the last of them tuple (%s)", sg.instance, hr.waits, hr.table, hr.row)
			if hr.params != "" {
				e += fmt.Sprintf("; the waiting statements are bound to the same values (%s)", truncate(hr.params, 120))
			}
			f.Evidence = append(f.Evidence, e)
			// The row the waits queue on is what holds them: as
			// direct as naming a long transaction.
			f.Weight = 0.9
		}
		if sg.condition == "lock" {
			lines, counted, counter := deadlocksIn(ev, sg.instance)
			switch {
			case lines > 0 || counted > 0:
				f.setFact("deadlocks", fmt.Sprintf("%d", max(lines, counted)))
			case counter != "" || sg.line != "":
				f.setFact("deadlocks", "none")
				e := fmt.Sprintf("no deadlock on %s in the window: ", sg.instance)
				var parts []string
				if sg.line != "" {
					parts = append(parts, "its log has no \"deadlock detected\" line")
				}
				if counter != "" {
					parts = append(parts, counter+" did not rise")
				}
				f.Evidence = append(f.Evidence, e+strings.Join(parts, " and "))
			}
		}
		if f.fact("blocker") == "" && sg.line == "" {
			// A lag, or waits, without what holds them: the database is
			// where to look, not yet why.
			f.Weight = 0.6
		}
		if sg.condition == "replication" {
			f.Summary = fmt.Sprintf("replication on %s stalls (replay lag %s)", sg.instance, orWord(f.fact("peak"), orWord(f.fact("lag_stated"), "growing")))
		} else if f.fact("hot_table") != "" {
			f.Summary = fmt.Sprintf("sessions on %s queue for row locks on one hot row of %s (lock contention)", sg.instance, f.fact("hot_table"))
		} else {
			f.Summary = fmt.Sprintf("sessions on %s wait for row locks held by a long transaction (%s waiting)", sg.instance, orWord(f.fact("peak"), "many"))
		}
		out = append(out, f)
	}
	return out
}

// riseOf measures a blocking series: its baseline median, its peak in the
// window and the first point beyond normal. Lock waits must reach a few
// sessions; replication lag a couple of minutes.
func riseOf(pts []evidence.Point, w Window, scale float64, cond string) (before, peak float64, onset time.Time, ok bool) {
	var base []float64
	for _, p := range pts {
		v := p.V * scale
		switch {
		case p.T.Before(w.BaselineStart):
		case p.T.Before(w.Start):
			base = append(base, v)
		case !p.T.After(w.End):
			peak = max(peak, v)
		}
	}
	before = medianOf(base)
	floor, factor := 3.0, 4.0
	if cond == "replication" {
		floor, factor = 120, 10
	}
	limit := max(floor, factor*(before+1))
	if peak < limit {
		return 0, 0, time.Time{}, false
	}
	mark := max(floor/2, 2*(before+1))
	if cond == "replication" {
		mark = max(60, 3*(before+1))
	}
	for _, p := range pts {
		if !p.T.Before(w.BaselineStart) && !p.T.After(w.End) && p.V*scale >= mark {
			return before, peak, p.T, true
		}
	}
	return before, peak, time.Time{}, false
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}

func fmtCount(v float64, cond string) string {
	if cond == "replication" {
		return formatValue(v, "s")
	}
	return fmt.Sprintf("%.0f", v)
}

// dbInstanceOf names the database a series is about: its server or
// instance label's host.
func dbInstanceOf(l evidence.Labels) string {
	for _, k := range []string{"server", "instance", "host", "DBInstanceIdentifier", "db_instance"} {
		if v := l[k]; v != "" {
			return strings.ToLower(DependencyName(v))
		}
	}
	return ""
}

// lockTimeOf describes how long lock waits take on inst, when a series says.
func lockTimeOf(sets []MetricSet, inst string, w Window) string {
	for _, ms := range sets {
		if !matchLine(lockTimeMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if dbInstanceOf(s.Labels) != inst {
				continue
			}
			before, peak, _, ok := riseOf(s.Points, w, 1, "lock")
			if ok {
				return fmt.Sprintf("%s of %s rose from %.0f to %.0f", ms.Name, inst, before, peak)
			}
		}
	}
	return ""
}

// txHolderOf names the longest open transaction on inst from a series of
// transaction ages per user or application, when one is open for minutes.
func txHolderOf(sets []MetricSet, inst string, w Window) (who, detail string, since time.Time) {
	best := 0.0
	for _, ms := range sets {
		if !matchLine(txAgeMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if dbInstanceOf(s.Labels) != inst {
				continue
			}
			v := 0.0
			for _, p := range s.Points {
				if !p.T.Before(w.Start) && !p.T.After(w.End) {
					v = max(v, p.V)
				}
			}
			if v < 300 || v <= best {
				continue
			}
			var parts []string
			for _, k := range sqlUserLabels {
				if x := s.Labels[k]; x != "" && !slices.Contains(parts, x) {
					parts = append(parts, k+"="+x)
				}
			}
			if len(parts) == 0 {
				continue
			}
			best = v
			who = strings.Join(parts, ", ")
			since = w.End.Add(-time.Duration(v * float64(time.Second)))
			detail = fmt.Sprintf("a long-running transaction on %s (%s) has been open %s (%s), since about %s", inst, who, formatValue(v, "s"), ms.Name, ts(since.Truncate(time.Minute)))
		}
	}
	return who, detail, since
}

// holderInLogs finds a client whose own log says it opened a transaction
// holding rows shortly before the database's sessions began to wait, and
// that was still running then: a batch's SELECT … FOR UPDATE, a deferred
// commit. A client naming the database's host comes first.
func holderInLogs(sets []LogSet, sg *dbSignal, w Window) (who, host, line string, at time.Time) {
	bestRank := -1
	for i := range sets {
		set := &sets[i]
		name := subjectOfSource(set.Source)
		if strings.EqualFold(name, sg.instance) || strings.EqualFold(set.Subject, sg.instance) {
			continue
		}
		namesHost := false
		var last time.Time
		for _, t := range set.Templates {
			if strings.Contains(strings.ToLower(t.Example), sg.instance) {
				namesHost = true
			}
			if t.LastSeen.After(last) {
				last = t.LastSeen
			}
		}
		for _, t := range set.Templates {
			if !matchLine(holdLineRE, t.Example) || t.FirstSeen.IsZero() {
				continue
			}
			lead := sg.onset.Sub(t.FirstSeen)
			if lead < -2*time.Minute || lead > 90*time.Minute || last.Before(sg.onset) {
				continue
			}
			rank := 1
			if namesHost {
				rank += 2
			}
			if matchLine(strongHoldRE, t.Example) {
				rank++
			}
			if rank > bestRank || rank == bestRank && t.FirstSeen.Before(at) {
				bestRank = rank
				who, line, at = name, t.Example, t.FirstSeen
				if set.Subject != "" && !strings.EqualFold(set.Subject, name) {
					host = set.Subject
				}
			}
		}
	}
	if who != "" && host != "" {
		who = fmt.Sprintf("%s (on %s)", who, host)
	}
	return who, host, line, at
}

// blockerName is the system name of a blocker description.
func blockerName(who string) string {
	if i := strings.Index(who, " ("); i > 0 {
		return who[:i]
	}
	if strings.Contains(who, "=") {
		return ""
	}
	return who
}

// changeOfBlocker is the latest change to the client holding the
// transaction (a batch rescheduled, a dashboard's refresh enabled) before
// the onset, within a day.
func changeOfBlocker(cs []evidence.Change, who string, onset time.Time) *evidence.Change {
	low := strings.ToLower(who)
	var best *evidence.Change
	for i := range cs {
		c := &cs[i]
		svc := strings.ToLower(c.Service)
		if svc == "" || !strings.Contains(low, svc) || c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > 24*time.Hour {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// changeOfDatabase is a change to the database's own settings that lets a
// transaction block others (a standby allowed to delay replay forever, a
// lock timeout removed), at most 30 days before the onset.
func changeOfDatabase(cs []evidence.Change, inst string, onset time.Time) *evidence.Change {
	var best *evidence.Change
	for i := range cs {
		c := &cs[i]
		if !strings.EqualFold(DependencyName(c.Service), inst) || c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > 30*24*time.Hour {
			continue
		}
		if !matchLine(dbBlockChangeRE, c.Description) {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// victimsOf are the services whose calls slowed or failed when the
// database began to block: their latency, slow queries and operations,
// timeouts, from shortly before its onset.
func victimsOf(found []Finding, sg *dbSignal) []string {
	var out []string
	for i := range found {
		f := &found[i]
		switch f.Kind {
		case KindLatency, KindSlowOperation, KindSlowQuery, KindTimeout, KindDatabase, KindErrorRate:
		default:
			continue
		}
		if f.Subject == "" || f.Subject == "*" || isNodeName(f.Subject) || f.Subject == "node" || strings.EqualFold(f.Subject, sg.instance) {
			continue
		}
		if f.Source == SrcMetrics && dbEngineMetricSubject(f.Subject) {
			continue
		}
		d := f.Time.Sub(sg.onset)
		if f.Time.IsZero() || d < -10*time.Minute || d > 45*time.Minute {
			continue
		}
		if !slices.Contains(out, f.Subject) {
			out = append(out, f.Subject)
		}
	}
	return out
}

// dbEngineMetricSubject reports whether a metric subject is a database
// exporter's job (mysqld, postgres) rather than a service.
func dbEngineMetricSubject(s string) bool {
	switch strings.ToLower(s) {
	case "mysqld", "mysql", "postgres", "postgresql", "redis", "mongodb":
		return true
	}
	return false
}

func describeDBBlocked(h *Hypothesis, sc Scope) string {
	d := describeDBBlockedCause(h)
	// A question whether there are deadlocks is answered first, yes or
	// no, with what the evidence shows instead.
	if matchLine(deadlockAskRE, sc.Message+" "+sc.Hint) {
		switch n := h.fact("deadlocks"); {
		case n == "none":
			d = fmt.Sprintf("No deadlocks: nothing on %s reports one in the window (%s). What its log shows is %s", h.Subject, deadlockNoneWhy(h), d)
		case n != "":
			d = fmt.Sprintf("Yes, deadlocks (%s reported on %s); behind them, %s", n, h.Subject, d)
		}
	}
	return d
}

// deadlockNoneWhy is the evidence that no deadlock happened.
func deadlockNoneWhy(h *Hypothesis) string {
	for _, f := range h.Primary {
		for _, e := range f.Evidence {
			if strings.HasPrefix(e, "no deadlock on ") {
				_, why, _ := strings.Cut(e, ": ")
				return why
			}
		}
	}
	return "no deadlock line, no deadlock counter rising"
}

func describeDBBlockedCause(h *Hypothesis) string {
	inst := h.Subject
	var d string
	if h.fact("condition") == "replication" && h.fact("engine") == "mysql" {
		// MySQL's replica applies the source's binary log events: no WAL
		// replay, no recovery conflict.
		d = fmt.Sprintf("replication lag on %s: the MySQL replica's applier is behind its source (", inst)
		if p := h.fact("peak"); p != "" {
			d += fmt.Sprintf("replication lag from %s to %s", h.fact("before"), p)
		} else if l := h.fact("lag_stated"); l != "" {
			d += fmt.Sprintf("%s behind when it was read", l)
		}
		d += "), so reads from it return stale data"
		d += h.quoteClause(": ", "line", 180)
		if b := h.fact("blocker_detail"); b != "" {
			d += "; the applier waits behind " + b
		} else {
			d += "; what the applier is busy with or waits for is not in the evidence (a large transaction or DDL from the source, a replica query holding a metadata lock, the replica's disk)"
		}
	} else if h.fact("condition") == "replication" {
		d = fmt.Sprintf("replication lag on %s: the replica's WAL replay is stalled (lagging behind the primary", inst)
		if p := h.fact("peak"); p != "" {
			d += fmt.Sprintf(", replication lag from %s to %s", h.fact("before"), p)
		} else if l := h.fact("lag_stated"); l != "" {
			d += fmt.Sprintf(" by %s when it was read", l)
		}
		d += "), so reads from it return stale data"
		if h.fact("blocker") == "" && h.fact("line") == "" {
			d += "; what holds replay back is not in the evidence (a long query on the replica, its disk or network)"
		}
		d += h.quoteClause(": ", "line", 180)
		if b := h.fact("blocker_detail"); b != "" {
			d += "; replay waits on a recovery conflict with " + b
		} else if b := h.fact("blocker"); b != "" {
			d += "; replay waits on a recovery conflict with a long-running query of " + b
		}
	} else if t := h.fact("hot_table"); t != "" {
		d = fmt.Sprintf("row-lock contention on %s on one hot row: the lock waits all queue on the same row of %s (tuple (%s))", inst, t, h.fact("hot_row"))
		if p := h.fact("hot_params"); p != "" {
			d += fmt.Sprintf(", the statements bound to the same values (%s)", truncate(p, 120))
		}
		d += ": concurrent transactions updating that single row serialise, each holding its lock until it commits while the rest wait in the queue; the database is not overloaded, the work is serialised on one row"
		d += h.quoteClause(": ", "line", 180)
	} else {
		d = fmt.Sprintf("row-lock waits on %s: sessions wait for locks held by a long transaction", inst)
		if p := h.fact("peak"); p != "" {
			d += fmt.Sprintf(" (%s sessions waiting for a lock, %s before)", p, h.fact("before"))
		}
		d += h.clause("; ", "lock_time")
		d += h.quoteClause(": ", "line", 180)
		switch {
		case h.fact("queue_head") != "":
			d = fmt.Sprintf("a lock queue on %s: %s holds a lock on a table for its whole run; %s, queued behind it, and every later query on that table (the callers' reads and writes) queues behind that request until the holder ends", inst, h.fact("blocker_detail"), h.fact("queue_head"))
			d += h.quoteClause(": ", "line", 180)
		case h.fact("blocker_line") != "":
			d += fmt.Sprintf("; the lock holder is %s, which opened a long transaction at %s: %s", h.fact("blocker"), h.fact("blocker_since"), quote(ReadableLine(h.fact("blocker_line")), 180))
		case h.fact("blocker_detail") != "":
			d += "; the lock holder: " + h.fact("blocker_detail")
		}
	}
	d += h.clause("; it runs then since the ", "blocker_change")
	if c := h.fact("db_change"); c != "" {
		d += "; made possible by the " + c
	} else if x := h.fact("standby_setting"); x != "" {
		d += "; made possible by " + x + " on the standby"
	}
	var victims []string
	for _, f := range h.Primary {
		for _, r := range f.Related {
			if r != blockerName(h.fact("blocker")) && !slices.Contains(victims, r) {
				victims = append(victims, r)
			}
		}
	}
	if len(victims) > 0 {
		if h.fact("condition") == "replication" {
			d += fmt.Sprintf("; its readers get stale data or wait with it: %s", strings.Join(victims, ", "))
		} else {
			d += fmt.Sprintf("; the callers wait with it: %s", strings.Join(victims, ", "))
		}
	}
	return d
}

func firstOf(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// fmtLag prints a stated lag or age to the second ("37m49s").
func fmtLag(d time.Duration) string {
	return d.Truncate(time.Second).String()
}

// dbClient is a workload that calls a database, and what says so.
type dbClient struct{ name, why string }

// clientsOfDatabase finds the workloads that call a database instance:
// those whose changes (of the window or the month before) name it or a
// Service selecting its pods ("reads served from profiles-db-ro"), or
// whose containers' environment does.
func clientsOfDatabase(ev *Gathered, inst string) []dbClient {
	names := []string{inst}
	for _, s := range ev.K8s.Services {
		for _, v := range s.Service.Spec.Selector {
			if strings.EqualFold(v, inst) && !slices.Contains(names, s.Service.Name) {
				names = append(names, s.Service.Name)
			}
		}
	}
	mentions := func(text string) string {
		low := strings.ToLower(text)
		for _, n := range names {
			if i := strings.Index(low, n); i >= 0 && wordEdge(low, i-1) && wordEdge(low, i+len(n)) {
				return n
			}
		}
		return ""
	}
	var out []dbClient
	seen := map[string]bool{inst: true}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		svc := strings.ToLower(c.Service)
		if svc == "" || seen[svc] || slices.Contains(names, svc) {
			continue
		}
		if n := mentions(c.Description); n != "" {
			seen[svc] = true
			out = append(out, dbClient{svc, fmt.Sprintf("%s calls %s: %s change of %s at %s: %q", svc, n, c.Kind, c.Service, ts(c.Timestamp), c.Description)})
		}
	}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		wl := WorkloadOfPod(p)
		if seen[wl] {
			continue
		}
		for _, ct := range p.Spec.Containers {
			for _, e := range ct.Env {
				if n := mentions(e.Value); n != "" && !seen[wl] {
					seen[wl] = true
					out = append(out, dbClient{wl, fmt.Sprintf("%s calls %s (%s=%s)", wl, n, e.Name, e.Value)})
				}
			}
		}
	}
	return out
}

// wordEdge reports whether position i of s is outside a name: the start
// or end of s, or a character that cannot continue a host name.
func wordEdge(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	c := s[i]
	return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_')
}

var (
	// pgHolderRE is PostgreSQL's log_lock_waits DETAIL: the session that
	// holds the lock and the queue of waiting sessions, head first.
	pgHolderRE = regexp.MustCompile(`Process(?:es)? holding the lock: (\d+)(?:[^.]*)\.(?: Wait queue: ([\d, ]+))?`)
	// pgWaitModeRE is the lock mode a session waits for.
	pgWaitModeRE = regexp.MustCompile(`process (\d+) still waiting for (\w+Lock)`)
	// pgStatementRE is a logged statement ("STATEMENT:  ALTER TABLE …",
	// "statement: SELECT …").
	pgStatementRE = regexp.MustCompile(`(?i)\bstatement:\s+(.+)$`)
	// pgSessionRE is a session's user and database in the log line prefix
	// ("[47102] backup@orders", "user=backup,db=orders").
	pgSessionRE = regexp.MustCompile(`(\w[\w-]*)@(\w[\w-]*)|user=(\w[\w-]*)`)
	// pgAppRE is the application a session gave.
	pgAppRE = regexp.MustCompile(`application_name=([\w.-]+)|\bapp=([\w.-]+)`)
)

// lockQueue is what a database's own log says of a queue of lock waits:
// the session holding the lock and the head of the queue behind it.
type lockQueue struct {
	holder, detail, head string
	evidence             []string
}

// lockQueueOf reads a PostgreSQL server's log (log_lock_waits) for the
// session most waits name as holding the lock: its user and application
// (from its own lines: connection authorized, its statements) and the
// client whose log names that application (the job that ran it); and the
// first session of the wait queue, when it waits for a stronger lock (an
// ALTER TABLE's AccessExclusiveLock) than the queries queued behind it.
func lockQueueOf(ev *Gathered, server *LogSet) *lockQueue {
	if server == nil {
		return nil
	}
	var lines []string
	for _, t := range server.Templates {
		for _, l := range t.Lines() {
			if !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
	}
	holders := map[string]int{}
	heads := map[string]int{}
	for _, l := range lines {
		if m := findSubmatch(pgHolderRE, l); m != nil {
			holders[m[1]]++
			if q := strings.Split(m[2], ","); m[2] != "" {
				if head := strings.TrimSpace(q[0]); head != m[1] {
					heads[head]++
				}
			}
		}
	}
	pid, n := "", 0
	for _, p := range slices.Sorted(maps.Keys(holders)) {
		if holders[p] > n {
			pid, n = p, holders[p]
		}
	}
	if pid == "" || n < 2 {
		return nil
	}
	// A session's lines carry its pid in the log line prefix.
	of := func(p string) []string {
		var out []string
		re := regexp.MustCompile(`\[` + p + `\]|\bpid=` + p + `\b|\(` + p + `\)`)
		for _, l := range lines {
			if matchLine(re, l) {
				out = append(out, l)
			}
		}
		return out
	}
	session := func(p string) (user, app, stmt, mode, line string) {
		for _, l := range of(p) {
			if m := findSubmatch(pgSessionRE, l); m != nil && user == "" {
				user = m[1] + m[3]
			}
			if m := findSubmatch(pgAppRE, l); m != nil && app == "" {
				app = m[1] + m[2]
				line = l
			}
			if m := findSubmatch(pgStatementRE, l); m != nil && stmt == "" {
				stmt = strings.TrimSpace(m[1])
			}
			if m := findSubmatch(pgWaitModeRE, l); m != nil && m[1] == p && mode == "" {
				mode = m[2]
				if line == "" {
					line = l
				}
			}
		}
		return user, app, stmt, mode, line
	}
	user, app, stmt, _, hline := session(pid)
	if user == "" && app == "" && stmt == "" {
		return nil
	}
	q := &lockQueue{}
	q.holder = orWord(app, user)
	q.detail = fmt.Sprintf("session %s", pid)
	if app != "" {
		q.detail = fmt.Sprintf("%s (session %s", app, pid)
		if user != "" {
			q.detail += " of user " + user
		}
		q.detail += ")"
	} else if user != "" {
		q.detail = fmt.Sprintf("a session of user %s (%s)", user, pid)
	}
	if stmt != "" {
		q.detail += fmt.Sprintf(", running %s", quote(stmt, 100))
	}
	// The client that ran it: another log naming its application.
	if job := clientNaming(ev, server, app); job != "" {
		q.detail += ", run by " + job
		q.holder = job
	}
	if hline != "" {
		q.evidence = append(q.evidence, fmt.Sprintf("%s: session %s holds the lock %d waits name: %s", orWord(server.Subject, server.Source), pid, n, quote(ReadableLine(hline), 200)))
	}
	head, hn := "", 0
	for _, p := range slices.Sorted(maps.Keys(heads)) {
		if heads[p] > hn {
			head, hn = p, heads[p]
		}
	}
	if head != "" {
		huser, happ, hstmt, hmode, hl := session(head)
		// A table lock that conflicts with plain reads and writes (DDL,
		// LOCK TABLE), not a row or transaction lock.
		strong := hmode == "AccessExclusiveLock" || hmode == "ExclusiveLock" || hmode == "ShareRowExclusiveLock" || hmode == "ShareLock"
		if strong && strings.Contains(hl, "on relation") {
			who := orWord(happ, huser)
			if job := clientNaming(ev, server, who); job != "" {
				who = job
			}
			q.head = fmt.Sprintf("%s (session %s) requested an %s", orWord(who, "a session"), head, hmode)
			if hstmt != "" {
				q.head += fmt.Sprintf(" for %s", quote(hstmt, 120))
			}
			q.evidence = append(q.evidence, fmt.Sprintf("%s: the head of the wait queue, session %s, waits for an %s: %s", orWord(server.Subject, server.Source), head, hmode, quote(ReadableLine(hl), 200)))
		}
	}
	if q.head == "" {
		return nil
	}
	return q
}

// clientNaming is the log set, other than the server's, whose lines name
// what (an application, a database user): the job or service that ran
// that session.
func clientNaming(ev *Gathered, server *LogSet, what string) string {
	if len(what) < 4 {
		return ""
	}
	low := strings.ToLower(what)
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set == server || set.Subject == server.Subject {
			continue
		}
		name := orWord(set.Subject, subjectOfSource(set.Source))
		if strings.Contains(strings.ToLower(name), low) {
			return name
		}
		for _, t := range set.Templates {
			if strings.Contains(strings.ToLower(t.Example), low) {
				return name
			}
		}
	}
	return ""
}
