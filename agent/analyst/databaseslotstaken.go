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

// Who took a database's connection slots: its clients fail with the
// server's refusal of new connections ("remaining connection slots are
// reserved", "too many connections", "sorry, too many clients"), and the
// server's sessions counted per client (postgres_exporter's
// pg_stat_activity_count{application_name, usename, state}, a processlist
// by user) show one client's connections, of any state, jumping at the
// onset while the others' stay where they were: a new service or job
// whose pool opens many connections up front (pgxpool min_conns, HikariCP
// minimumIdle) holds the slots the others need. That client, matched to
// the service it belongs to by name, is the cause; its change (a first
// release, a pool size raised) is the trigger, and the pool settings its
// own log states are quoted. The clients refused are its victims.

// KindDBSlotsTaken is one client holding a database's connection slots.
const KindDBSlotsTaken Kind = "database_slots_taken"

var (
	// slotsRefusedRE is a database server refusing a new connection
	// because every slot is taken.
	slotsRefusedRE = regexp.MustCompile(`(?i)remaining connection slots are reserved|too many connections|sorry, too many clients|too many clients already|ER_CON_COUNT_ERROR|Too many open connections`)
	// poolSettingRE is a client's log line stating its pool size.
	poolSettingRE = regexp.MustCompile(`(?i)\b(max_conns|min_conns|maximumPoolSize|minimumIdle|pool_size|max_pool_size|maxPoolSize|max_open_conns|max_idle_conns|pool_max|pool_min)\b`)
	// clientLabels name a database session's client, the application
	// first.
	clientLabels = []string{"application_name", "client", "usename", "user", "client_user"}
)

var dbSlotsTaken = &mechanism{
	kind:       KindDBSlotsTaken,
	class:      classCause,
	label:      "one client holding a database's connection slots",
	detect:     detectDBSlotsTaken,
	related:    affectsRelated,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return c.relates(h.Subject) },
	// Read from a session list, only the holder's own change triggers it:
	// a refused client's release near the refusals is a coincidence.
	strictFor: func(h *Hypothesis) bool { return h.fact("held") != "" },
	describe: func(h *Hypothesis, sc Scope) string {
		who := h.Subject
		if u := h.fact("client"); u != "" && u != who {
			who = fmt.Sprintf("%s (database client %s)", h.Subject, u)
		}
		var d string
		if held := h.fact("held"); held != "" {
			d = fmt.Sprintf("%s holds the connection slots of the database server %s: %s of its sessions are %s's against %s for all other clients together (%s), so the server refuses new connections to the others (too many connections: %s)",
				who, orWord(h.fact("server"), "the database"), held, h.Subject, h.fact("rest"), orWord(h.fact("others"), "none"), quote(ReadableLine(h.fact("refusal")), 160))
		} else {
			d = fmt.Sprintf("%s holds the connection slots of the database server %s: its connections rose from %s to %s at %s while the other clients' stayed as they were (%s), so the server refuses new connections to the others (too many connections: %s)",
				who, orWord(h.fact("server"), "the database"), h.fact("before"), h.fact("peak"), h.fact("at"), orWord(h.fact("others"), "none"), quote(ReadableLine(h.fact("refusal")), 160))
		}
		d += h.clause("; refused: ", "victims")
		if m := h.fact("max_connections"); m != "" {
			d += fmt.Sprintf("; max_connections is %s", m)
		}
		if p := h.fact("pool"); p != "" {
			d += fmt.Sprintf("; its pool: %s", quote(ReadableLine(p), 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Shrink the connection pool of %s (fewer minimum/maximum connections per replica, or fewer replicas) or roll it back, so the database server %s has slots for its other clients again", h.Subject, orWord(h.fact("server"), ""))
		r.med("Put a pooler (PgBouncer) in front of %s, or give %s's database role a CONNECTION LIMIT", orWord(h.fact("server"), "the database"), h.Subject)
		r.low("Budget max_connections across the clients of a shared database (replicas × pool size) before a new client ships, and alert on connections per client")
	},
}

// detectDBSlotsTaken names the client whose connections to a database
// server jumped the most, when clients are refused for lack of slots.
// Without a series per client, the server's session list counted per
// client names the holder (dbslotssnapshot.go).
func detectDBSlotsTaken(ev *Gathered, found []Finding) []Finding {
	if out := detectDBSlotsSeries(ev, found); len(out) > 0 {
		return out
	}
	refusal, victims, at := slotsRefusals(found)
	if refusal == "" {
		return nil
	}
	return detectSlotsSnapshot(ev, refusal, victims, at)
}

// slotsRefusals are the findings' refusals for lack of connection slots:
// the first line, the clients refused and the earliest time.
func slotsRefusals(found []Finding) (refusal string, victims []string, at time.Time) {
	for _, f := range found {
		line := f.fact("line")
		if !matchLine(slotsRefusedRE, line) && !matchLine(slotsRefusedRE, f.Summary) {
			continue
		}
		refusal = orWord(refusal, orWord(line, f.Summary))
		victims = appendNew(victims, orWord(f.fact("caller"), f.Subject))
		if !f.Time.IsZero() && (at.IsZero() || f.Time.Before(at)) {
			at = f.Time
		}
	}
	return refusal, victims, at
}

// detectDBSlotsSeries reads the holder from sessions per client over time.
func detectDBSlotsSeries(ev *Gathered, found []Finding) []Finding {
	refusal, victims, _ := slotsRefusals(found)
	if refusal == "" {
		return nil
	}
	w := ev.Window
	type total struct {
		server string
		at     map[time.Time]float64
	}
	totals := map[string]*total{} // client -> connections summed over states
	maxConns := ""
	for _, m := range ev.Metrics {
		if m.Name == "pg_settings_max_connections" || m.Name == "mysql_global_variables_max_connections" {
			for _, s := range m.Series {
				if n := len(s.Points); n > 0 {
					maxConns = fmt.Sprintf("%.0f", s.Points[n-1].V)
				}
			}
		}
		if !matchLine(sessionsByClientRE, m.Name) {
			continue
		}
		for _, s := range m.Series {
			client := sessionLabel(s.Labels, clientLabels)
			if client == "" {
				continue
			}
			t := totals[client]
			if t == nil {
				t = &total{server: sessionServer(s.Labels), at: map[time.Time]float64{}}
				totals[client] = t
			}
			for _, p := range s.Points {
				t.at[p.T] += p.V
			}
		}
	}
	type rise struct {
		client, server   string
		base, peak, gain float64
		at               time.Time
	}
	var rs []rise
	for client, t := range totals {
		times := make([]time.Time, 0, len(t.at))
		for ts := range t.at {
			times = append(times, ts)
		}
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
		pts := make([]evidence.Point, len(times))
		for i, ts := range times {
			pts[i] = evidence.Point{T: ts, V: t.at[ts]}
		}
		r := rise{client: client, server: t.server}
		var ok bool
		if r.base, r.peak, r.at, ok = sessionRise(w, pts); !ok {
			continue
		}
		r.gain = r.peak - r.base
		rs = append(rs, r)
	}
	if len(rs) < 2 {
		return nil // one client: nobody took another's slots
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].gain > rs[j].gain })
	top := rs[0]
	// A jump of many connections, at least three times its usual count
	// and more than twice any other client's own rise.
	if top.gain < 10 || top.peak < 3*max(top.base, 1) || top.at.IsZero() || rs[1].gain > 0.5*top.gain {
		return nil
	}
	var others []string
	for _, o := range rs[1:] {
		others = append(others, fmt.Sprintf("%s %.0f→%.0f", o.client, o.base, o.peak))
	}
	slices.Sort(others)
	subject := clientOwner(ev, top.client)
	affects := slotsAffected(ev, top.server, subject, victims)
	f := Finding{Kind: KindDBSlotsTaken, Subject: subject, Source: SrcMetrics, Time: top.at, Severity: SevCritical, Weight: 0.9,
		Related: affects,
		Summary: fmt.Sprintf("database client %s's connections to %s rose from %.0f to %.0f at %s while clients are refused for lack of slots", top.client, orWord(top.server, "the database"), top.base, top.peak, hm(top.at)),
		Evidence: []string{fmt.Sprintf("connections of client %s on %s (all states): %.0f before, %.0f from %s; other clients: %s", top.client, orWord(top.server, "the database"), top.base, top.peak, hm(top.at), strings.Join(others, ", ")),
			"refused: " + quote(ReadableLine(refusal), 200)}}
	f.setFact("client", top.client)
	f.setFact("server", top.server)
	f.setFact("before", fmt.Sprintf("%.0f", top.base))
	f.setFact("peak", fmt.Sprintf("%.0f", top.peak))
	f.setFact("at", hm(top.at))
	f.setFact("others", strings.Join(others, ", "))
	f.setFact("affects", strings.Join(affects, ", "))
	f.setFact("victims", strings.Join(victims, ", "))
	f.setFact("refusal", refusal)
	f.setFact("max_connections", maxConns)
	if p := poolLine(ev, subject); p != "" {
		f.setFact("pool", p)
		f.Evidence = append(f.Evidence, fmt.Sprintf("logs %s: %s", subject, quote(p, 200)))
	}
	return []Finding{f}
}

// poolLine is the line of a client's own log that states its pool size.
func poolLine(ev *Gathered, subject string) string {
	for _, set := range ev.Logs {
		if set.Subject != subject {
			continue
		}
		for _, t := range set.Templates {
			if matchLine(poolSettingRE, t.Example) {
				return t.Example
			}
		}
	}
	return ""
}

// clientOwner names the service a database client belongs to: a change's
// service, a log source or a question's subject sharing the client's
// distinctive word ("loyalty" of application loyalty_sync); the client
// itself when none does.
func clientOwner(ev *Gathered, client string) string {
	cw := distinctWords(client, genericClientWords)
	shares := func(n string) bool {
		return strings.EqualFold(n, client) || sharesWord(n, cw, genericClientWords)
	}
	var names []string
	for _, c := range append(slices.Clone(ev.Changes), ev.Earlier...) {
		names = append(names, c.Service)
	}
	for _, s := range ev.Logs {
		names = append(names, s.Subject)
	}
	names = append(names, ev.Scope.Subjects()...)
	for _, n := range names {
		if n != "" && strings.EqualFold(n, client) {
			return n
		}
	}
	for _, n := range names {
		if n != "" && shares(n) {
			return n
		}
	}
	return client
}

// genericClientWords are words of client and service names that say
// nothing of whose they are.
var genericClientWords = map[string]bool{"user": true, "admin": true, "service": true, "batch": true, "worker": true, "prod": true, "main": true,
	"read": true, "write": true, "sync": true, "apps": true, "backend": true, "default": true, "postgres": true, "mysql": true, "root": true, "client": true, "server": true}

// slotsAffected is what a client holding a shared database's slots
// affects: the server, the clients refused and the asked subjects, all
// but the holder itself.
func slotsAffected(ev *Gathered, server, holder string, victims []string) []string {
	affects := []string{}
	if server != "" {
		affects = append(affects, server)
	}
	for _, v := range victims {
		if v != holder {
			affects = appendNew(affects, v)
		}
	}
	for _, s := range ev.Scope.Subjects() {
		if s != holder {
			affects = appendNew(affects, s)
		}
	}
	return affects
}
