package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNoisyNeighbour checks that a node's CPU saturating with one
// container's CPU rising far above the others' names that container's
// workload, with the pods sharing the node as its victims; a node busy
// with every pod's load names nobody.
func TestNoisyNeighbour(t *testing.T) {
	t0 := time.Date(2026, 11, 5, 1, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	onset := t0.Add(22 * time.Minute)
	series := func(labels evidence.Labels, before, after float64, from time.Time) evidence.Series {
		s := evidence.Series{Labels: labels}
		for m := -60; m < 60; m++ {
			at := t0.Add(time.Duration(m) * time.Minute)
			if at.Before(from) {
				continue
			}
			v := before
			if !at.Before(onset) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return s
	}
	node := "ip-10-40-3-112.eu-west-1.compute.internal"
	nodeCPU := MetricSet{Name: "instance:node_cpu_utilisation:rate5m", Class: MetricSaturation, Series: []evidence.Series{
		series(evidence.Labels{"instance": node, "job": "node-exporter"}, 0.31, 0.99, w.BaselineStart),
		series(evidence.Labels{"instance": "ip-10-40-1-57.eu-west-1.compute.internal", "job": "node-exporter"}, 0.30, 0.33, w.BaselineStart),
	}}
	pod := func(name string, before, after float64, from time.Time) evidence.Series {
		return series(evidence.Labels{"pod": name, "namespace": "catalog", "node": node}, before, after, from)
	}
	cases := []struct {
		name string
		pods []evidence.Series
		want string
	}{
		{"a CronJob's pod takes the node", []evidence.Series{
			pod("catalog-feed-export-29897400-7xk2p", 0, 7.3, onset),
			pod("search-api-5f7b8c9d6-4kxjq", 0.6, 0.7, w.BaselineStart),
			pod("product-service-6c9d8b7f5-j4ptv", 0.2, 0.2, w.BaselineStart),
		}, "catalog-feed-export"},
		{"every pod busier", []evidence.Series{
			pod("search-api-5f7b8c9d6-4kxjq", 1.0, 3.0, w.BaselineStart),
			pod("product-service-6c9d8b7f5-j4ptv", 1.0, 2.6, w.BaselineStart),
		}, ""},
	}
	for _, c := range cases {
		cpu := MetricSet{Name: "container_cpu_usage_seconds_total", Class: MetricSaturation, Series: c.pods}
		fs := detectNoisyNeighbour(&Gathered{Metrics: []MetricSet{nodeCPU, cpu}, Window: w}, nil)
		got := ""
		if len(fs) == 1 {
			got = fs[0].Subject
		}
		if got != c.want || len(fs) > 1 {
			t.Errorf("%s: findings %+v, want %q", c.name, fs, c.want)
			continue
		}
		if got != "" {
			f := fs[0]
			if f.fact("batch") != "true" || !f.relates("search-api") || !f.relates(node) || !f.Time.Equal(onset) {
				t.Errorf("%s: finding %+v", c.name, f)
			}
		}
	}
}
