package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A read replica behind its primary because it is applying a schema
// change replicated from it: MySQL (and MariaDB) write a DDL to the binary
// log as one event, and the replica's applier runs it as one statement
// after the primary finished it. An ALTER TABLE that ran online for forty
// minutes on the primary (ALGORITHM=INPLACE, LOCK=NONE) takes as long
// again on the replica, and while it runs the other applier workers wait
// for it ("Waiting for preceding transaction to commit"), so the lag grows
// by the DDL's whole runtime and every read from the replica is that stale.
// Nothing on the replica holds it back: its own applier is busy. It is
// read from the replica's session list (the "system user" threads, one of
// them "altering table" with the ALTER as its statement), from SHOW
// REPLICA STATUS (Replica_SQL_Running_State), from the server's log naming
// the DDL its replication applies, and from the schema change on the
// primary shortly before.

// KindReplicaDDL is a replica lagging while its applier runs a DDL
// replicated from the primary.
const KindReplicaDDL Kind = "replica_applying_ddl"

var replicaDDL = &mechanism{
	kind:    KindReplicaDDL,
	class:   classCause,
	label:   "replica lagging while it applies a schema change (DDL) replicated from the primary",
	detect:  detectReplicaDDL,
	related: relatedToTop(KindReplicaDDL),
	// The schema change run on the primary is what the replica applies.
	fitsChange:     changeSays(ddlChangeRE),
	strictTriggers: true,
	describe:       describeReplicaDDL,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		inst := h.Subject
		r.high("Send the reads that need fresh data to the primary (or take %s out of the read pool) until it has applied the DDL and caught up; do not stop replication or kill the applier: the DDL would start again from the beginning", inst)
		r.med("Run large schema changes with an online copy tool that replicates in small chunks (gh-ost, pt-online-schema-change), or apply them to the replicas first, so that no single replicated DDL holds a replica back for its whole runtime")
		r.low("Route reads by replica lag (a maximum lag in the reader or proxy) and alert on Seconds_Behind_Source and on a replica applier running one statement for long")
	},
}

var (
	// A change that alters a schema.
	ddlChangeRE = regexp.MustCompile(`(?i)ALTER\s+TABLE|ADD\s+(?:INDEX|COLUMN|KEY)|CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+(?:INDEX|COLUMN)|OPTIMIZE\s+TABLE|schema (?:change|migration)|\bDDL\b|online migration`)
	// A database's log saying its replication applies a DDL.
	replicaDDLLineRE = regexp.MustCompile(`(?i)(?:replica|slave|applier|SQL thread|\[Repl\]|replication).{0,160}(?:ALTER\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX|OPTIMIZE\s+TABLE|DROP\s+INDEX)`)
)

// detectReplicaDDL finds replicas whose lag comes from a DDL their own
// applier executes.
func detectReplicaDDL(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, st := range sqlStates(ev.Commands) {
		if st.lag < 2*time.Minute || st.applying == "" && st.applyingState == "" {
			continue
		}
		seen[st.instance] = true
		f := Finding{Kind: KindReplicaDDL, Subject: st.instance, Object: "database " + st.instance, Time: ev.Window.End.Add(-st.lag).Truncate(time.Second),
			Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
		if st.applyingAge > st.lag {
			f.Time = ev.Window.End.Add(-st.applyingAge).Truncate(time.Second)
		}
		f.setFact("lag", fmtLag(st.lag))
		f.setFact("lag_col", st.lagCol)
		f.setFact("statement", st.applying)
		f.setFact("state", st.applyingState)
		f.setFact("engine", map[bool]string{true: "mysql", false: ""}[st.mysql])
		e := fmt.Sprintf("%s on %s (%s) states %s %s", findSubmatch(sqlClientRE, orWord(st.command, "mysql"))[2], st.where, st.source, st.lagCol, fmtLag(st.lag))
		f.Evidence = append(f.Evidence, e)
		switch {
		case st.applying != "":
			e = fmt.Sprintf("the replica's own applier thread on %s runs %s", st.where, quote(st.applying, 160))
			if st.applyingState != "" {
				e += fmt.Sprintf(" (state %q", st.applyingState)
				if st.applyingAge > 0 {
					e += ", for " + fmtLag(st.applyingAge)
				}
				e += ")"
			}
		default:
			e = fmt.Sprintf("the replica's applier on %s is in state %q", st.where, st.applyingState)
		}
		f.Evidence = append(f.Evidence, e)
		out = append(out, replicaDDLContext(ev, found, f))
	}
	// The server's own log naming the DDL its replication applies, with
	// the lag a metric or another finding shows.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			m := replicaDDLLineRE.FindStringIndex(t.Example)
			if m == nil {
				continue
			}
			inst := orWord(set.Subject, subjectOfSource(set.Source))
			lagging := lagFindingOf(found, inst)
			if seen[inst] || lagging == nil {
				continue
			}
			seen[inst] = true
			f := Finding{Kind: KindReplicaDDL, Subject: lagging.Subject, Object: "database " + lagging.Subject, Time: firstOf(t.FirstSeen, t.FirstIncident),
				Severity: SevCritical, Weight: 0.85, Source: SrcLogs}
			f.setFact("line", t.Example)
			if i := ddlStart(t.Example); i >= 0 {
				f.setFact("statement", strings.TrimSpace(t.Example[i:]))
			}
			f.setFact("lag", orWord(lagging.fact("peak"), lagging.fact("lag_stated")))
			f.Evidence = append(f.Evidence, templateEvidence(*set, t, t.Example))
			f.Evidence = append(f.Evidence, lagging.Evidence...)
			out = append(out, replicaDDLContext(ev, found, f))
			break
		}
	}
	return out
}

// lagFindingOf is a finding of a replica's lag on a database whose name
// the log's subject is part of (or is), nil when none.
func lagFindingOf(found []Finding, inst string) *Finding {
	for i := range found {
		f := &found[i]
		if f.Kind == KindDBBlocked && f.fact("condition") == "replication" && (strings.Contains(f.Subject, inst) || strings.Contains(inst, f.Subject)) {
			return f
		}
	}
	return nil
}

// ddlStart is where a DDL statement begins in a line, -1 if none.
func ddlStart(line string) int {
	loc := regexp.MustCompile(`(?i)\b(ALTER\s+TABLE|CREATE\s+(?:UNIQUE\s+)?INDEX|OPTIMIZE\s+TABLE|DROP\s+INDEX)\b`).FindStringIndex(line)
	if loc == nil {
		return -1
	}
	return loc[0]
}

// replicaDDLContext adds the clients that read from the replica and the
// schema change on the primary that it applies.
func replicaDDLContext(ev *Gathered, found []Finding, f Finding) Finding {
	for _, c := range clientsOfDatabase(ev, f.Subject) {
		if !slices.Contains(f.Related, c.name) {
			f.Related = append(f.Related, c.name)
			f.Evidence = append(f.Evidence, c.why)
		}
	}
	for i := range found {
		if g := &found[i]; g.Kind == KindDBBlocked && g.Subject == f.Subject {
			for _, r := range g.Related {
				f.Related = appendNew(f.Related, r)
			}
		}
	}
	if c := ddlChangeOf(append(slices.Clone(ev.Earlier), ev.Changes...), f); c != nil {
		f.setFact("ddl_change", fmt.Sprintf("%s at %s: %q", orWord(c.Service, c.Kind), ts(c.Timestamp), c.Description))
	}
	f.setFact("affected", strings.Join(f.Related, ","))
	f.Summary = fmt.Sprintf("replica %s lags %s behind its primary while its applier runs a replicated DDL (%s)", f.Subject, orWord(f.fact("lag"), "growing"), truncate(orWord(f.fact("statement"), f.fact("state")), 80))
	return f
}

// ddlChangeOf is the schema change that the replica applies: a DDL change
// before the lag began, naming the statement's table when both say one.
func ddlChangeOf(cs []evidence.Change, f Finding) *evidence.Change {
	var best *evidence.Change
	table := ddlTable(f.fact("statement"))
	for i := range cs {
		c := &cs[i]
		if !matchLine(ddlChangeRE, c.Description) || c.Timestamp.After(f.Time.Add(2*time.Minute)) || f.Time.Sub(c.Timestamp) > 24*time.Hour {
			continue
		}
		if table != "" && !strings.Contains(strings.ToLower(c.Description), table) {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// ddlTable is the table a DDL statement names, lower case.
func ddlTable(stmt string) string {
	m := regexp.MustCompile("(?i)(?:ALTER\\s+TABLE|OPTIMIZE\\s+TABLE|\\bON)\\s+`?([\\w.]+)`?").FindStringSubmatch(stmt)
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

func describeReplicaDDL(h *Hypothesis, sc Scope) string {
	inst := h.Subject
	what := "a schema change"
	if s := h.fact("statement"); s != "" {
		what = quote(s, 160)
	}
	d := fmt.Sprintf("replication lag on the read replica %s", inst)
	if l := h.fact("lag"); l != "" {
		d += fmt.Sprintf(" (%s %s)", orWord(h.fact("lag_col"), "lag"), l)
	}
	d += fmt.Sprintf(": its replication applier is executing the DDL %s replicated from the primary", what)
	if s := h.fact("state"); s != "" {
		d += fmt.Sprintf(" (state %q)", s)
	}
	d += ". A DDL replicates as one event and the replica runs it only after the primary finished it, single-threaded; the other applier workers wait for it, so the replica falls behind by the DDL's whole runtime and reads from it return stale data. Nothing else holds the replica back: its own applier is busy"
	d += h.clause("; the schema change: ", "ddl_change")
	return d
}
