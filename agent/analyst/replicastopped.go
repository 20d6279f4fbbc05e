package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A read replica whose replication stopped: its applier (MySQL's SQL
// thread, MariaDB's slave SQL thread, a PostgreSQL subscription's apply
// worker) hit an error applying a transaction from the primary and
// stopped, or its receiver (the I/O thread) stopped fetching. The replica
// keeps serving, answers every query, and shows no lag where its delay is
// not reported (Seconds_Behind_Source is NULL, an exporter shows 0): its
// readers get the data as of the moment it stopped, forever. The usual
// error is a duplicate key (1062) or a missing row (1032): someone wrote
// to the replica itself (it was left writable: read_only=0), so the
// primary's own write of the same row collides. It is read from SHOW
// REPLICA STATUS (Replica_SQL_Running: No, Last_SQL_Errno/Error and its
// timestamp), from the server's error log ("[Repl] Replica SQL for channel
// ...: ... Error_code: 1062", "replica SQL thread aborted"), and from the
// exporter's replica-running gauge falling to 0. The writer is a workload
// whose log names the replica as its target.

// KindReplicaStopped is a read replica whose replication stopped on an
// error, serving frozen data.
const KindReplicaStopped Kind = "replica_stopped"

var replicaStopped = &mechanism{
	kind:    KindReplicaStopped,
	class:   classCause,
	label:   "read replica's replication stopped on an error (serving frozen data)",
	detect:  detectReplicaStopped,
	metrics: replicaStoppedMetrics,
	// Its readers and the workload that wrote to it are part of it.
	related: relatedToTop(KindReplicaStopped),
	// Only a change of the workload that wrote to the replica, or one
	// that names the replica, brings its replication down: a reader's
	// cache setting changed meanwhile is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := changeText(c)
		for _, f := range h.Primary {
			if w := f.fact("writer"); w != "" && c.Subject == w {
				return true
			}
			if strings.Contains(text, f.Subject) {
				return true
			}
		}
		return false
	},
	strictTriggers: true,
	describe:       describeReplicaStopped,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		inst := h.Subject
		r.high("Send %s's reads to the primary or another replica that is running until %s replicates again: every read from it returns the data as of %s", orWord(h.fact("readers"), "the readers"), inst, orWord(h.fact("stopped_at"), "the moment it stopped"))
		switch errno := h.fact("errno"); errno {
		case "1062", "1032", "1452":
			r.high("Make %s's data agree with the primary for the failing row (remove the rows written on the replica itself, or rebuild it from a fresh copy of the primary), then START REPLICA and watch it catch up; skipping the event leaves the replica diverged", inst)
		default:
			r.high("Fix the error the replication of %s stopped on (Last_SQL_Error, the server's error log and performance_schema.replication_applier_status_by_worker), then START REPLICA and watch it catch up", inst)
		}
		r.med("Make replicas refuse writes (super_read_only=ON, read_only=ON in the server's configuration) and point jobs that write at the primary")
		r.low("Alert on the replica's threads not running (Replica_SQL_Running, mysql_slave_status_slave_sql_running = 0) and on a NULL lag, not only on a high one")
	},
}

var (
	// A server's error log: its replication applier or receiver stopped.
	replicaStoppedLineRE = regexp.MustCompile(`(?i)(?:Replica|Slave) SQL(?: thread)?(?: for channel '[^']*')?:.{0,400}?Error_code: (?:MY-0*)?(\d+)|(?:replica|slave) SQL thread aborted|(?:Replica|Slave) SQL: Error '[^']*' on query|(?:replica|slave) I/O thread (?:exiting|killed while)|Got fatal error (\d+) from (?:source|master) when reading data from binary log|logical replication (?:apply )?worker for subscription "[^"]+" (?:has stopped|will stop|exited)|background worker "logical replication (?:apply )?worker".{0,40}exited with exit code [1-9]`)
	// The error's own words in a replication failure ("Duplicate entry
	// '88123-EUR' for key 'product_prices.uq_product_currency'").
	replicaErrWordsRE = regexp.MustCompile(`(?i)(Duplicate entry '[^']*' for key '[^']*'|Can't find record in '[^']*'|Could not execute \w+ event on table [\w.]+|duplicate key value violates unique constraint "[^"]+"|Cannot add or update a child row)`)
	// "Error_code: 1062", "Error_code: MY-001062".
	replicaErrnoRE = regexp.MustCompile(`Error_code: (?:MY-0*)?(\d+)`)
	// A log line that states its host writes into a database ("target=
	// H:3306", "inserted 412 rows", "UPDATE ... on H").
	dbWriteLineRE = regexp.MustCompile(`(?i)\b(?:insert(?:ed|ing)?|updat(?:ed|ing)|delet(?:ed|ing)|upsert(?:ed|ing)?|wrote|writing|backfill(?:ed|ing)?)\b`)
)

// mysqlErrTimeLayout is Last_SQL_Error_Timestamp's form ("251121 11:02:17").
const mysqlErrTimeLayout = "060102 15:04:05"

// replicaErrWords is what a replication error says of the row: the
// duplicate or missing row rather than the event that hit it.
func replicaErrWords(s string) string {
	all := findAllString(replicaErrWordsRE, s, -1)
	for _, w := range all {
		if !strings.HasPrefix(w, "Could not execute") {
			return w
		}
	}
	if len(all) > 0 {
		return all[0]
	}
	return ""
}

// statusTime places a status's timestamp, printed with a two-digit year
// (MySQL's "251121 11:02:17"), on the investigation's clock: a year that
// puts it after now or months before is the same day and time of now's
// year (or the year before when that is still after now).
func statusTime(at, now time.Time) time.Time {
	if now.IsZero() || !at.After(now) && now.Sub(at) < 90*24*time.Hour {
		return at
	}
	t := time.Date(now.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
	if t.After(now) {
		t = t.AddDate(-1, 0, 0)
	}
	return t
}

// replicaStop is what the evidence says of one replica's stopped
// replication.
type replicaStop struct {
	inst, where         string
	thread              string // "SQL", "I/O", "apply worker"
	errno, errText      string
	at                  time.Time
	evidence            []string
	writable            bool
	metricAt            time.Time
	fromStatus, fromLog bool
}

// shortHost is a server's own name: the first label of a DNS name
// ("mysql-catalog-replica-1.db.internal" → "mysql-catalog-replica-1"),
// without a port; an IP address is kept whole.
func shortHost(h string) string {
	h = strings.ToLower(DependencyName(strings.TrimSpace(h)))
	if i := strings.IndexByte(h, '.'); i > 0 && !ipLike(h) {
		return h[:i]
	}
	return h
}

// detectReplicaStopped reads stopped replicas from SQL clients' replica
// status and from the servers' own error logs.
func detectReplicaStopped(ev *Gathered, found []Finding) []Finding {
	by := map[string]*replicaStop{}
	var order []string
	get := func(inst, where string) *replicaStop {
		k := shortHost(inst)
		if by[k] == nil {
			by[k] = &replicaStop{inst: k, where: where}
			order = append(order, k)
		}
		return by[k]
	}
	writable := map[string]bool{}
	for _, c := range ev.Commands {
		if !matchLine(sqlClientRE, c.Run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		inst, where := sqlInstanceOf(c)
		if inst == "" {
			continue
		}
		for _, t := range sqlTables(c.Lines) {
			for r := range t.rows {
				if ro, ok := readOnlyCells(&t, r); ok && !ro {
					writable[shortHost(inst)] = true
				}
				for _, th := range []struct{ col, name, errno, err string }{
					{"replica_sql_running", "SQL", "last_sql_errno", "last_sql_error"},
					{"slave_sql_running", "SQL", "last_sql_errno", "last_sql_error"},
					{"replica_io_running", "I/O", "last_io_errno", "last_io_error"},
					{"slave_io_running", "I/O", "last_io_errno", "last_io_error"},
				} {
					v := t.cell(r, th.col)
					if !strings.EqualFold(v, "No") {
						continue
					}
					st := get(inst, where)
					if st.thread == "SQL" && th.name == "I/O" {
						continue
					}
					st.fromStatus = true
					st.thread = th.name
					st.errno = orWord(t.cell(r, th.errno), st.errno)
					if e := t.cell(r, th.err); e != "" {
						// A multi-threaded applier's coordinator names
						// the worker's failure after its own words.
						if _, w, ok := strings.Cut(e, "The most recent failure being: "); ok {
							w, _, _ = strings.Cut(w, ". See error log")
							e = w
						}
						st.errText = e
					}
					col := map[string]string{"SQL": "last_sql_error_timestamp", "I/O": "last_io_error_timestamp"}[th.name]
					if at, err := time.Parse(mysqlErrTimeLayout, t.cell(r, col)); err == nil {
						st.at = statusTime(at, ev.Window.End)
					}
					e := fmt.Sprintf("%s on %s (%s): %s: No", findSubmatch(sqlClientRE, orWord(c.Run, c.Command))[2], where, c.Source, replicaColName(th.col))
					if st.errno != "" && st.errno != "0" {
						e += fmt.Sprintf(", %s_Errno: %s", map[string]string{"SQL": "Last_SQL", "I/O": "Last_IO"}[th.name], st.errno)
					}
					if !st.at.IsZero() {
						e += " at " + ts(st.at)
					}
					if lag := t.cell(r, "seconds_behind_source") + t.cell(r, "seconds_behind_master"); strings.EqualFold(lag, "NULL") {
						e += " (Seconds_Behind_Source: NULL: no lag is reported while it is stopped)"
					}
					st.evidence = append(st.evidence, e)
				}
			}
		}
	}
	// The server's own error log.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			var line string
			for _, l := range t.Lines() {
				if matchLine(replicaStoppedLineRE, l) {
					if line == "" || matchLine(replicaErrWordsRE, l) && !matchLine(replicaErrWordsRE, line) {
						line = l
					}
				}
			}
			if line == "" {
				continue
			}
			st := get(shortHost(serverOfLog(set)), set.Source)
			if st.thread == "" {
				st.thread = "SQL"
				if regexp.MustCompile(`(?i)I/O thread|fatal error \d+ from`).MatchString(line) {
					st.thread = "I/O"
				} else if strings.Contains(strings.ToLower(line), "logical replication") {
					st.thread = "apply worker"
				}
			}
			at := firstOf(t.FirstSeen, t.FirstIncident)
			if st.at.IsZero() || !at.IsZero() && at.Before(st.at) {
				st.at = at
			}
			if m := findSubmatch(replicaErrnoRE, line); m != nil && (st.errno == "" || st.errno == "0") {
				st.errno = m[1]
			}
			if replicaErrWords(line) != "" && replicaErrWords(st.errText) == "" {
				st.errText = line
			}
			if !st.fromLog {
				st.evidence = append(st.evidence, fmt.Sprintf("%s %s logged at %s: %s", set.Origin, set.Source, ts(at), quote(ReadableLine(line), 260)))
			}
			st.fromLog = true
		}
	}
	var out []Finding
	for _, k := range order {
		st := by[k]
		st.writable = writable[k]
		out = append(out, replicaStopFinding(ev, found, st))
	}
	return out
}

// serverOfLog names the server whose own log a set is: its subject without
// a log-kind suffix ("pg-ledger-01.postgresql" → "pg-ledger-01").
func serverOfLog(set *LogSet) string {
	s := orWord(set.Subject, subjectOfSource(set.Source))
	for _, suf := range []string{".postgresql", ".postgres", ".mysqld", ".mysql", ".mariadb", ".error", ".err", ".slow", ".server", ".clickhouse-server", ".cassandra", ".system"} {
		s = strings.TrimSuffix(s, suf)
	}
	return s
}

// replicaColName is SHOW REPLICA STATUS's own spelling of a column.
func replicaColName(col string) string {
	parts := strings.Split(col, "_")
	for i, p := range parts {
		switch p {
		case "sql", "io":
			parts[i] = strings.ToUpper(p)
		default:
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "_")
}

// readOnlyCells reads @@read_only (and @@super_read_only) from a result
// row: ro is whether the server refuses writes.
func readOnlyCells(t *sqlTable, r int) (ro, ok bool) {
	for _, col := range []string{"@@read_only", "@@global.read_only", "read_only", "@@super_read_only", "@@global.super_read_only", "super_read_only", "transaction_read_only"} {
		v := strings.ToLower(t.cell(r, col))
		switch v {
		case "1", "on", "true":
			return true, true
		case "0", "off", "false":
			ok = true
		}
	}
	return false, ok
}

// replicaStopFinding makes st a finding, with the replica's readers and
// the workload that wrote to it.
func replicaStopFinding(ev *Gathered, found []Finding, st *replicaStop) Finding {
	f := Finding{Kind: KindReplicaStopped, Subject: st.inst, Object: "database " + st.inst, Time: st.at, Severity: SevCritical,
		Weight: 0.85, Source: SrcKubernetes}
	if f.Time.IsZero() {
		f.Time = orTime(st.metricAt, ev.Window.Start)
	}
	if st.fromStatus && (st.fromLog || st.errno != "") {
		f.Weight = 0.95
	}
	f.Evidence = append(f.Evidence, st.evidence...)
	if st.fromStatus {
		// The replica's status is its state now, however long ago it
		// stopped.
		f.setFact("current", "true")
	}
	f.setFact("thread", st.thread)
	f.setFact("errno", st.errno)
	if w := replicaErrWords(st.errText); w != "" {
		f.setFact("error", w)
	} else if st.errText != "" {
		f.setFact("error", truncate(ReadableLine(st.errText), 200))
	}
	f.setFact("stopped_at", ts(f.Time))
	why := fmt.Sprintf("%s's replication %s stopped", st.inst, threadWord(st.thread))
	if st.errno != "" && st.errno != "0" {
		why += " on error " + st.errno
	}
	if e := f.fact("error"); e != "" {
		why += " (" + e + ")"
	}
	f.setFact("why", why)
	if st.writable {
		f.setFact("writable", "true")
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s accepts writes: read_only and super_read_only are off", st.where))
	}
	// Readers and writers: workloads whose configuration or logs name it.
	var readers []string
	for _, c := range clientsOfReplica(ev, st.inst) {
		if c.writes && f.fact("writer") == "" {
			f.setFact("writer", c.name)
			f.setFact("writer_line", c.why)
			f.Evidence = append(f.Evidence, c.why)
			f.Related = appendNew(f.Related, c.name)
			continue
		}
		if !c.writes {
			readers = appendNew(readers, c.name)
			f.Related = appendNew(f.Related, c.name)
			f.Evidence = append(f.Evidence, c.why)
		}
	}
	if w := f.fact("writer"); w != "" {
		for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
			if strings.EqualFold(c.Service, w) && !c.Timestamp.After(f.Time) {
				f.setFact("writer_change", fmt.Sprintf("%s of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			}
		}
	}
	f.setFact("readers", strings.Join(readers, ", "))
	f.setFact("affected", strings.Join(f.Related, ","))
	f.Summary = fmt.Sprintf("replica %s: replication %s stopped%s since %s; it serves data frozen at that moment", st.inst, threadWord(st.thread), errnoWord(st.errno), hm(f.Time))
	return f
}

func threadWord(th string) string {
	switch th {
	case "I/O":
		return "I/O (receiver) thread"
	case "apply worker":
		return "apply worker"
	}
	return "SQL (applier) thread"
}

func errnoWord(n string) string {
	if n == "" || n == "0" {
		return ""
	}
	return " on error " + n
}

// replicaClient is a workload whose configuration or log names a
// replica: a reader, or a writer when its log says it wrote there.
type replicaClient struct {
	name, why string
	writes    bool
}

// kubectlObjectRE reads the object a kubectl get names ("kubectl get
// configmap storefront-web", "get deploy/web").
var kubectlObjectRE = regexp.MustCompile(`kubectl\s+(?:-n\s+\S+\s+)?get\s+(?:configmaps?|cm|deployments?|deploy|statefulsets?|sts|cronjobs?|secrets?)[/ ]\s*([a-z0-9][a-z0-9.-]*)`)

// clientsOfReplica finds the workloads that name the replica inst: in a
// configuration a transcript printed (a ConfigMap's DB_READ_HOST), in the
// pods' environment, and in their logs (a job's "target=HOST").
func clientsOfReplica(ev *Gathered, inst string) []replicaClient {
	var out []replicaClient
	seen := map[string]bool{inst: true}
	names := func(text string) bool {
		low := strings.ToLower(text)
		i := strings.Index(low, inst)
		return i >= 0 && wordEdge(low, i-1) && wordEdge(low, i+len(inst))
	}
	for _, c := range ev.Commands {
		m := findSubmatch(kubectlObjectRE, c.Command)
		if m == nil {
			continue
		}
		for _, l := range c.Lines {
			if names(l) && !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, replicaClient{name: m[1], why: fmt.Sprintf("%s reads from %s (%s: %s)", m[1], inst, c.Source, strings.TrimSpace(l))})
			}
		}
	}
	for _, cl := range clientsOfDatabase(ev, inst) {
		if !seen[cl.name] {
			seen[cl.name] = true
			out = append(out, replicaClient{name: cl.name, why: cl.why})
		}
	}
	// A workload whose log names the replica, and says it wrote rows,
	// wrote to it.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		var named, wrote string
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if names(l) && named == "" {
					named = l
				}
				if matchLine(dbWriteLineRE, l) && wrote == "" {
					wrote = l
				}
			}
		}
		if named == "" {
			continue
		}
		w := set.Subject
		if wrote != "" {
			why := fmt.Sprintf("%s wrote to %s: %s; %s", w, inst, quote(ReadableLine(named), 140), quote(ReadableLine(wrote), 140))
			if j := slices.IndexFunc(out, func(c replicaClient) bool { return c.name == w }); j >= 0 {
				out[j] = replicaClient{name: w, why: why, writes: true}
				continue
			}
			seen[w] = true
			out = append(out, replicaClient{name: w, why: why, writes: true})
		} else if !seen[w] {
			seen[w] = true
			out = append(out, replicaClient{name: w, why: fmt.Sprintf("%s names %s in its log: %s", w, inst, quote(ReadableLine(named), 160))})
		}
	}
	return out
}

// replicaStoppedMetrics reads a replica's running gauge (mysqld_exporter's
// mysql_slave_status_slave_sql_running, _io_running) falling to 0 and
// staying there.
func replicaStoppedMetrics(sets []MetricSet, w Window) []Finding {
	var out []Finding
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if !strings.Contains(n, "sql_running") && !strings.Contains(n, "io_running") {
			continue
		}
		for _, s := range ms.Series {
			p := s.Points
			if len(p) < 2 || p[len(p)-1].V != 0 {
				continue
			}
			var at time.Time
			for i := len(p) - 1; i > 0; i-- {
				if p[i-1].V >= 1 && p[i].V == 0 {
					at = p[i].T
					break
				}
			}
			if at.IsZero() {
				continue
			}
			inst := shortHost(orWord(s.Labels["instance"], SubjectOfLabels(s.Labels)))
			if inst == "" {
				continue
			}
			th := "SQL"
			if strings.Contains(n, "io_running") {
				th = "I/O"
			}
			f := Finding{Kind: KindReplicaStopped, Subject: inst, Object: "database " + inst, Time: at, Severity: SevCritical, Weight: 0.8, Source: ms.Origin}
			f.setFact("thread", th)
			f.setFact("stopped_at", ts(at))
			f.setFact("why", fmt.Sprintf("%s's replication %s stopped (%s fell from 1 to 0 at %s)", inst, threadWord(th), ms.Name, ts(at)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s{instance=%q} fell from 1 to 0 at %s and stays 0", ms.Name, s.Labels["instance"], ts(at)))
			f.Summary = fmt.Sprintf("replica %s: replication %s stopped since %s", inst, threadWord(th), hm(at))
			out = append(out, f)
		}
	}
	return out
}

func describeReplicaStopped(h *Hypothesis, sc Scope) string {
	inst := h.Subject
	d := fmt.Sprintf("the read replica %s stopped replicating: its replication %s stopped", inst, threadWord(h.fact("thread")))
	d += h.clause(" at ", "stopped_at")
	if n := h.fact("errno"); n != "" && n != "0" {
		d += " on error " + n
	}
	if e := h.fact("error"); e != "" {
		d += fmt.Sprintf(" (%s)", e)
	}
	d += " while applying a transaction from the primary. The replica still answers every query but serves the data as of that moment, and reports no lag while stopped (Seconds_Behind_Source is NULL), so its readers"
	d += h.wrapped(" (", "readers", ")")
	d += " see stale data with no error"
	switch h.fact("errno") {
	case "1062", "1032", "1452":
		d += ". A duplicate or missing row on a replica means it was written to directly, so the primary's own write of the same row collides"
	}
	if h.fact("writable") != "" {
		d += fmt.Sprintf("; %s accepts writes (read_only and super_read_only are off)", inst)
	}
	if w := h.fact("writer"); w != "" {
		d += fmt.Sprintf("; %s wrote to it", w)
		d += h.wrapped(" (", "writer_change", ")")
	}
	return d
}
