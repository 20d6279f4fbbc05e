package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Serialization failures after the default isolation level was raised.
// Under SERIALIZABLE (or REPEATABLE READ) PostgreSQL cancels a transaction
// that conflicts with a concurrent one ("could not serialize access due to
// concurrent update", "… due to read/write dependencies among
// transactions", SQLSTATE 40001) and expects the client to retry it. A
// client written for READ COMMITTED does not retry, so a share of its
// writes fails as soon as its sessions pick up a new default: ALTER
// DATABASE … SET default_transaction_isolation (new sessions of a pool
// get it, older ones keep the old level, so failures grow as the pool
// turns over), ALTER ROLE, a parameter group. The database is not
// overloaded. The failures are read from the clients' logs (the driver's
// message, its SQLSTATE); the setting from the SQL client's output (SHOW
// default_transaction_isolation, pg_db_role_setting's setconfig), the
// server log's ALTER statement, or a change that names the isolation
// level.

// KindIsolationRaised is serialization failures after a raised isolation
// level.
const KindIsolationRaised Kind = "isolation_raised"

var isolationRaised = &mechanism{
	kind:    KindIsolationRaised,
	class:   classCause,
	label:   "transactions cancelled with serialization failures (SQLSTATE 40001) after the default isolation level was raised",
	detect:  detectIsolationRaised,
	related: relatedToTop(KindIsolationRaised),
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(isolationChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe:       describeIsolationRaised,
	recommend:      recommendIsolationRaised,
}

var (
	serializeFailRE   = regexp.MustCompile(`(?i)could not serialize access due to|SQLSTATE[ =:]*40001|\(40001\)|serialization_failure|TransactionRetryWithProtoRefreshError`)
	isolationChangeRE = regexp.MustCompile(`(?i)isolation|serializable|repeatable read`)
	// The setting as SQL printed it: ALTER DATABASE|ROLE x SET
	// default_transaction_isolation = 'serializable', a setconfig
	// {default_transaction_isolation=serializable}.
	isolationSetRE = regexp.MustCompile(`(?i)(?:ALTER (DATABASE|ROLE|USER) (\w+) SET )?default_transaction_isolation\s*(?:=|TO)\s*'?(serializable|repeatable read)`)
	pgLogTimeRE    = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)`)
)

func detectIsolationRaised(ev *Gathered, _ []Finding) []Finding {
	// The clients whose logs show serialization failures.
	type client struct {
		set   *LogSet
		line  string
		n     int
		first time.Time
		t     int
	}
	var clients []*client
	for set, t := range incidentTemplates(ev) {
		line := t.Example
		if !matchLine(serializeFailRE, line) {
			if !matchLine(serializeFailRE, t.Last) {
				continue
			}
			line = t.Last
		}
		if set.Host || matchLine(pgLogUserRE, line) { // the server's own log
			continue
		}
		i := slices.IndexFunc(clients, func(c *client) bool { return c.set.Subject == set.Subject })
		at := orTime(t.FirstIncident, t.FirstSeen)
		if i < 0 {
			clients = append(clients, &client{set: set, line: line, first: at})
			i = len(clients) - 1
		}
		c := clients[i]
		c.n += t.Incident
		c.first = earliest(c.first, at)
	}
	if len(clients) == 0 {
		return nil
	}
	// The raised level: SQL outputs, the server log's ALTER, a change.
	setting, scope, at, where := "", "", time.Time{}, ""
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(isolationSetRE, l)
			if m == nil {
				if strings.TrimSpace(strings.ToLower(l)) == "serializable" && strings.Contains(strings.ToLower(c.Run+strings.Join(c.Lines, " ")), "default_transaction_isolation") && setting == "" {
					setting, where = "serializable", "SHOW default_transaction_isolation answers serializable"
				}
				continue
			}
			setting = strings.ToLower(m[3])
			if m[1] != "" {
				scope = strings.ToUpper(m[1]) + " " + m[2]
				where = quote(strings.TrimSpace(l), 200)
				if tm := pgLogTimeRE.FindStringSubmatch(strings.TrimSpace(l)); tm != nil {
					if t, err := time.Parse("2006-01-02 15:04:05", tm[1]); err == nil {
						at = t
					}
				}
			} else if where == "" {
				where = quote(strings.TrimSpace(l), 200)
			}
		}
	}
	var change string
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if matchLine(isolationChangeRE, c.Description) && !c.Timestamp.After(clients[0].first) {
			change = fmt.Sprintf("%s (%s, %s%s)", quote(c.Description, 200), c.Kind, c.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), prefixed(" by ", c.Author))
			if at.IsZero() {
				at = c.Timestamp
			}
			if setting == "" {
				setting = "raised"
			}
		}
	}
	if setting == "" {
		return nil
	}
	var out []Finding
	for _, c := range clients {
		f := Finding{Kind: KindIsolationRaised, Subject: c.set.Subject, Namespace: c.set.Namespace, Object: c.set.Source, Source: c.set.Origin,
			Time: orTime(c.first, ev.Window.End), Severity: SevCritical, Weight: 0.9}
		f.addCount(c.n)
		f.setFact("level", setting)
		f.setFact("scope", scope)
		f.setFact("where", where)
		f.setFact("change", change)
		f.setFact("line", c.line)
		if !at.IsZero() {
			f.setFact("cause_at", at.UTC().Format(time.RFC3339))
			f.setFact("cause_event", "default_transaction_isolation = "+setting+prefixed(" on ", strings.ToLower(scope)))
		}
		f.Evidence = []string{fmt.Sprintf("%s logs %d serialization failures (SQLSTATE 40001) from %s: %s", c.set.Subject, c.n, hm(c.first), quote(ReadableLine(c.line), 200))}
		if where != "" {
			f.Evidence = append(f.Evidence, "the database's default isolation: "+where)
		}
		if change != "" {
			f.Evidence = append(f.Evidence, "change: "+change)
		}
		f.Summary = fmt.Sprintf("%s's transactions fail with serialization failures (SQLSTATE 40001) under default_transaction_isolation = %s", c.set.Subject, setting)
		out = append(out, f)
	}
	return out
}

func describeIsolationRaised(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("%s's transactions are cancelled with serialization failures (SQLSTATE 40001, \"could not serialize access\") since the database's default isolation level was raised to %s", h.Subject, h.fact("level"))
	d += h.wrapped(" (", "scope", ": default_transaction_isolation)")
	d += h.clause(": ", "where")
	d += h.wrapped("; the change ", "change", "")
	d += "; under that level PostgreSQL cancels one of two conflicting transactions and expects the client to retry it, which a client written for READ COMMITTED does not do, so a share of its writes fails, growing as its connection pool opens new sessions that pick up the new default; the database is not overloaded and scaling it would not help"
	d += h.wrapped(": ", "line", "")
	return d
}

func recommendIsolationRaised(h *Hypothesis, sc Scope, r *recommender) {
	scope := orWord(strings.ToLower(h.fact("scope")), "the database")
	r.high("Reset the default isolation level on %s (ALTER %s RESET default_transaction_isolation, or SET it back to 'read committed') and recycle %s's connections so every session picks it up", scope, strings.ToUpper(orWord(h.fact("scope"), "DATABASE <db>")), h.Subject)
	r.med("Set SERIALIZABLE only for the sessions that need it (SET TRANSACTION ISOLATION LEVEL in that job, ALTER ROLE for its user), and make clients that run under it retry on SQLSTATE 40001")
	r.low("Alert on serialization failures and review database-level settings changes with the owners of every client")
}
