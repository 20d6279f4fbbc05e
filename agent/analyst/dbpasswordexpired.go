package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A database role whose password expired: PostgreSQL's VALID UNTIL,
// MySQL's password_lifetime, SQL Server's CHECK_EXPIRATION and Oracle's
// PASSWORD_LIFE_TIME end a password's validity at a set moment, with no
// change to the client or the server at that moment. Connections opened
// before keep working; every new one is refused from then on (PostgreSQL
// "password authentication failed" with the server's DETAIL "User … has
// an expired password", MySQL 1862 "Your password has expired", SQL
// Server 18487, ORA-28001), so the errors begin as the client's pool
// retires its old connections, minutes to hours after the expiry, and a
// release shortly before is a coincidence. The server's own log and the
// role's validity (psql \du: "Password valid until …") name it.

// KindDBPasswordExpired is a database refusing a client whose role's
// password expired.
const KindDBPasswordExpired Kind = "db_password_expired"

var dbPasswordExpired = &mechanism{
	kind:   KindDBPasswordExpired,
	class:  classCause,
	label:  "database role's password expired",
	detect: detectDBPasswordExpired,
	related: func(h *Hypothesis, f *Finding) bool {
		return refusalOf(h, f, f.Kind == KindAuth && matchLine(staleCredentialRE, f.fact("line")))
	},
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return matchLine(passwordExpiryChangeRE, changeText(c)) },
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		role := "the database role"
		if u := h.fact("user"); u != "" {
			role += " " + u
		}
		d := fmt.Sprintf("the password of %s that %s connects with expired", role, h.Subject)
		if v := h.fact("valid_until"); v != "" {
			d += fmt.Sprintf(" (Password valid until %s)", v)
		}
		d += fmt.Sprintf(": from %s UTC the database refuses each new connection of %s, authentication fails (%s)", h.fact("refused_from"), h.Subject, quote(ReadableLine(h.fact("line")), 180))
		if s := h.fact("server_line"); s != "" && s != h.fact("line") {
			d += fmt.Sprintf("; the server says why: %s", quote(ReadableLine(s), 160))
		}
		d += "; connections opened before the expiry kept working until the pool retired them, so no change at the onset caused it"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		u := orWord(h.fact("user"), "the role")
		r.high("Set a new password for %s on the database (ALTER ROLE %s WITH PASSWORD … VALID UNTIL …, or extend its validity), put it in the secret %s reads and restart %s", u, u, h.Subject, h.Subject)
		r.med("Rotate database passwords before their validity ends (a secret manager's scheduled rotation) instead of relying on a manual runbook")
		r.low("Alert on roles whose password expires within two weeks (pg_roles.rolvaliduntil, mysql.user password_lifetime) and on authentication failures")
	},
}

var (
	// A server or driver saying the password expired: PostgreSQL's
	// DETAIL, MySQL 1862, SQL Server 18487, Oracle ORA-28001.
	passwordExpiredRE = regexp.MustCompile(`(?i)has an expired password|Your password has expired|password of the account has expired|ORA-28001|ER_MUST_CHANGE_PASSWORD|\bpassword (?:has )?expired for (?:user|role)`)
	// The role an expiry or refusal names.
	expiredUserRE = regexp.MustCompile(`(?i)(?:\bUser|for user|\buser=|\bLogin failed for user)\s*["'\x60]?([\w.@$-]+?)["'\x60]?(?:[\s.:,;)]|$)`)
	// A role's validity in psql's \du: "invoice_sync | Password valid
	// until 2026-11-27 00:00:00+00" (a role's attributes may continue on
	// the next row, its name column empty).
	validUntilRE = regexp.MustCompile(`^\s*([\w.@$-]*)\s*\|.*\bPassword valid until (\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d)?)(?:[.,]\d+)?\s*([+-]\d\d(?::?\d\d)?|Z|UTC)?`)
	// A change that sets when passwords expire.
	passwordExpiryChangeRE = regexp.MustCompile(`(?i)valid until|password[_ ]lifetime|password[_ ]life[_ ]time|check_expiration|password expir|expire password`)
)

// roleValidity reads the validity of each role from psql \du outputs.
func roleValidity(ev *Gathered) map[string]time.Time {
	out := map[string]time.Time{}
	for _, c := range ev.Commands {
		role := ""
		for _, l := range c.Lines {
			parts := strings.SplitN(l, "|", 2)
			if len(parts) == 2 {
				if r := strings.TrimSpace(parts[0]); r != "" {
					role = r
				}
			}
			m := findSubmatch(validUntilRE, l)
			if m == nil || role == "" {
				continue
			}
			t, err := time.Parse("2006-01-02 15:04", strings.Replace(m[2], "T", " ", 1)[:16])
			if err != nil {
				continue
			}
			if z := strings.TrimPrefix(strings.TrimPrefix(m[3], "+"), "-"); z != "" && z != "Z" && z != "UTC" {
				var hh, mm int
				fmt.Sscanf(strings.ReplaceAll(z, ":", "")+"00", "%02d%02d", &hh, &mm)
				off := time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute
				if strings.HasPrefix(m[3], "-") {
					off = -off
				}
				t = t.Add(-off)
			}
			out[role] = t
		}
	}
	return out
}

// detectDBPasswordExpired finds clients refused by a database whose role's
// password expired: the server or the driver says so, or the refusals of
// a role began within a day after the validity psql lists for it ended.
func detectDBPasswordExpired(ev *Gathered, _ []Finding) []Finding {
	clients := map[string]*refusedClient{}
	var user, serverLine string
	var first, expiredSeen time.Time
	refusedUser := ""
	for x := range incidentMatches(ev, staleCredentialRE) {
		if m := findSubmatch(expiredUserRE, x.line); m != nil && refusedUser == "" {
			refusedUser = m[1]
		}
	}
	collect := func(re *regexp.Regexp, expired bool) {
		for x := range incidentMatches(ev, re) {
			set, at := x.set, orTime(x.t.FirstSeen, x.t.FirstIncident)
			first = earliest(first, at)
			if expired {
				expiredSeen = earliest(expiredSeen, at)
				if m := findSubmatch(expiredUserRE, x.line); m != nil && user == "" {
					user = m[1]
				}
			}
			if dbServerLog(set) {
				if expired && serverLine == "" {
					serverLine, _, _ = strings.Cut(x.line, "\n")
				}
				continue
			}
			tallyRefusal(clients, set, at, x.t.LastSeen, x.t.Incident).keep(x.line)
		}
	}
	collect(passwordExpiredRE, true)
	collect(staleCredentialRE, false)
	validity := roleValidity(ev)
	if user == "" {
		user = refusedUser
	}
	until, known := validity[user]
	// Without the server's word, the role's validity must have ended
	// within a day before its refusals began.
	if expiredSeen.IsZero() && (!known || first.IsZero() || until.After(first) || first.Sub(until) > 24*time.Hour) {
		return nil
	}
	if first.IsZero() {
		return nil
	}
	// The client: the one whose name is the role's, else the one refused
	// most.
	names := mostRefused(clients)
	roleName := strings.ToLower(strings.ReplaceAll(user, "_", "-"))
	subject, c := "", (*refusedClient)(nil)
	for _, n := range names {
		if strings.EqualFold(n, roleName) {
			subject, c = n, clients[n]
		}
	}
	if c == nil && len(names) > 0 {
		subject, c = names[0], clients[names[0]]
	}
	if c == nil {
		subject, c = orWord(ev.Scope.Service, roleName), &refusedClient{first: first, line: serverLine}
	}
	f := Finding{Kind: KindDBPasswordExpired, Subject: subject, Namespace: c.ns, Time: first, Severity: SevCritical, Weight: 0.92,
		Source: SrcLogs, Object: "workload " + subject}
	f.setFact("user", user)
	f.setFact("line", orWord(c.line, serverLine))
	f.setFact("server_line", serverLine)
	f.setFact("refused_from", first.UTC().Format("15:04:05"))
	if known {
		f.setFact("valid_until", until.UTC().Format("2006-01-02 15:04 UTC"))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the role %s's password was valid until %s (psql \\du)", user, ts(until)))
	}
	if serverLine != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("the database refuses %s from %s: %s", orWord(user, subject), ts(orTime(expiredSeen, first)), quote(ReadableLine(serverLine), 200)))
	}
	if c.line != "" && c.line != serverLine {
		f.addCount(c.n)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d lines of refused authentication from %s: %s", subject, c.n, ts(c.first), quote(ReadableLine(c.line), 200)))
	}
	f.Summary = fmt.Sprintf("the password of database role %s expired: %s is refused from %s", orWord(user, "of "+subject), subject, hm(first))
	return []Finding{f}
}
