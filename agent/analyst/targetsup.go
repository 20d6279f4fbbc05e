package analyst

import (
	"sort"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// targetsUpByService is the share of each service's scrape targets that
// are up, over time: the mean of its up series at each instant. A
// rollout replaces every target with new pods whose series have no
// baseline of their own; if the new targets cannot be scraped (a moved
// metrics port, a blocked scrape), no single series fell, but the
// service's targets went from all up to all down. The share goes first,
// before the series it is made of, so that its evidence names the job.
func targetsUpByService(ss []evidence.Series) []evidence.Series {
	type agg struct {
		labels evidence.Labels
		sum    map[time.Time]float64
		n      map[time.Time]int
		parts  int
	}
	bySub := map[string]*agg{}
	var order []string
	for _, s := range ss {
		sub := SubjectOfLabels(s.Labels)
		if sub == "" {
			continue
		}
		a := bySub[sub]
		if a == nil {
			a = &agg{labels: copyLabels(s.Labels), sum: map[time.Time]float64{}, n: map[time.Time]int{}}
			bySub[sub] = a
			order = append(order, sub)
		} else {
			keepSharedLabels(a.labels, s.Labels)
		}
		a.parts++
		for _, p := range s.Points {
			a.sum[p.T] += p.V
			a.n[p.T]++
		}
	}
	var out []evidence.Series
	for _, sub := range order {
		a := bySub[sub]
		if a.parts < 2 {
			continue // one series is judged as itself
		}
		if SubjectOfLabels(a.labels) != sub {
			a.labels["service"] = sub
		}
		s := evidence.Series{Labels: a.labels}
		for t, v := range a.sum {
			s.Points = append(s.Points, evidence.Point{T: t, V: v / float64(a.n[t])})
		}
		sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].T.Before(s.Points[j].T) })
		out = append(out, s)
	}
	return append(out, ss...)
}
