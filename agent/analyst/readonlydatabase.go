package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
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
	related: func(h *Hypothesis, f *Finding) bool {
		for _, c := range strings.Split(h.fact("clients"), ", ") {
			if c != "" && (f.Subject == c || f.fact("caller") == c) {
				return true
			}
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		engine := orWord(h.fact("engine"), "database")
		what := "a read-only " + engine
		if h.Subject != engine {
			what = fmt.Sprintf("%s, a read-only %s", h.Subject, engine)
		}
		d := fmt.Sprintf("writes from %s reach %s (a replica/reader, not the writer), so they fail", orWord(h.fact("clients"), "the clients"), what)
		if l := h.fact("line"); l != "" {
			d += ": " + quote(ReadableLine(l), 200)
		}
		if s := h.fact("standby"); s != "" {
			d += fmt.Sprintf(". The database %s itself restarted as a standby after a failover: %s", h.fact("host"), quote(ReadableLine(s), 160))
		}
		d += "; the clients' pooled connections (or a cached address) still point at the old writer, now a reader"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Recycle the database connections of %s (restart its pods or flush its pool) so that they reconnect to the current writer endpoint", orWord(h.fact("clients"), "the clients"))
		r.med("Connect through the cluster's writer endpoint with a short DNS TTL and validate pooled connections on checkout (pool_pre_ping, test-on-borrow, check that the server is not in recovery)")
		r.low("Alert on failovers of %s and on read-only errors in its clients' logs", h.Subject)
	},
}

var (
	// A write refused by a read-only server, as clients quote it.
	readOnlyWriteRE = regexp.MustCompile(`(?i)cannot execute \w+(?: \w+)? in a read-only transaction|ReadOnlySqlTransaction|running with the --(?:super-)?read-only option|\bREADONLY You can't write against a read only replica|NotWritablePrimary|not master and slaveOk=false|\bnot master\b|read-only replica|database is read-only|in read-only mode`)
	// A database server that restarted as a standby.
	standbyRE = regexp.MustCompile(`(?i)entering standby mode|ready to accept read-only connections|started streaming WAL|demot(?:ed|ing) to (?:replica|standby|secondary)|transition(?:ing)? to SECONDARY|MASTER <-> REPLICA sync started|super_read_only.*(?:ON|1)`)
)

// detectReadOnlyWrites finds clients whose writes a read-only database
// refuses, and the database's own log that shows it demoted.
func detectReadOnlyWrites(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	var clients []string
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := ""
			for _, l := range []string{t.Example, t.Last} {
				if l != "" && readOnlyWriteRE.MatchString(l) {
					line = l
					break
				}
			}
			if line == "" {
				continue
			}
			if f == nil {
				f = &Finding{Kind: KindReadOnlyDB, Namespace: set.Namespace, Source: set.Origin, Time: orTime(t.FirstIncident, t.FirstSeen),
					Severity: SevCritical, Weight: 0.8, Object: set.Origin + " " + set.Source}
			}
			f.Time = earliest(f.Time, orTime(t.FirstIncident, t.FirstSeen))
			f.addCount(t.Incident)
			server := set.Host || hostRole(*set) != ""
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
			if standbyRE.MatchString(t.Example) && ev.Window.recent(t.LastSeen) {
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
	f.Subject = orWord(f.fact("host"), orWord(f.fact("engine"), "database"))
	if f.fact("engine") == "" {
		f.setFact("engine", "database")
	}
	f.setFact("clients", strings.Join(clients, ", "))
	f.Summary = fmt.Sprintf("writes from %s fail: the %s is read-only (from %s)", orWord(f.fact("clients"), "clients"), f.fact("engine"), hm(f.Time))
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
