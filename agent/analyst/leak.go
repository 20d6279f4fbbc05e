package analyst

import (
	"math"
	"regexp"
	"sort"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// leakMetricRE matches metrics of connections a client holds: a pool's
// connections in use or checked out, a database's sessions.
var leakMetricRE = regexp.MustCompile(`(?i)connections_in_use|conns_in_use|connections_(active|used|busy|checked_out)|pool.*(active|in_?use|used|busy|checked_?out|borrowed)|hikaricp_connections_active|db_client_connections_usage|pgxpool_acquired_conns|pg_stat_activity`)

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
