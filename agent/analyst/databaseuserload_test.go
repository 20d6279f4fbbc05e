package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDetectDBUserLoad names the database user whose active sessions
// jumped first on a shared server, after its job, and never the
// question's own service whose sessions pile up behind it.
func TestDetectDBUserLoad(t *testing.T) {
	series := func(user string, before, after float64, jumpAt time.Duration) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": "pg_stat_activity_count", "datname": "merchants", "server": "pg-shared-01.db.internal:5432", "state": "active", "usename": user}}
		for at := win.BaselineStart; !at.After(win.End); at = at.Add(2 * time.Minute) {
			v := before
			if !at.Before(win.Start.Add(jumpAt)) && at.Before(win.Start.Add(jumpAt+40*time.Minute)) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: at, V: v})
		}
		return s
	}
	idle := evidence.Series{Labels: evidence.Labels{"__name__": "pg_stat_activity_count", "server": "pg-shared-01.db.internal:5432", "state": "idle", "usename": "settlement_batch"}}
	change := evidence.Change{Timestamp: win.Start.Add(-72 * time.Hour), Service: "settlement-reconcile", Kind: "config", Description: "settlement-reconcile: RECONCILE_MODE incremental -> full_history"}
	sc := Scope{Service: "merchant-api", Message: "merchant-api p99 jumps every night around 02:00"}
	for _, c := range []struct {
		name    string
		series  []evidence.Series
		subject string // "" for none
	}{
		{"the batch user jumps, the service's sessions pile up behind it", []evidence.Series{series("merchant_api", 3, 29, 15*time.Minute), series("settlement_batch", 0, 9, 15*time.Minute), idle}, "settlement-reconcile"},
		{"only the service's own sessions rise", []evidence.Series{series("merchant_api", 3, 29, 15*time.Minute), series("settlement_batch", 0, 0, 0)}, ""},
		{"one user: the server is not shared", []evidence.Series{series("settlement_batch", 0, 9, 15*time.Minute)}, ""},
		{"a rise of one session is no load", []evidence.Series{series("merchant_api", 3, 3, 0), series("settlement_batch", 0, 1, 15*time.Minute)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: []MetricSet{{Name: "pg_stat_activity_count", Origin: SrcMetrics, Series: c.series}}, Earlier: []evidence.Change{change}, Window: win, Scope: sc}
			fs := detectDBUserLoad(ev, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindDBUserLoad, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, sc, "settlement_batch", "pg-shared-01.db.internal", "from 0 to 9", "full_history")
			if !dbUserLoad.related(h, &Finding{Kind: KindLatency, Subject: "merchant-api"}) {
				t.Error("the service's latency is not related")
			}
		})
	}
}
