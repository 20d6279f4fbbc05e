package analyst

import (
	"fmt"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// Connections held and never released: the open connection count climbs
// steadily until the pool or the server's limit is reached.
var connLeak = &mechanism{
	kind:     KindConnLeak,
	class:    classCause,
	label:    "connection leak (connections held and never released)",
	metrics:  DetectConnLeak,
	describe: func(h *Hypothesis, sc Scope) string { return describeConnLeak(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Release the leaked connections now: restart %s (or terminate its sessions idle in transaction, e.g. pg_terminate_backend) and set idle_in_transaction_session_timeout / a pool leak-detection threshold", s))
		r.add(finding.PriorityMedium, fmt.Sprintf("Fix the leak in %s: close connections and commit or roll back transactions on every path (errors, aborted streams, early returns)", s))
		r.add(finding.PriorityLow, "Alert on connections idle in transaction and on pool connections in use growing without load")
	},
}

// describeConnLeak tells a connection leak: held connections climbing
// with flat load, and what the database does when they run out.
func describeConnLeak(h *Hypothesis) string {
	top := h.top()
	what := "database connections in use"
	if top.fact("idle_in_transaction") != "" {
		what = "database connections idle in transaction"
	}
	d := fmt.Sprintf("connection leak in %s: %s climb steadily from %s to %s since %s", h.Subject, what, top.fact("low"), top.fact("peak"), orWord(top.fact("since"), "the onset"))
	if r := top.fact("request_ratio"); r != "" {
		d += fmt.Sprintf(" while the request rate stays flat (×%s), so it is not a load surge", r)
	}
	if m := top.fact("pool_max"); m != "" {
		d += fmt.Sprintf(" and reach the connection pool's maximum (max_open %s per pod): the pool is exhausted, so %s's other requests wait for a connection and time out", m, h.Subject)
		d += ": connections are taken and not released (a transaction left open, a connection not closed on an error path)"
	} else {
		d += ": connections are taken and not released (a transaction left open, a connection not closed on an error path) until the pool or the database's max_connections runs out"
	}
	for _, f := range h.Support {
		if f.Kind == KindDatabase {
			if l := f.fact("line"); l != "" {
				d += " — " + quote(ReadableLine(l), 200)
				break
			}
		}
	}
	return d
}

// DetectConnLeak finds connection leaks: the connections a service holds
// (its pool's connections in use, the database's sessions idle in
// transaction) climbing steadily while its request rate stays flat. Held
// connections that grow without load are not returned to the pool (a
// transaction left open, a connection not closed on an error path) and
// end at max_connections or pool exhaustion.
func DetectConnLeak(sets []MetricSet, w Window) []Finding {
	type cand struct {
		subject, ns, metric, state string
		c                          Climb
		db                         bool
	}
	var cands []cand
	for _, ms := range sets {
		if !matchLine(leakMetricRE, ms.Name) || strings.Contains(strings.ToLower(ms.Name), "max") {
			continue
		}
		isPG := strings.Contains(strings.ToLower(ms.Name), "pg_stat_activity")
		groups := map[string][]evidence.Series{}
		nss := map[string]string{}
		var order []string
		for _, s := range ms.Series {
			state := s.Labels["state"]
			// Of a database's sessions, those idle in a transaction are
			// the ones a leak holds; active and idle ones come and go.
			if isPG && !strings.HasPrefix(strings.ToLower(state), "idle in transaction") {
				continue
			}
			subj := SubjectOfLabels(s.Labels)
			if isPG {
				subj = orWord(DependencyName(s.Labels["instance"]), orWord(s.Labels["datname"], "database"))
			}
			if subj == "" {
				continue
			}
			if _, ok := groups[subj]; !ok {
				order = append(order, subj)
			}
			groups[subj] = append(groups[subj], s)
			nss[subj] = s.Labels["namespace"]
		}
		for _, subj := range order {
			c, ok := SteadyClimb(sumSeries(groups[subj], w), 10)
			if !ok {
				continue
			}
			st := ""
			if isPG {
				st = "idle in transaction"
			}
			cands = append(cands, cand{subj, nss[subj], ms.Name, st, c, isPG})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	var out []Finding
	var dbs []cand
	for _, c := range cands {
		if c.db {
			dbs = append(dbs, c)
		}
	}
	for _, c := range cands {
		if c.db && len(dbs) < len(cands) {
			continue // told as evidence of the services' leaks
		}
		weight := 0.75
		ratio, ok := requestRatio(sets, c.subject, c.c, w)
		switch {
		case ok && ratio >= 2:
			continue // load rose with it: not a leak
		case ok && ratio < 1.5:
			weight = 0.9
		}
		// The held connections reached the pool's own cap: the pool is
		// exhausted, and its other requests wait for a connection that
		// never comes back (the timeouts its callers see follow).
		capped := ""
		if !c.db {
			if per, total, ok := poolCapOf(sets, c.subject, w); ok && c.c.Peak >= total-0.5 {
				capped = per
				weight = max(weight, 0.9)
			}
		}
		what := "database connections in use"
		if c.state != "" {
			what = "database connections idle in transaction"
		}
		f := Finding{Kind: KindConnLeak, Subject: c.subject, Object: SrcMetrics + " " + c.metric, Namespace: c.ns, Time: c.c.Start.Add(time.Minute),
			Severity: SevCritical, Weight: weight, Source: SrcMetrics}
		f.Summary = fmt.Sprintf("connection leak in %s: %s climb steadily from %.0f to %.0f (%s to %s)", c.subject, what, c.c.Low, c.c.Peak, hm(c.c.Start), hm(c.c.End))
		f.Evidence = []string{fmt.Sprintf("%s of %s climbed steadily from %.0f at %s to %.0f at %s", c.metric, c.subject, c.c.Low, ts(c.c.Start), c.c.Peak, ts(c.c.End))}
		if ok {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the request rate of %s stayed flat meanwhile (×%.1f): the connections are held, not used by more load", c.subject, ratio))
		}
		for _, d := range dbs {
			if d.subject == c.subject {
				continue
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s{state=\"idle in transaction\"} of %s climbed steadily from %.0f at %s to %.0f at %s", d.metric, d.subject, d.c.Low, ts(d.c.Start), d.c.Peak, ts(d.c.End)))
			f.Related = append(f.Related, d.subject)
			f.setFact("idle_in_transaction", fmt.Sprintf("%.0f", d.c.Peak))
			f.Time = earliest(f.Time, d.c.Start.Add(time.Minute))
		}
		if c.state != "" {
			f.setFact("idle_in_transaction", fmt.Sprintf("%.0f", c.c.Peak))
		}
		if capped != "" {
			f.setFact("pool_max", capped)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the held connections of %s reached its pool's maximum (%s per pod): the pool is exhausted", c.subject, capped))
		}
		f.setFact("metric", c.metric)
		f.setFact("low", fmt.Sprintf("%.0f", c.c.Low))
		f.setFact("peak", fmt.Sprintf("%.0f", c.c.Peak))
		f.setFact("since", ts(c.c.Start))
		if ok {
			f.setFact("request_ratio", fmt.Sprintf("%.1f", ratio))
		}
		out = append(out, f)
	}
	return out
}

// poolCapOf is the maximum of a service's connection pool its gauges
// state (HikariCP's max, database/sql's max_open, pgxpool's max_conns):
// per pod (the largest any pod states) and summed over its pods at the
// latest sample, to set beside its connections in use summed the same way.
func poolCapOf(sets []MetricSet, subject string, w Window) (string, float64, bool) {
	var ss []evidence.Series
	for _, ms := range sets {
		if !matchLine(poolMaxMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if SubjectOfLabels(s.Labels) == subject {
				ss = append(ss, s)
			}
		}
	}
	pts := sumSeries(ss, w)
	if len(pts) == 0 || pts[len(pts)-1].V <= 0 {
		return "", 0, false
	}
	per := 0.0
	for _, s := range ss {
		for _, p := range s.Points {
			per = max(per, p.V)
		}
	}
	return fmt.Sprintf("%.0f", per), pts[len(pts)-1].V, true
}
