package analyst

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// leakMetricRE matches metrics of connections a client holds: a pool's
// connections in use or checked out, a database's sessions.
var leakMetricRE = regexp.MustCompile(`(?i)connections_in_use|conns_in_use|connections_(active|used|busy|checked_out)|pool.*(active|in_?use|used|busy|checked_?out|borrowed)|hikaricp_connections_active|db_client_connections_usage|pg_stat_activity`)

// Climb is a steady rise of a series: from Low at Start to Peak at End,
// rising in most steps and in no single jump.
type Climb struct {
	Low, Peak  float64
	Start, End time.Time
}

// SteadyClimb finds the steady rise that ends at a series' peak: at least
// minRise in absolute terms and 3× its starting level, over 20 minutes or
// more, rising (or flat) in at least 80% of its steps, with no single
// step carrying more than 40% of the rise (a step is a change of level,
// not a leak).
func SteadyClimb(pts []evidence.Point, minRise float64) (Climb, bool) {
	if len(pts) < 6 {
		return Climb{}, false
	}
	pi := 0
	for i, p := range pts {
		if p.V >= pts[pi].V {
			pi = i
		}
	}
	peak := pts[pi].V
	lo := math.Inf(1)
	for _, p := range pts[:pi+1] {
		lo = math.Min(lo, p.V)
	}
	li := 0
	for i := pi; i >= 0; i-- {
		if pts[i].V <= lo+0.1*(peak-lo) {
			li = i
			break
		}
	}
	rise := peak - lo
	if rise < minRise || peak < 3*math.Max(lo, 1) || pi-li < 5 || pts[pi].T.Sub(pts[li].T) < 20*time.Minute {
		return Climb{}, false
	}
	up, steps := 0, 0
	for i := li + 1; i <= pi; i++ {
		d := pts[i].V - pts[i-1].V
		steps++
		if d >= 0 {
			up++
		}
		if d > 0.4*rise {
			return Climb{}, false
		}
	}
	if float64(up) < 0.8*float64(steps) {
		return Climb{}, false
	}
	return Climb{Low: lo, Peak: peak, Start: pts[li].T, End: pts[pi].T}, true
}

// sumSeries adds series point by point (by timestamp), in time order.
func sumSeries(ss []evidence.Series, w Window) []evidence.Point {
	by := map[time.Time]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			if !w.BaselineStart.IsZero() && p.T.Before(w.BaselineStart) || !w.End.IsZero() && p.T.After(w.End) {
				continue
			}
			by[p.T] += p.V
		}
	}
	out := make([]evidence.Point, 0, len(by))
	for t, v := range by {
		out = append(out, evidence.Point{T: t, V: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].T.Before(out[j].T) })
	return out
}

// requestRatio is how much a subject's request rate changed over a
// climb: its mean over the last quarter of the climb against its mean
// before the climb; ok is false when there is no request metric.
func requestRatio(sets []MetricSet, subject string, c Climb, w Window) (float64, bool) {
	var ss []evidence.Series
	for _, ms := range sets {
		if ms.Class != MetricRequests {
			continue
		}
		for _, s := range ms.Series {
			if SubjectOfLabels(s.Labels) == subject {
				ss = append(ss, s)
			}
		}
	}
	if len(ss) == 0 {
		return 0, false
	}
	pts := sumSeries(ss, w)
	late := c.End.Add(-c.End.Sub(c.Start) / 4)
	var b, l []float64
	for _, p := range pts {
		switch {
		case !p.T.After(c.Start):
			b = append(b, p.V)
		case !p.T.Before(late) && !p.T.After(c.End):
			l = append(l, p.V)
		}
	}
	if len(b) == 0 || len(l) == 0 {
		// No traffic before the climb: compare the climb's start.
		if len(l) == 0 {
			return 0, false
		}
		for _, p := range pts {
			if !p.T.Before(c.Start) && p.T.Before(late) {
				b = append(b, p.V)
			}
		}
		if len(b) == 0 {
			return 0, false
		}
	}
	mb, ml := mean(b), mean(l)
	if mb <= 0 {
		return 0, false
	}
	return ml / mb, true
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
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
		if !leakMetricRE.MatchString(ms.Name) || strings.Contains(strings.ToLower(ms.Name), "max") {
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
