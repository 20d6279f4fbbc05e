package analyst

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// Small pieces mechanisms share when they relate findings and describe a
// cause: a related hook that never takes a change (changes are triggers,
// chosen by fitsChange), the clauses a description adds only when a
// fact was read, and the clients a failure's logs name.

// exceptChanges is a related hook that takes no change: changes are
// weighed as triggers, never as consequences of a cause.
func exceptChanges(related func(h *Hypothesis, f *Finding) bool) func(h *Hypothesis, f *Finding) bool {
	return func(h *Hypothesis, f *Finding) bool {
		return infoOf(f.Kind).class != classChange && related(h, f)
	}
}

// exceptOwnAndChanges is a related hook that takes neither a finding of
// kind own nor a change, and otherwise asks related.
func exceptOwnAndChanges(own Kind, related func(h *Hypothesis, f *Finding) bool) func(h *Hypothesis, f *Finding) bool {
	return exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind != own && related(h, f)
	})
}

// kindsOnSubject is a related hook that takes a finding of one of kinds
// on h's own subject (in any case).
func kindsOnSubject(kinds ...Kind) func(h *Hypothesis, f *Finding) bool {
	return func(h *Hypothesis, f *Finding) bool {
		return slices.Contains(kinds, f.Kind) && strings.EqualFold(f.Subject, h.Subject)
	}
}

// relatedToTop is a related hook that takes a finding the top finding
// names among its related subjects, unless it is of kind own or a change.
func relatedToTop(own Kind) func(h *Hypothesis, f *Finding) bool {
	return func(h *Hypothesis, f *Finding) bool { return namedByTop(h, f, own) }
}

// namedByTop says whether f, neither of kind own nor a change, has a
// subject the top finding of h names among its related subjects.
func namedByTop(h *Hypothesis, f *Finding, own Kind) bool {
	return f.Kind != own && infoOf(f.Kind).class != classChange && slices.Contains(h.top().Related, f.Subject)
}

// clause is prefix and h's fact k, or nothing when h has no such fact.
func (h *Hypothesis) clause(prefix, k string) string {
	return h.wrapped(prefix, k, "")
}

// wrapped is h's fact k between prefix and suffix, or nothing when h has
// no such fact.
func (h *Hypothesis) wrapped(prefix, k, suffix string) string {
	if v := h.fact(k); v != "" {
		return prefix + v + suffix
	}
	return ""
}

// quoteClause is prefix and h's fact k quoted as a readable line (at
// most n bytes), or nothing when h has no such fact.
func (h *Hypothesis) quoteClause(prefix, k string, n int) string {
	if l := h.fact(k); l != "" {
		return prefix + quote(ReadableLine(l), n)
	}
	return ""
}

// lineClause is h's quoted log line in parentheses (at most n bytes), or
// nothing when h quotes no line.
func (h *Hypothesis) lineClause(n int) string {
	if l := h.fact("line"); l != "" {
		return " (" + quote(ReadableLine(l), n) + ")"
	}
	return ""
}

// triggerClause words h's trigger after lead ("; <lead> the change of
// <subject> at <time>: <its description, at most n bytes>"), or nothing
// when h has none.
func (h *Hypothesis) triggerClause(lead string, n int) string {
	if t := h.Trigger; t != nil {
		return fmt.Sprintf("; %s the change of %s at %s: %s", lead, t.Subject, hm(t.Time), quote(t.fact("description"), n))
	}
	return ""
}

// changeClause is triggerClause or, when h has no trigger, h's fact
// "change" (a change the detector itself tied to the cause) after lead.
func (h *Hypothesis) changeClause(lead string, n int) string {
	if h.Trigger != nil {
		return h.triggerClause(lead, n)
	}
	return h.clause("; "+lead+" ", "change")
}

// keyed keeps one state per key (a service, a release), made on first
// use, with the keys in the order they first came.
type keyed[T any] struct {
	m     map[string]*T
	order []string
}

// get is key's state, made empty on first use.
func (k *keyed[T]) get(key string) *T {
	if k.m == nil {
		k.m = map[string]*T{}
	}
	v := k.m[key]
	if v == nil {
		v = new(T)
		k.m[key] = v
		k.order = append(k.order, key)
	}
	return v
}

// logClients are the workloads whose own logs show a failure, each once
// in the order first met, with the evidence of its first such line.
type logClients struct {
	names, evidence []string
}

// add records set's workload with line as its evidence unless it is
// already recorded, and reports whether it was new.
func (c *logClients) add(set *LogSet, t analysis.LogTemplate, line string) bool {
	if slices.Contains(c.names, set.Subject) {
		return false
	}
	c.names = append(c.names, set.Subject)
	c.evidence = append(c.evidence, templateEvidence(*set, t, line))
	return true
}

// pgRefusal tallies the log lines of a PostgreSQL refusal: a line of the
// server's own log (a host's log, or a line with the server's prefix)
// names its host and gives its evidence; any other line is a client's.
type pgRefusal struct {
	first          time.Time
	lines          int
	host           string // the server's, from its own log
	example        string // the first client's line
	serverEvidence string
	clients        logClients
}

// add counts x and reports whether it is a line of the server's own log.
func (r *pgRefusal) add(x templateMatch) bool {
	at := firstOf(x.t.FirstIncident, x.t.FirstSeen)
	if r.first.IsZero() || at.Before(r.first) {
		r.first = at
	}
	r.lines += x.t.Incident
	if x.set.Host || matchLine(pgServerLineRE, x.line) {
		r.host = orWord(r.host, serverOfLog(x.set))
		if r.serverEvidence == "" {
			r.serverEvidence = templateEvidence(*x.set, x.t, x.line)
		}
		return true
	}
	r.clients.add(x.set, x.t, x.line)
	if r.example == "" {
		r.example = x.line
	}
	return false
}

// evidence adds the server's line, then the clients' lines, to f.
func (r *pgRefusal) evidence(f *Finding) {
	if r.serverEvidence != "" {
		f.Evidence = append(f.Evidence, r.serverEvidence)
	}
	f.Evidence = append(f.Evidence, r.clients.evidence...)
}

// relate makes the clients related to f and its "clients" fact.
func (c *logClients) relate(f *Finding) {
	for _, n := range c.names {
		f.Related = appendNew(f.Related, n)
	}
	f.setFact("clients", strings.Join(c.names, ", "))
}
