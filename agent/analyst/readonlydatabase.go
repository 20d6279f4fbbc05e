package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Writes refused because the database they reach is read-only: after a
// failover the old writer comes back as a replica (Aurora and RDS
// Multi-AZ, Patroni, MySQL replicas, Redis replicas), and a client that
// kept its pooled connections, or resolved the writer's name before the
// switch, now writes to a reader: "cannot execute INSERT in a read-only
// transaction" (SQLSTATE 25006), MySQL's --read-only error 1290, Redis
// READONLY, MongoDB NotWritablePrimary. The database server's own log
// saying it restarted in standby (read-only) mode confirms the demotion.

// KindReadOnlyDB is writes reaching a read-only database.
const KindReadOnlyDB Kind = "read_only_database"

var readOnlyDB = &mechanism{
	kind:   KindReadOnlyDB,
	class:  classCause,
	label:  "writes reach a read-only database (a replica after a failover)",
	detect: detectReadOnlyWrites,
	// The clients whose writes fail suffer it (not Related: a host's
	// related names are renamed after the host, attachHosts).
	related: listedIn("clients", ", "),
	describe: func(h *Hypothesis, sc Scope) string {
		engine := orWord(h.fact("engine"), "database")
		what := "a read-only " + engine
		if h.Subject != engine {
			what = fmt.Sprintf("%s, a read-only %s", h.Subject, engine)
		}
		if h.fact("failover") != "" {
			return describeManagedFailover(h, engine)
		}
		if p := h.fact("new_primary"); p != "" {
			return describeElection(h, engine)
		}
		d := fmt.Sprintf("writes from %s reach %s (a replica/reader, not the writer), so they fail", orWord(h.fact("clients"), "the clients"), what)
		d += h.quoteClause(": ", "line", 200)
		if s := h.fact("standby"); s != "" {
			d += fmt.Sprintf(". The database %s itself restarted as a standby after a failover: %s", h.fact("host"), quote(ReadableLine(s), 160))
		}
		d += "; the clients' pooled connections (or a cached address) still point at the old writer, now a reader"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("failover") != "" {
			if ep := h.fact("pinned"); ep != "" {
				r.high("Point %s at the primary endpoint of %s (the name that follows the primary through a failover) instead of the node endpoint %s, then restart it", orWord(h.fact("clients"), "the clients"), h.Subject, ep)
			} else if h.fact("recovered") == "" {
				r.high("Recycle the database connections of %s (restart its pods or flush its pool) so that they reconnect to the current writer", orWord(h.fact("clients"), "the clients"))
			}
			if w := h.fact("writer_down"); w != "" {
				r.med("Find why the old writer %s went down from its error log and the provider's events (%s)", orWord(h.fact("old_writer"), "instance"), quote(w, 100))
			}
			r.med("Make the clients of %s survive a failover: connect through the cluster's writer endpoint, cap the pool's connection lifetime (maxLifetime) and validate connections on checkout (a read-only error evicts the connection), or use a failover-aware driver (AWS JDBC wrapper, RDS Proxy)", orWord(h.fact("clients"), "the clients"))
			r.low("Alert on failover events of %s, not only on its clients' errors", h.Subject)
			return
		}
		if h.fact("new_primary") != "" && h.fact("recovered") != "" {
			r.med("Step the primary of %s down before maintenance that restarts it (a planned election takes a second or two, not the election timeout)", h.Subject)
			r.med("Let the clients retry writes across an election (retryable writes, a retry on NotWritablePrimary / read-only errors) so an election costs latency, not 500s")
			r.low("Alert on elections of %s, not only on its clients' errors", h.Subject)
			return
		}
		r.high("Recycle the database connections of %s (restart its pods or flush its pool) so that they reconnect to the current writer endpoint", orWord(h.fact("clients"), "the clients"))
		r.med("Connect through the cluster's writer endpoint with a short DNS TTL and validate pooled connections on checkout (pool_pre_ping, test-on-borrow, check that the server is not in recovery)")
		r.low("Alert on failovers of %s and on read-only errors in its clients' logs", h.Subject)
	},
}

var (
	// A write refused by a read-only server, as clients quote it.
	readOnlyWriteRE = regexp.MustCompile(`(?i)cannot execute \w+(?: \w+)? in a read-only transaction|ReadOnlySqlTransaction|running with the --(?:super-)?read-only option|\bREADONLY You can't write against a read only replica|NotWritablePrimary|not master and slaveOk=false|\bnot master\b|read-only replica|database is read-only|in read-only mode`)
	// A replica set or cluster electing a new primary: MongoDB's
	// election and state transition, Patroni's and PostgreSQL's
	// promotion, Redis Sentinel's switch of master.
	electionRE = regexp.MustCompile(`(?i)Starting an election|Election succeeded|assuming primary role|Transition to primary complete|stepping down from primary|promoted self to leader|received promote request|selected new timeline ID|\+switch-master|\+elected-leader|\+failover-end|new primary (?:elected|member)|primary election`)
	// The line of the member that became the primary.
	newPrimaryRE = regexp.MustCompile(`(?i)assuming primary role|Transition to primary complete|promoted self to leader|received promote request|selected new timeline ID`)
	// A managed database's own record of a failover: RDS and Aurora
	// events, Cloud SQL's and Azure's failover operations.
	managedFailoverRE = regexp.MustCompile(`(?i)(?:Started|Completed|Initiated) (?:cross AZ |Multi-AZ |planned |forced )?failover|Multi-AZ (?:instance )?failover (?:started|completed)|failover (?:started|completed|complete|initiated|in progress|succeeded)|\bfailed over to\b|has been promoted|promoted (?:to|as) (?:the )?(?:primary|writer|master)|operationType"?\s*[:=]\s*"?FAILOVER|\bFailover (?:from|to) (?:primary |master |replica )?node\b[^\n]{0,120}?\b(?:completed|started|complete)\b`)
	// ElastiCache's and MemoryDB's record of a failover names both nodes:
	// "Failover from primary node sessions-001 to replica node
	// sessions-002 completed" (older engines say master node).
	nodeFailoverRE = regexp.MustCompile(`(?i)\bfrom (?:primary|master) node ([A-Za-z0-9][\w.-]*\w) to (?:replica |read replica )?node ([A-Za-z0-9][\w.-]*\w)|\bFailover to (?:replica |read replica )?node ([A-Za-z0-9][\w.-]*\w)`)
	// The instance a failover went to.
	failoverTargetRE = regexp.MustCompile(`(?i)(?:failover|failed over) to (?:the )?(?:DB instance|instance|replica|server)?:?\s*([A-Za-z0-9][\w.-]*\w)`)
	// The writer going down before it.
	writerDownRE = regexp.MustCompile(`(?i)stopped unexpectedly|is being restarted|instance (?:crashed|failed|is unhealthy)|hardware (?:failure|issue)|storage (?:failure|volume failure)|became unresponsive|host replacement`)
	// A database server that restarted as a standby.
	standbyRE = regexp.MustCompile(`(?i)entering standby mode|ready to accept read-only connections|started streaming WAL|demot(?:ed|ing) to (?:replica|standby|secondary)|transition(?:ing)? to SECONDARY|MASTER <-> REPLICA sync started|super_read_only.*(?:ON|1)`)
)

// detectReadOnlyWrites finds clients whose writes a read-only database
// refuses, and the database's own log that shows it demoted.
func detectReadOnlyWrites(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	var clients []string
	var last time.Time // the last refused write
	for x := range incidentMatches(ev, readOnlyWriteRE) {
		set, t, line := x.set, x.t, x.line
		if f == nil {
			f = &Finding{Kind: KindReadOnlyDB, Namespace: set.Namespace, Source: set.Origin, Time: orTime(t.FirstIncident, t.FirstSeen),
				Severity: SevCritical, Weight: 0.8, Object: set.Origin + " " + set.Source}
		}
		f.Time = earliest(f.Time, orTime(t.FirstIncident, t.FirstSeen))
		f.addCount(t.Incident)
		// A host log named after a client is the client's: the
		// server is the source whose lines show a database.
		server := hostRole(*set) != ""
		if !server {
			last = latest(last, t.LastSeen)
		}
		if !server {
			clients = appendNew(clients, set.Subject)
			if f.fact("line") == "" || RootCauseScore(line) > RootCauseScore(f.fact("line")) {
				delete(f.Facts, "line")
				f.setFact("line", line)
			}
		} else {
			f.setFact("host", set.Subject)
		}
		f.setFact("engine", readOnlyEngine(line))
		if len(f.Evidence) < 3 {
			f.Evidence = append(f.Evidence, templateEvidence(*set, t, line))
		}
	}
	if f == nil {
		return nil
	}
	// The database's own log: it came back as a standby.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if !set.Host && hostRole(*set) == "" {
			continue
		}
		var hits []string
		for _, t := range set.Templates {
			if matchLine(standbyRE, t.Example) && ev.Window.recent(t.LastSeen) {
				hits = append(hits, t.Example)
				f.Time = earliest(f.Time, t.FirstSeen)
			}
		}
		if len(hits) > 0 {
			sort.Strings(hits)
			f.setFact("standby", hits[0])
			delete(f.Facts, "host")
			f.setFact("host", set.Subject)
			f.Weight = 0.95
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s logged that the database restarted as a standby: %s", set.Origin, set.Source, quote(ReadableLine(hits[0]), 200)))
		}
	}
	readElection(ev, f, last)
	if f.fact("election") == "" {
		readManagedFailover(ev, f, last)
	}
	readFailoverLoop(ev, f, clients)
	f.Subject = orWord(f.fact("host"), orWord(f.fact("engine"), "database"))
	if f.fact("engine") == "" {
		f.setFact("engine", "database")
	}
	f.setFact("clients", strings.Join(clients, ", "))
	f.Summary = fmt.Sprintf("writes from %s fail: the %s is read-only (from %s)", orWord(f.fact("clients"), "clients"), f.fact("engine"), hm(f.Time))
	if f.Kind == KindFailoverLoop {
		f.Summary = fmt.Sprintf("the %s primary %s fails over again and again from %s; writes from %s fail read-only in between", f.fact("engine"), f.Subject, f.fact("loop_from"), orWord(f.fact("clients"), "clients"))
	}
	return []Finding{*f}
}

// readOnlyEngine names the database engine a read-only error comes from.
func readOnlyEngine(line string) string {
	l := strings.ToLower(line)
	switch {
	case strings.Contains(l, "read-only transaction") || strings.Contains(l, "readonlysqltransaction") || strings.Contains(l, "psycopg") || strings.Contains(l, "standby"):
		return "PostgreSQL database"
	case strings.Contains(l, "--read-only") || strings.Contains(l, "--super-read-only") || strings.Contains(l, "mysql"):
		return "MySQL database"
	case strings.Contains(l, "readonly you can't write"):
		return "Redis"
	case strings.Contains(l, "notwritableprimary") || strings.Contains(l, "not master"):
		return "MongoDB"
	}
	return ""
}

// readElection reads, in the database members' logs, an election of a new
// primary around the refused writes (from ten minutes before their onset
// to five after): the member that became primary and when. Writes that
// stopped failing within two minutes of it recovered with the election.
func readElection(ev *Gathered, f *Finding, last time.Time) {
	from, to := f.Time.Add(-10*time.Minute), f.Time.Add(5*time.Minute)
	var line, primary string
	var at time.Time
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if t.FirstSeen.Before(from) || t.FirstSeen.After(to) || !matchLine(electionRE, l) {
					continue
				}
				np := matchLine(newPrimaryRE, l)
				if line == "" || np && (primary == "" || t.FirstSeen.Before(at)) {
					line, at = l, t.FirstSeen
					if np {
						primary = set.Subject
					}
				}
			}
		}
	}
	if line == "" {
		return
	}
	f.setFact("election", line)
	f.setFact("new_primary", primary)
	f.setFact("elected_at", at.UTC().Format("15:04:05"))
	f.setFact("errors_from", f.Time.UTC().Format("15:04:05"))
	if !last.IsZero() {
		f.setFact("errors_to", last.UTC().Format("15:04:05"))
		if !at.IsZero() && last.Sub(at) < 2*time.Minute && ev.Window.End.Sub(last) > 5*time.Minute {
			f.setFact("recovered", "true")
		}
	}
	if f.fact("host") == "" && primary != "" {
		f.setFact("host", memberSet(primary))
	}
	f.Weight = max(f.Weight, 0.95)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged the election of a new primary at %s: %s", orWord(primary, "a member"), at.UTC().Format("15:04:05"), quote(ReadableLine(line), 200)))
}

// memberSet names the replica set of a member ("mongo-profiles-1" →
// "mongo-profiles").
func memberSet(member string) string {
	if i := strings.LastIndexByte(member, '-'); i > 0 && strings.Trim(member[i+1:], "0123456789") == "" && i < len(member)-1 {
		return member[:i]
	}
	return member
}

// describeElection explains writes refused while a new primary was
// elected.
func describeElection(h *Hypothesis, engine string) string {
	d := fmt.Sprintf("writes from %s were refused (%s not primary) while the %s replica set %s elected a new primary: %s became primary at %s UTC (%s)",
		orWord(h.fact("clients"), "the clients"), engine, engine, h.Subject, h.fact("new_primary"), h.fact("elected_at"), quote(ReadableLine(h.fact("election")), 140))
	d += h.quoteClause("; the clients saw ", "line", 160)
	if h.fact("recovered") != "" {
		d += fmt.Sprintf(". The errors ran from %s to %s UTC and stopped once the clients found the new primary: a failover of the primary, over", h.fact("errors_from"), h.fact("errors_to"))
	} else {
		d += "; the clients' pooled connections (or a cached address) may still point at the old primary"
	}
	return d
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readManagedFailover reads a managed database's record of a failover
// (an RDS event in the operator's `aws rds describe-events` output or a
// log group of events) from fifteen minutes before the refused writes'
// onset to five minutes after: when it began and completed, the instance
// it went to, the old writer going down before it. Writes that stopped
// failing and stayed so for ten minutes or more before the window's end
// recovered: the clients' pools let go of the old writer.
func readManagedFailover(ev *Gathered, f *Finding, last time.Time) {
	from, to := f.Time.Add(-15*time.Minute), f.Time.Add(5*time.Minute)
	var first, done timedLine
	for _, l := range eventLines(ev, managedFailoverRE) {
		if l.Time.IsZero() || l.Time.Before(from) || l.Time.After(to) {
			continue
		}
		if first.Text == "" {
			first = l
		}
		if m := regexp.MustCompile(`(?i)completed|complete\b|succeeded|promoted`).FindString(l.Text); m != "" {
			done = l
		}
	}
	if first.Text == "" {
		return
	}
	f.setFact("failover", first.Text)
	f.setFact("failover_at", first.Time.UTC().Format("15:04:05"))
	if done.Text != "" && done.Text != first.Text {
		f.setFact("failover_done", done.Text)
		f.setFact("failover_done_at", done.Time.UTC().Format("15:04:05"))
	}
	for _, l := range []string{first.Text, done.Text} {
		if m := findSubmatch(nodeFailoverRE, l); m != nil {
			if m[1] != "" && f.fact("old_writer") == "" {
				f.setFact("old_writer", m[1])
			}
			if w := m[2] + m[3]; w != "" && f.fact("new_writer") == "" {
				f.setFact("new_writer", w)
			}
		}
		if m := findSubmatch(failoverTargetRE, l); m != nil && f.fact("new_writer") == "" {
			f.setFact("new_writer", m[1])
		}
	}
	if c := commandFlag(first.From, "--source-identifier", "--db-cluster-identifier", "--db-instance-identifier"); c != "" && f.fact("host") == "" {
		f.setFact("host", c)
	}
	// The old writer going down, up to ten minutes before the failover.
	for _, l := range eventLines(ev, writerDownRE) {
		if !l.Time.IsZero() && !l.Time.Before(first.Time.Add(-10*time.Minute)) && !l.Time.After(first.Time.Add(time.Minute)) {
			f.setFact("writer_down", l.Text)
			if inst := commandFlag(l.From, "--source-identifier", "--db-instance-identifier"); inst != "" && inst != f.fact("new_writer") {
				f.setFact("old_writer", inst)
			}
			break
		}
	}
	readPinnedEndpoint(ev, f)
	f.setFact("errors_from", f.Time.UTC().Format("15:04:05"))
	if !last.IsZero() {
		f.setFact("errors_to", last.UTC().Format("15:04:05"))
		if ev.Window.End.Sub(last) >= 10*time.Minute && last.Sub(first.Time) < time.Hour {
			f.setFact("recovered", "true")
		}
	}
	f.Time = earliest(f.Time, first.Time)
	f.Weight = max(f.Weight, 0.95)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", first.From, quote(first.Text, 200)))
	if done.Text != "" && done.Text != first.Text {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", done.From, quote(done.Text, 200)))
	}
}

// nodeEndpointRE is a host name in a client's configuration or its log:
// the first label is the node's or instance's name.
var nodeEndpointRE = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9-]*[a-z0-9])((?:\.[a-z0-9-]+){2,})(?::\d+)?`)

// readPinnedEndpoint finds the old writer's own endpoint (its node or
// instance name, not the group's primary or the cluster's writer
// endpoint) in what configures the clients: an environment listing, a
// task definition, a ConfigMap or a client's own start-up line. A client
// given a node's address follows that node, not the role: after the
// failover it keeps writing to the node, now a replica, and no
// reconnect helps.
func readPinnedEndpoint(ev *Gathered, f *Finding) {
	old := strings.ToLower(f.fact("old_writer"))
	if old == "" {
		return
	}
	pinned := func(l string) string {
		for _, m := range nodeEndpointRE.FindAllStringSubmatch(l, -1) {
			if strings.ToLower(m[1]) == old {
				return m[0]
			}
		}
		return ""
	}
	newer := strings.ToLower(f.fact("new_writer"))
	for _, c := range ev.Commands {
		// An output that lists the group's members (describe-replication-
		// groups, describe-db-clusters) names every node's endpoint:
		// it describes the group, not what a client uses.
		if newer != "" && strings.Contains(strings.ToLower(strings.Join(c.Lines, "\n")), newer) {
			continue
		}
		for _, l := range c.Lines {
			if ep := pinned(l); ep != "" {
				f.setFact("pinned", ep)
				f.setFact("pinned_in", c.Command)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the clients are configured with %s, the endpoint of the node %s itself, not the group's primary endpoint", c.Command, ep, f.fact("old_writer")))
				return
			}
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if hostRole(*set) != "" {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if ep := pinned(l); ep != "" {
					f.setFact("pinned", ep)
					f.setFact("pinned_in", set.Source)
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s connects to %s, the endpoint of the node %s itself, not the group's primary endpoint: %s", set.Subject, ep, f.fact("old_writer"), quote(ReadableLine(l), 200)))
					return
				}
			}
		}
	}
}

// commandFlag is the value of the first of flags a command line gives
// ("--source-identifier payments-aurora", "--flag=value").
func commandFlag(cmd string, flags ...string) string {
	fields := strings.Fields(cmd)
	for _, fl := range flags {
		for i, w := range fields {
			if w == fl && i+1 < len(fields) {
				return strings.Trim(fields[i+1], `'"`)
			}
			if v, ok := strings.CutPrefix(w, fl+"="); ok {
				return strings.Trim(v, `'"`)
			}
		}
	}
	return ""
}

// describeManagedFailover explains writes refused after a managed
// database failed over.
func describeManagedFailover(h *Hypothesis, engine string) string {
	d := fmt.Sprintf("the %s %s failed over at %s UTC (%s)", engine, h.Subject, h.fact("failover_at"), quote(ReadableLine(h.fact("failover")), 140))
	if w := h.fact("writer_down"); w != "" {
		d += fmt.Sprintf(" after its writer %s went down (%s)", h.fact("old_writer"), quote(ReadableLine(w), 140))
		d = strings.Replace(d, "writer  went", "writer went", 1)
	}
	d += h.wrapped("; ", "new_writer", " became the writer")
	if ep := h.fact("pinned"); ep != "" {
		d += fmt.Sprintf(". %s is pinned to %s, the node endpoint of the old primary %s, not the primary endpoint that follows a failover: it still writes to that node, now a read-only replica, so its writes fail", orWord(h.fact("clients"), "The clients"), ep, h.fact("old_writer"))
	} else {
		d += fmt.Sprintf(". The pooled connections of %s still pointed at the old writer, now a reader, so their writes failed read-only", orWord(h.fact("clients"), "the clients"))
	}
	if l := h.fact("line"); l != "" {
		d += " (" + quote(ReadableLine(l), 160) + ")"
	}
	if h.fact("recovered") != "" {
		d += fmt.Sprintf(" from %s to %s UTC, and stopped once the pools recycled those connections: the failover is over and the service recovered", h.fact("errors_from"), h.fact("errors_to"))
	} else if h.fact("pinned") == "" {
		d += "; the clients' pools may still hold connections to the old writer"
	}
	return d
}
