package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PostgreSQL refusing writes to protect itself from transaction ID
// wraparound. Every transaction that writes takes a 32-bit transaction ID;
// vacuum "freezes" old rows so their IDs can be reused. When a database's
// oldest unfrozen ID (age(datfrozenxid)) comes within a few million of the
// 2^31 horizon, the server first warns ("database "x" must be vacuumed
// within N transactions") and then stops assigning IDs: every INSERT,
// UPDATE and DELETE fails with SQLSTATE 54000 ("database is not accepting
// commands that assign new XIDs to avoid wraparound data loss"), while
// reads go on. Vacuum runs, but cannot freeze what an open snapshot may
// still see: the root is what holds the oldest xmin back — a session idle
// in transaction for days (a BI tool, a forgotten psql), a prepared
// transaction never committed, a replication slot's xmin. It is read from
// the clients' errors, the server's own warnings ("oldest xmin is far in
// the past", the aggressive vacuum that removed nothing), pg_database's
// age(datfrozenxid), and the holder in pg_stat_activity (state "idle in
// transaction", its xact_start, age(backend_xmin)), pg_prepared_xacts and
// pg_replication_slots. A deploy of the client that gets the errors does
// not cause it.

// KindXIDWraparound is a PostgreSQL database refusing writes to avoid
// transaction ID wraparound.
const KindXIDWraparound Kind = "xid_wraparound"

var xidWraparound = &mechanism{
	kind:    KindXIDWraparound,
	class:   classCause,
	label:   "PostgreSQL refusing writes to avoid transaction ID wraparound (vacuum held back)",
	detect:  detectXIDWraparound,
	related: relatedToTop(KindXIDWraparound),
	// Only a change that names the database's host, the holder of the
	// oldest snapshot, or vacuum's settings bears on it: a client's
	// release does not use up transaction IDs by itself.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		text := changeText(c)
		for _, f := range h.Primary {
			for _, w := range []string{f.Subject, strings.ToLower(leadWord(f.fact("holder_app")))} {
				if w != "" && strings.Contains(text, strings.ToLower(w)) {
					return true
				}
			}
		}
		return strings.Contains(text, "vacuum")
	},
	strictTriggers: true,
	describe:       describeXIDWraparound,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		host := h.Subject
		db := orWord(h.fact("database"), "the database")
		if pid := h.fact("holder_pid"); pid != "" {
			r.high("End the session that holds the oldest snapshot on %s: SELECT pg_terminate_backend(%s) (%s), so vacuum can freeze the old rows", host, pid, orWord(h.fact("holder"), "the oldest open transaction"))
		} else {
			r.high("Find and end what holds the oldest xmin on %s: sessions idle in transaction (pg_stat_activity ordered by xact_start), prepared transactions (pg_prepared_xacts), replication slots with an xmin (pg_replication_slots)", host)
		}
		r.high("Then run a database-wide VACUUM (FREEZE) in %s on %s as a superuser and watch age(datfrozenxid) fall; writes resume once it is back under the limit. Do not roll back the clients: their release is not the cause", db, host)
		r.med("Set idle_in_transaction_session_timeout (for reporting and BI users at least) so that no session holds a snapshot for days")
		r.low("Alert on age(datfrozenxid) per database (well before 2 billion), on the server's \"must be vacuumed within\" warnings and on transactions open for more than an hour")
	},
}

var (
	// The refusal itself, as the server and its clients say it (with the
	// older wording and the multixact form).
	xidStopRE = regexp.MustCompile(`(?i)database is not accepting commands (?:that assign new (?:XIDs|MultiXactIds) )?to avoid (?:wraparound|multixact member wraparound) data loss|SQLSTATE 54000|program_limit_exceeded.{0,80}wraparound`)
	// The server's warnings on the way there.
	xidWarnRE = regexp.MustCompile(`(?i)must be vacuumed within (\d+) transactions|oldest xmin is far in the past|automatic aggressive vacuum to prevent wraparound|to prevent wraparound of table`)
	// The database a refusal names.
	xidDatabaseRE = regexp.MustCompile(`(?i)data loss in database \\?"([^"\\]+)\\?"|database \\?"([^"\\]+)\\?" must be vacuumed`)
)

// xidHolder is the session (or slot, or prepared transaction) holding
// the oldest xmin.
type xidHolder struct {
	what, app, pid, detail string
	since                  time.Time
	xminAge                int64
}

// detectXIDWraparound reads the refusal from the logs, the server's
// warnings, pg_database's ages and the holder of the oldest snapshot.
func detectXIDWraparound(ev *Gathered, found []Finding) []Finding {
	var (
		db, warn string
		refusal  pgRefusal
	)
	for x := range incidentMatches(ev, xidStopRE) {
		if m := findSubmatch(xidDatabaseRE, x.line); m != nil && db == "" {
			db = orWord(m[1], m[2])
		}
		refusal.add(x)
	}
	if refusal.lines == 0 {
		return nil
	}
	host := refusal.host
	// The server's warnings before the refusal.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if m := findString(xidWarnRE, t.Example); m != "" && (warn == "" || strings.Contains(m, "xmin")) {
				warn = fmt.Sprintf("%s %s logged at %s: %s", set.Origin, set.Source, ts(firstOf(t.FirstSeen, t.FirstIncident)), quote(ReadableLine(t.Example), 200))
				host = orWord(host, serverOfLog(set))
			}
		}
	}
	// psql on the server: the databases' ages and the oldest snapshot.
	var age int64
	var holder *xidHolder
	for _, c := range ev.Commands {
		if !matchLine(sqlClientRE, c.Run) && !matchLine(sqlClientRE, c.Command) {
			continue
		}
		inst, _ := sqlInstanceOf(c)
		for _, t := range sqlTables(c.Lines) {
			if a, name := datfrozenAge(&t); a > age {
				age = a
				db = orWord(db, name)
				host = orWord(host, shortHost(inst))
			}
			if h := oldestSnapshot(&t, ev.Window.End); h != nil && (holder == nil || h.since.Before(holder.since) || h.xminAge > holder.xminAge) {
				holder = h
				host = orWord(host, shortHost(inst))
			}
		}
	}
	if host == "" {
		host = "postgresql"
	}
	f := Finding{Kind: KindXIDWraparound, Subject: host, Object: "database " + host, Time: refusal.first, Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
	f.setFact("database", db)
	f.setFact("line", refusal.example)
	f.setFact("lines", strconv.Itoa(refusal.lines))
	refusal.evidence(&f)
	if warn != "" {
		f.Evidence = append(f.Evidence, warn)
	}
	if age > 0 {
		f.setFact("xid_age", strconv.FormatInt(age, 10))
		f.Evidence = append(f.Evidence, fmt.Sprintf("pg_database on %s: age(datfrozenxid) of %s is %d, at the ~2.1 billion (2^31) limit", host, orWord(db, "the database"), age))
	}
	refusal.clients.relate(&f)
	if holder != nil {
		f.Weight = 0.95
		f.setFact("holder", holder.what)
		f.setFact("holder_app", holder.app)
		f.setFact("holder_pid", holder.pid)
		f.setFact("holder_since", ts(holder.since))
		f.setFact("why", "vacuum could not freeze old rows while "+holder.what+" held back the oldest xmin")
		f.Evidence = append(f.Evidence, fmt.Sprintf("pg_stat_activity on %s: %s", host, holder.detail))
		for _, c := range ev.Earlier {
			if holder.app != "" && strings.Contains(strings.ToLower(c.Description+" "+c.Service), strings.ToLower(leadWord(holder.app))) {
				f.setFact("holder_change", fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description))
			}
		}
	}
	f.Summary = fmt.Sprintf("%s: PostgreSQL refuses writes to avoid transaction ID wraparound in %s (%d lines)", host, orWord(db, "a database"), refusal.lines)
	return []Finding{f}
}

// pgServerLineRE recognises a PostgreSQL server's own log line (its
// log_line_prefix: "2026-11-20 10:51:12.604 UTC [918233] user@db ERROR:").
var pgServerLineRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \w+ \[\d+\](?: \S+@\S+)? (?:ERROR|WARNING|FATAL|LOG|HINT|STATEMENT|PANIC):`)

// datfrozenAge reads the largest age a pg_database query printed (a
// column named age, or age(datfrozenxid)), with the database's name.
func datfrozenAge(t *sqlTable) (int64, string) {
	if !slices.Contains(t.cols, "datname") {
		return 0, ""
	}
	var best int64
	var name string
	for r := range t.rows {
		for i, col := range t.cols {
			if !strings.Contains(col, "age") {
				continue
			}
			if v, err := strconv.ParseInt(strings.TrimSpace(t.rows[r][i]), 10, 64); err == nil && v > best {
				best, name = v, t.cell(r, "datname")
			}
		}
	}
	if best < 1_000_000_000 {
		return 0, ""
	}
	return best, name
}

// pgTimestampLayouts are psql's forms of a timestamptz.
var pgTimestampLayouts = []string{"2006-01-02 15:04:05.999999999-07", "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05-07", "2006-01-02 15:04:05.999999999"}

func parsePGTime(s string) (time.Time, bool) {
	for _, l := range pgTimestampLayouts {
		if t, err := time.Parse(l, strings.TrimSpace(s)); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// oldestSnapshot reads the session of a pg_stat_activity result that has
// held its transaction (and snapshot) open longest, at least an hour
// before now: idle in transaction, or with the oldest xact_start or the
// largest age(backend_xmin). A prepared transaction older than an hour
// (pg_prepared_xacts) holds it the same way.
func oldestSnapshot(t *sqlTable, now time.Time) *xidHolder {
	var best *xidHolder
	for r := range t.rows {
		start := t.cell(r, "xact_start")
		prepared := false
		if start == "" && t.cell(r, "gid") != "" {
			start, prepared = t.cell(r, "prepared"), true
		}
		since, ok := parsePGTime(start)
		if !ok || now.Sub(since) < time.Hour {
			continue
		}
		var xage int64
		for i, col := range t.cols {
			if strings.Contains(col, "xmin") && strings.Contains(col, "age") {
				xage, _ = strconv.ParseInt(strings.TrimSpace(t.rows[r][i]), 10, 64)
			}
		}
		if best != nil && !since.Before(best.since) {
			continue
		}
		h := &xidHolder{since: since, xminAge: xage, pid: t.cell(r, "pid"), app: orWord(t.cell(r, "application_name"), t.cell(r, "usename"))}
		state := t.cell(r, "state")
		switch {
		case prepared:
			h.what = fmt.Sprintf("the prepared transaction %q, never committed since %s", t.cell(r, "gid"), since.Format("2006-01-02 15:04"))
			h.app = ""
		default:
			who := orWord(h.app, "a session")
			if u := t.cell(r, "usename"); u != "" && u != h.app {
				who += " (user " + u
				if a := t.cell(r, "client_addr"); a != "" {
					who += " from " + a
				}
				who += ")"
			}
			h.what = fmt.Sprintf("%s, %s with a transaction open since %s (%s)", who, orWord(state, "a session"), since.Format("2006-01-02 15:04 UTC"), fmtLag(now.Sub(since)))
		}
		h.detail = fmt.Sprintf("pid %s %s", orWord(h.pid, "?"), h.what)
		if xage > 0 {
			h.detail += fmt.Sprintf(", age(backend_xmin) %d", xage)
		}
		if q := t.cell(r, "query"); q != "" {
			h.detail += ", last query " + quote(q, 80)
		}
		best = h
	}
	return best
}

// leadWord is the first word of s ("Metabase v0.50.2" → "Metabase").
func leadWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func describeXIDWraparound(h *Hypothesis, sc Scope) string {
	host := h.Subject
	db := h.fact("database")
	d := fmt.Sprintf("PostgreSQL on %s refuses every write to protect itself from transaction ID (XID) wraparound", host)
	if db != "" {
		d += fmt.Sprintf(": database %q", db)
	} else {
		d += ": the database"
	}
	d += " ran out of transaction IDs"
	if a := h.fact("xid_age"); a != "" {
		d += fmt.Sprintf(" (age(datfrozenxid) %s of the ~2.1 billion limit)", a)
	}
	d += " because vacuum could not freeze its old rows"
	if w := h.fact("holder"); w != "" {
		d += fmt.Sprintf(": %s held back the oldest xmin, so every vacuum, even the aggressive anti-wraparound one, had to keep them", w)
	} else {
		d += " (something holds back the oldest xmin: a long-running or idle-in-transaction session, a prepared transaction or a replication slot)"
	}
	d += ". Reads still work; every statement that needs a new transaction ID (INSERT, UPDATE, DELETE) fails with SQLSTATE 54000"
	if c := h.fact("clients"); c != "" {
		d += fmt.Sprintf(", which is what %s reports", c)
	}
	if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 200)
	}
	if c := h.fact("holder_change"); c != "" {
		d += "; the holder came with the " + c
	}
	return d
}
