package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Held connections that climb to the pool's own maximum (database/sql's
// max_open, HikariCP's max, pgxpool's max_conns) exhaust the pool: the
// leak is certain and its description says so; a climb that stays under
// the cap says nothing of it.
func TestConnLeakReachesPoolCap(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0, Start: t0.Add(20 * time.Minute), End: t0.Add(60 * time.Minute)}
	flat := MetricSet{Name: "http_requests_total", Class: MetricRequests, Series: []evidence.Series{{Labels: evidence.Labels{"service": "ledger", "namespace": "fin"}, Points: pts(t0, 5*time.Minute, 100, 101, 99, 100, 102, 100, 98, 101, 100, 99, 100, 101, 100)}}}
	climb := []float64{2, 2, 3, 5, 7, 9, 11, 13, 15, 17, 19, 20, 20}
	under := []float64{2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	cases := []struct {
		name, inUse, max string
		labels           func(pod string) evidence.Labels
		vals             []float64
		capped           bool
	}{
		{"database/sql stats, two pods", "go_sql_stats_connections_in_use", "go_sql_stats_connections_max_open",
			func(pod string) evidence.Labels {
				return evidence.Labels{"pod": pod, "namespace": "fin", "db_name": "ledger"}
			}, climb, true},
		{"Micrometer HikariCP", "hikaricp_connections_active", "hikaricp_connections_max",
			func(pod string) evidence.Labels {
				return evidence.Labels{"pod": pod, "namespace": "fin", "pool": "HikariPool-1"}
			}, climb, true},
		{"pgxpool", "pgxpool_acquired_conns", "pgxpool_max_conns",
			func(pod string) evidence.Labels { return evidence.Labels{"pod": pod, "namespace": "fin"} }, climb, true},
		{"under the cap", "go_sql_stats_connections_in_use", "go_sql_stats_connections_max_open",
			func(pod string) evidence.Labels { return evidence.Labels{"pod": pod, "namespace": "fin"} }, under, false},
	}
	for _, c := range cases {
		pods := []string{"ledger-7d9f8b6c5d-abcde", "ledger-7d9f8b6c5d-fghij"}
		in := MetricSet{Name: c.inUse, Class: MetricSaturation}
		mx := MetricSet{Name: c.max, Class: MetricSaturation}
		for _, p := range pods {
			in.Series = append(in.Series, evidence.Series{Labels: c.labels(p), Points: pts(t0, 5*time.Minute, c.vals...)})
			mx.Series = append(mx.Series, evidence.Series{Labels: c.labels(p), Points: pts(t0, 5*time.Minute, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20)})
		}
		fs := DetectConnLeak([]MetricSet{in, mx, flat}, w)
		if len(fs) != 1 {
			t.Errorf("%s: got %d findings, want one leak", c.name, len(fs))
			continue
		}
		if got := fs[0].fact("pool_max") != ""; got != c.capped {
			t.Errorf("%s: pool cap reached = %v, want %v", c.name, got, c.capped)
		}
		d := describeConnLeak(&Hypothesis{Kind: KindConnLeak, Subject: "ledger", Primary: []*Finding{&fs[0]}})
		if c.capped && (!strings.Contains(d, "max_open 20 per pod") || !strings.Contains(d, "pool is exhausted") || fs[0].Weight < 0.9) {
			t.Errorf("%s: description %q (weight %.2f)", c.name, d, fs[0].Weight)
		}
		if !c.capped && strings.Contains(d, "pool is exhausted") {
			t.Errorf("%s: description %q claims an exhausted pool", c.name, d)
		}
	}
}
