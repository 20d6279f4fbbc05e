package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A managed database taken down by its provider's maintenance: RDS,
// Aurora or Cloud SQL applies a pending engine minor version upgrade or
// operating-system patches in the instance's maintenance window (an
// auto_minor_version_upgrade left on, a window set weeks earlier), shuts
// the instance down and starts it again minutes later. Its clients get
// "terminating connection due to administrator command" (SQLSTATE 57P01),
// "the database system is shutting down" and then connection refused
// until it is back, and recover on their own. The provider's event log
// says so ("Applying off-line patches to DB instance", "DB instance
// shutdown", "Database instance patched", "Upgrading database engine
// version"), the server's own log shows the shutdown and the new version
// starting. A deploy of a client shortly before is a coincidence.

// KindDBMaintenance is a managed database restarted by its provider's
// maintenance (a minor version upgrade, patches) while clients used it.
const KindDBMaintenance Kind = "db_maintenance"

var (
	// dbMaintEventRE is a provider event of maintenance that restarts a
	// database instance: RDS/Aurora events, Cloud SQL and Azure
	// operations.
	dbMaintEventRE = regexp.MustCompile(`(?i)Applying off-line patches|Finished applying off-line patches|Database (?:instance|cluster) patched|Upgrading database engine version|Finished upgrading database engine version|Database (?:cluster )?engine (?:minor )?version upgrade (?:started|finished|completed)|(?:automatic )?minor version upgrade (?:started|applied|in progress|completed)|Performing (?:a )?(?:maintenance|database upgrade)|"operationType"\s*:\s*"(?:MAINTENANCE|UPDATE_MAINTENANCE)"|planned maintenance (?:started|in progress|completed)|(?-i:\bMAINTENANCE\s+\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?)`)
	// dbMaintOpRowRE is a row of `gcloud sql operations list`: the
	// operation's type, its start and its end.
	dbMaintOpRowRE = regexp.MustCompile(`\bMAINTENANCE\s+(\d{4}-\d\d-\d\dT\S+)\s+(\d{4}-\d\d-\d\dT\S+)`)
	// dbMaintDownUpRE is the provider saying the instance went down and
	// came back (the restart the maintenance caused).
	dbMaintDownUpRE = regexp.MustCompile(`(?i)DB instance (?:shutdown|restarted)|DB instance (?:stopped|started)|Database instance (?:shutdown|restarted)`)
	// dbMaintUpgradeRE says the maintenance was an engine upgrade.
	dbMaintUpgradeRE = regexp.MustCompile(`(?i)engine version|minor version|upgrad`)
	// dbServerStartRE is the server's own log starting a version:
	// PostgreSQL's "starting PostgreSQL 15.10", MySQL's "ready for
	// connections. Version: '8.0.36'".
	dbServerStartRE = regexp.MustCompile(`(?i)starting PostgreSQL (\d+(?:\.\d+)+)|ready for connections\.\s+Version:\s+'(\d+(?:\.\d+)+)|mysqld(?:\.exe)? \(mysqld (\d+(?:\.\d+)+)\) starting`)
	// dbServerDownRE is the server's own log shutting down.
	dbServerDownRE = regexp.MustCompile(`(?i)received (?:fast|smart|immediate) shutdown request|database system is shut down|\[Server\] .*Shutdown complete|mysqld: Shutdown complete|Received SHUTDOWN from user`)
	// dbRestartClientRE is a client losing its database to a restart.
	dbRestartClientRE = regexp.MustCompile(`(?i)terminating connection due to administrator command|SQLSTATE 57P0[13]|\b57P0[13]\b|the database system is (?:shutting down|starting up|in recovery mode)|server closed the connection unexpectedly|:(?:5432|3306|6432)\b[^\n]{0,40}connection refused|connection refused[^\n]{0,80}(?:postgres|mysql|:5432|:3306)|(?:failed to connect to|could not connect to server)[^\n]{0,200}(?:connection refused|no route|timed? ?out)|Can't connect to MySQL server|Lost connection to MySQL server|Communications link failure|PSQLException: Connection to \S+ refused`)
	// dbSourceIDRE is the instance an RDS event names.
	dbSourceIDRE = regexp.MustCompile(`"SourceIdentifier"\s*:\s*"([^"]+)"|\bdb:([\w-]+)"?`)
	// dbMaintSettingRE is a change that set how maintenance runs.
	dbMaintSettingRE = regexp.MustCompile(`(?i)auto_?minor_?version_?upgrade|auto[- ]minor[- ]version|maintenance[_ ]window|preferred_maintenance_window|maintenance_policy|engine_version`)
)

var dbMaintenance = &mechanism{
	kind:   KindDBMaintenance,
	class:  classCause,
	label:  "managed database restarted by provider maintenance",
	detect: detectDBMaintenance,
	// The clients that lost the database, and the database findings of
	// the restart (connection refused, terminated connections, the
	// server's own shutdown lines).
	related: func(h *Hypothesis, f *Finding) bool {
		if ofListed(f, h.fact("clients"), ", ") {
			return true
		}
		if f.Time.IsZero() || f.Time.Before(h.Onset.Add(-5*time.Minute)) || f.Time.After(h.Onset.Add(time.Hour)) {
			return false
		}
		text := f.Subject + " " + strings.Join(f.Evidence, " ")
		return f.Kind == KindConnRefused || matchLine(dbRestartClientRE, text) || matchLine(dbServerDownRE, text)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(dbMaintSettingRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		what := "maintenance (off-line patches)"
		if h.fact("upgrade") != "" {
			what = "maintenance: an engine minor version upgrade"
			if v := h.fact("version"); v != "" {
				what += " to " + v
			}
		}
		d := fmt.Sprintf("the managed database %s was shut down and restarted by its provider's scheduled %s, from %s to %s UTC (%s)",
			h.Subject, what, h.fact("from"), orWord(h.fact("to"), "?"), quote(h.fact("event"), 160))
		d += h.quoteClause("; its own log: ", "server", 140)
		d += fmt.Sprintf(". While it was down %s lost the database (terminated connections, connection refused: %s)", orWord(h.fact("clients"), "its clients"), quote(ReadableLine(h.fact("client_line")), 180))
		d += h.clause(" and recovered on its own at ", "recovered")
		if s := h.fact("setting"); s != "" {
			d += fmt.Sprintf(". The maintenance was scheduled by the instance's settings (%s)", quote(s, 160))
		}
		d += "; a deploy of a client near that time is a coincidence"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("provider") == "Cloud SQL" {
			r.high("Move %s's maintenance window out of busy hours (gcloud sql instances patch --maintenance-window-day/--maintenance-window-hour), add deny-maintenance periods around peaks, and apply pending maintenance yourself at a chosen time (gcloud sql instances reschedule-maintenance)", h.Subject)
		} else {
			r.high("Move %s's maintenance window out of busy hours (or batch runs), and apply pending maintenance and minor version upgrades yourself at a chosen time (aws rds describe-pending-maintenance-actions, apply-pending-maintenance-action)", h.Subject)
		}
		r.med("Use Multi-AZ or a cluster with a replica for %s so that patches fail over in seconds instead of a full shutdown; have %s retry connections with backoff", h.Subject, orWord(h.fact("clients"), "the clients"))
		if h.fact("provider") == "Cloud SQL" {
			r.low("Subscribe to %s's maintenance notifications (Cloud SQL maintenance notification emails, Cloud Logging alerts on its operations) and announce windows to the owners of its clients", h.Subject)
		} else {
			r.low("Subscribe to %s's maintenance and availability events (RDS event subscriptions, EventBridge) and announce windows to the owners of its clients", h.Subject)
		}
	},
}

// detectDBMaintenance finds a provider's maintenance event on a database
// instance with clients failing to reach a database within its span.
func detectDBMaintenance(ev *Gathered, _ []Finding) []Finding {
	maint := eventLines(ev, dbMaintEventRE)
	if len(maint) == 0 {
		return nil
	}
	var first, last timedLine
	instance := ""
	for _, l := range maint {
		// A row of a provider's operations list leads with the
		// operation's id: its start is the first time in it.
		if m := findSubmatch(dbMaintOpRowRE, l.Text); m != nil && l.Time.IsZero() {
			l.Time, _ = parseISO8601(m[1])
		}
		if l.Time.IsZero() || !ev.Window.covers(l.Time) {
			continue
		}
		if first.Text == "" {
			first = l
		}
		last = l
		if instance == "" {
			instance = dbEventInstance(l)
		}
	}
	if first.Text == "" {
		return nil
	}
	from, to := first.Time, last.Time
	for _, l := range eventLines(ev, dbMaintDownUpRE) {
		if l.Time.IsZero() || l.Time.Before(from.Add(-5*time.Minute)) || l.Time.After(from.Add(2*time.Hour)) {
			continue
		}
		to = latest(to, l.Time)
		if instance == "" {
			instance = dbEventInstance(l)
		}
	}
	// A provider operation's row carries its own end.
	opEnd := time.Time{}
	if m := findSubmatch(dbMaintOpRowRE, last.Text); m != nil {
		if end, ok := parseISO8601(m[2]); ok && end.After(to) && end.Before(from.Add(6*time.Hour)) {
			to, opEnd = end, end
		}
	}
	if !to.After(from) {
		to = from.Add(15 * time.Minute)
	}
	// The clients: log sets with lines of a database lost, during the
	// maintenance, that are not the database server's own log.
	var clients []string
	var clientLine string
	var clientFirst, clientLast time.Time
	// The burst can precede the window the question is about: every
	// template seen during the maintenance counts.
	for set, t := range allTemplates(ev) {
		line := templateLine(t, dbRestartClientRE)
		if line == "" || matchLine(dbServerDownRE, line) {
			continue
		}
		if t.FirstSeen.Before(from.Add(-5*time.Minute)) || t.FirstSeen.After(to.Add(5*time.Minute)) || t.Incident == 0 && t.LastSeen.After(to.Add(5*time.Minute)) {
			continue
		}
		if serverLog(set) {
			continue
		}
		if !slices.Contains(clients, set.Subject) {
			clients = append(clients, set.Subject)
		}
		if clientLine == "" || t.FirstSeen.Before(clientFirst) {
			clientLine = line
		}
		clientFirst = earliest(clientFirst, t.FirstSeen)
		clientLast = latest(clientLast, t.LastSeen)
		if instance == "" {
			instance = instanceName(dbHostOf(line))
		}
	}
	if len(clients) == 0 {
		return nil
	}
	// The provider's events fold into few templates: the clients' last
	// error dates the end of the outage better.
	if clientLast.After(to) && clientLast.Before(from.Add(2*time.Hour)) {
		to = clientLast
	}
	if instance == "" {
		instance = "database"
	}
	f := Finding{Kind: KindDBMaintenance, Subject: instance, Object: "database " + instance, Source: SrcLogs, Time: from,
		Severity: SevCritical, Weight: 0.95}
	f.setFact("from", from.UTC().Format("15:04"))
	f.setFact("to", to.UTC().Format("15:04"))
	if !opEnd.IsZero() {
		f.setFact("event", fmt.Sprintf("operation MAINTENANCE from %s to %s", first.Time.UTC().Format("15:04:05"), opEnd.UTC().Format("15:04:05")))
	}
	f.setFact("event", eventMessage(first.Text))
	f.setFact("clients", strings.Join(clients, ", "))
	f.setFact("client_line", clientLine)
	if matchLine(dbMaintUpgradeRE, first.Text) || matchLine(dbMaintUpgradeRE, last.Text) {
		f.setFact("upgrade", "true")
	}
	if strings.Contains(first.From, "gcloud ") || strings.Contains(strings.ToLower(first.Text), "cloudsql") {
		f.setFact("provider", "Cloud SQL")
	}
	// The server's own log: its shutdown and the version it started.
	for _, l := range eventLines(ev, dbServerStartRE) {
		if l.Time.IsZero() || l.Time.Before(from.Add(-5*time.Minute)) || l.Time.After(to.Add(10*time.Minute)) {
			continue
		}
		m := findSubmatch(dbServerStartRE, l.Text)
		f.setFact("version", m[1]+m[2]+m[3])
		f.setFact("upgrade", "true")
		f.setFact("server", l.Text)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", l.From, quote(ReadableLine(l.Text), 200)))
		break
	}
	if !clientLast.IsZero() && ev.Window.End.Sub(clientLast) >= 10*time.Minute && clientLast.Before(to.Add(15*time.Minute)) {
		f.setFact("recovered", fmt.Sprintf("%s UTC, when it was back", latest(clientLast, opEnd).UTC().Format("15:04")))
	}
	for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		if matchLine(dbMaintSettingRE, c.Description) && c.Timestamp.Before(from) {
			f.setFact("setting", c.Description)
		}
	}
	f.Summary = fmt.Sprintf("database %s restarted by provider maintenance %s to %s", instance, hm(from), hm(to))
	ev0 := []string{fmt.Sprintf("%s %s: %s", first.From, hm(first.Time), quote(eventMessage(first.Text), 200))}
	if last.Text != first.Text {
		ev0 = append(ev0, fmt.Sprintf("%s %s: %s", last.From, hm(last.Time), quote(eventMessage(last.Text), 200)))
	}
	ev0 = append(ev0, fmt.Sprintf("%s: %s", strings.Join(clients, ", "), quote(ReadableLine(clientLine), 200)))
	f.Evidence = append(ev0, f.Evidence...)
	return []Finding{f}
}

// dbEventInstance is the instance a provider's event names: its
// SourceIdentifier or ARN, or the command's --source-identifier.
func dbEventInstance(l timedLine) string {
	if m := findSubmatch(dbSourceIDRE, l.Text); m != nil {
		return strings.ToLower(m[1] + m[2])
	}
	return commandFlag(l.From, "--source-identifier", "--db-instance-identifier", "--db-cluster-identifier", "--instance")
}

// eventMessageRE is the message of a provider's event in JSON (an
// EventBridge or describe-events record).
var eventMessageRE = regexp.MustCompile(`"(?:Message|message)"\s*:\s*"((?:[^"\\]|\\.)+)"`)

// eventMessage is an event's message: the Message field of a JSON record
// (the last one: EventBridge nests the provider's under detail), the text
// as it is otherwise.
func eventMessage(text string) string {
	if ms := findAllSubmatch(eventMessageRE, text, -1); len(ms) > 0 && strings.HasPrefix(strings.TrimSpace(text), "{") {
		return strings.ReplaceAll(ms[len(ms)-1][1], `\"`, `"`)
	}
	return text
}

// serverLog reports whether a log set is a database server's own log
// (its lines carry the server's shutdown or startup).
func serverLog(set *LogSet) bool {
	for _, t := range set.Templates {
		if templateLine(t, dbServerDownRE) != "" || templateLine(t, dbServerStartRE) != "" {
			return true
		}
	}
	return false
}
