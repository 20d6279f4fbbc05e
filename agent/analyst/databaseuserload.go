package analyst

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// One user's load on a shared database: the server's sessions counted by
// user (postgres_exporter's pg_stat_activity_count{usename, state}, a
// processlist by user) show one user's active sessions jumping at the
// onset — a batch job, a report, a backfill — while the other users'
// stay about where they were. The server's CPU and disks go to that
// user's statements, and every other application on the server waits:
// their latency rises with nothing wrong in them. The user, matched to
// the job or service it belongs to by name, is the cause; a change to
// that job (its mode, its schedule) in the month before is named.

// KindDBUserLoad is one user's sessions saturating a shared database.
const KindDBUserLoad Kind = "database_user_load"

var (
	// userLabels name a database session's user, the role first.
	userLabels = []string{"usename", "user", "application_name", "client_user"}
)

var dbUserLoad = &mechanism{
	kind:       KindDBUserLoad,
	class:      classCause,
	label:      "one user's load saturating a shared database",
	detect:     detectDBUserLoad,
	related:    affectsRelated,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return c.relates(h.Subject) },
	describe: func(h *Hypothesis, sc Scope) string {
		who := h.Subject
		if u := h.fact("user"); u != "" && u != who {
			who = fmt.Sprintf("%s (database user %s)", h.Subject, u)
		}
		d := fmt.Sprintf("%s loads the shared database server %s: its active sessions rose from %s to %s at %s before the other users' (%s), so the server's CPU and disks go to its statements and the other applications' queries on it wait — their latency rises with nothing wrong in them",
			who, orWord(h.fact("server"), "the database"), h.fact("before"), h.fact("peak"), h.fact("at"), orWord(h.fact("others"), "none"))
		if c := h.fact("job_change"); c != "" {
			d += fmt.Sprintf("; its work grew with %s", quote(c, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Move %s's heavy work off the shared server %s: run it against a replica, or throttle it (fewer parallel sessions, smaller batches, a statement_timeout)", h.Subject, orWord(h.fact("server"), "database"))
		r.med("Give the batch user a connection limit (ALTER ROLE ... CONNECTION LIMIT) and a resource group so the interactive applications keep their share")
		r.low("Alert on active sessions per database user and on the server's CPU, not only on the applications' latency")
	},
}

// detectDBUserLoad reads the session counts per user of a database server
// and names the user whose active sessions jumped the most in the window,
// when the server has other users whose sessions did not.
func detectDBUserLoad(ev *Gathered, _ []Finding) []Finding {
	w := ev.Window
	type rise struct {
		user, server string
		base, peak   float64
		at           time.Time
	}
	byServer := map[string][]rise{}
	for _, m := range ev.Metrics {
		if !matchLine(sessionsByClientRE, m.Name) {
			continue
		}
		for _, s := range m.Series {
			user := sessionLabel(s.Labels, userLabels)
			if user == "" || s.Labels["state"] != "" && s.Labels["state"] != "active" {
				continue
			}
			server := sessionServer(s.Labels)
			r := rise{user: user, server: server}
			var ok bool
			if r.base, r.peak, r.at, ok = sessionRise(w, s.Points); !ok {
				continue
			}
			byServer[server] = append(byServer[server], r)
		}
	}
	var out []Finding
	servers := make([]string, 0, len(byServer))
	for s := range byServer {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	for _, server := range servers {
		rs := byServer[server]
		if len(rs) < 2 {
			continue // one user: the server is not shared
		}
		// The users whose active sessions jumped (several sessions, at
		// least three times their usual count); of these the first to
		// jump is the load, the others wait behind it (a slow server
		// piles up its victims' sessions too, later).
		ratio := func(r rise) float64 { return r.peak / max(r.base, 1) }
		// The question's own service waits: its sessions are not the load.
		subjects := ev.Scope.Subjects()
		var jumped []rise
		for _, r := range rs {
			if owner, _ := userOwner(ev, r.user); containsFold(subjects, owner) {
				continue
			}
			if r.peak >= 4 && ratio(r) >= 3 && !r.at.IsZero() {
				jumped = append(jumped, r)
			}
		}
		if len(jumped) == 0 {
			continue
		}
		sort.SliceStable(jumped, func(i, j int) bool {
			if !jumped[i].at.Equal(jumped[j].at) {
				return jumped[i].at.Before(jumped[j].at)
			}
			return ratio(jumped[i]) > ratio(jumped[j])
		})
		top := jumped[0]
		var others []string
		for _, o := range rs {
			if o.user != top.user {
				others = append(others, fmt.Sprintf("%s %.0f→%.0f", o.user, o.base, o.peak))
			}
		}
		subject, change := userOwner(ev, top.user)
		affects := []string{server}
		for _, s := range ev.Scope.Subjects() {
			if s != subject {
				affects = appendNew(affects, s)
			}
		}
		f := Finding{Kind: KindDBUserLoad, Subject: subject, Source: SrcMetrics, Time: top.at, Severity: SevWarning, Weight: 0.9,
			Related:  affects,
			Summary:  fmt.Sprintf("database user %s's active sessions on %s rose from %.0f to %.0f at %s", top.user, server, top.base, top.peak, hm(top.at)),
			Evidence: []string{fmt.Sprintf("active sessions of user %s on %s: %.0f before, %.0f from %s; other users: %s", top.user, server, top.base, top.peak, hm(top.at), strings.Join(others, ", "))}}
		f.setFact("user", top.user)
		f.setFact("server", server)
		f.setFact("before", fmt.Sprintf("%.0f", top.base))
		f.setFact("peak", fmt.Sprintf("%.0f", top.peak))
		f.setFact("at", hm(top.at))
		f.setFact("others", strings.Join(others, ", "))
		f.setFact("affects", strings.Join(affects, ", "))
		if change != "" {
			f.setFact("job_change", change)
			f.Evidence = append(f.Evidence, "change: "+change)
		}
		out = append(out, f)
	}
	return out
}

// userOwner names the job or service a database user belongs to: a log
// source, a change's service or a question's subject sharing the user's
// distinctive word ("settlement_batch" → "settlement-reconcile"), with the
// latest change to it; the user itself when none does.
func userOwner(ev *Gathered, user string) (name, change string) {
	uw := distinctWords(user, genericNameWords)
	shares := func(n string) bool { return sharesWord(n, uw, genericNameWords) }
	for _, s := range ev.Scope.Subjects() {
		if shares(s) {
			return s, ""
		}
	}
	var candidates []string
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if shares(c.Service) {
			candidates = appendNew(candidates, c.Service)
			change = fmt.Sprintf("%s (%s, %s)", c.Description, orWord(c.Kind, "change"), c.Timestamp.UTC().Format("2006-01-02 15:04"))
		}
	}
	for _, s := range ev.Logs {
		if shares(s.Subject) {
			candidates = appendNew(candidates, s.Subject)
		}
	}
	if len(candidates) == 0 {
		return user, ""
	}
	return candidates[0], change
}

// genericNameWords are words of user and service names that say nothing
// of whose they are.
var genericNameWords = map[string]bool{"user": true, "admin": true, "service": true, "batch": true, "worker": true, "prod": true, "main": true,
	"read": true, "write": true, "app": true, "apps": true, "backend": true, "default": true, "postgres": true, "mysql": true, "root": true}
