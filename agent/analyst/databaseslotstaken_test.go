package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDBSlotsTaken(t *testing.T) {
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: start.Add(-time.Hour), Start: start, End: start.Add(time.Hour)}
	// conns is a client's session count of one state: before until at,
	// after from then.
	conns := func(app, user, state string, before, after float64, at time.Duration) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"application_name": app, "usename": user, "state": state, "datname": "billing", "server": "pg-main.internal:5432"}}
		for ts := w.BaselineStart; !ts.After(w.End); ts = ts.Add(time.Minute) {
			v := before
			if !ts.Before(start.Add(at)) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: ts, V: v})
		}
		return s
	}
	pgRefused := Finding{Kind: KindDatabase, Subject: "postgresql", Facts: map[string]string{"caller": "orders-api",
		"line": "2026-03-02 09:12:01.118 UTC [4411] orders@billing FATAL:  remaining connection slots are reserved for non-replication superuser connections"}}
	mysqlRefused := Finding{Kind: KindDatabase, Subject: "mysql", Facts: map[string]string{"caller": "orders-api",
		"line": "com.mysql.cj.jdbc.exceptions.CommunicationsException: Data source rejected establishment of connection, message from server: \"Too many connections\""}}
	lockWait := Finding{Kind: KindDatabase, Subject: "postgresql", Facts: map[string]string{"caller": "orders-api",
		"line": "ERROR: canceling statement due to lock timeout"}}
	logs := []LogSet{{Subject: "ledger-export", Templates: []analysis.LogTemplate{
		{Example: `time=2026-03-02T09:09:58Z level=INFO msg="starting ledger-export"`},
		{Example: `2026-03-02 09:10:01.022  INFO 1 --- [main] com.zaxxer.hikari.HikariDataSource : HikariPool-1 - configuration: maximumPoolSize=50 minimumIdle=50`}}}}
	changes := []evidence.Change{{Service: "ledger-export", Kind: "deploy", Description: "ledger-export 2.0.0", Timestamp: start.Add(9 * time.Minute)}}
	cases := []struct {
		name    string
		series  []evidence.Series
		found   []Finding
		subject string
		want    []string
	}{
		{"new client opens many idle connections", []evidence.Series{
			conns("ledger_export", "ledger", "idle", 0, 150, 10*time.Minute),
			conns("orders-api", "orders", "idle", 20, 21, 0), conns("orders-api", "orders", "active", 5, 7, 0),
			conns("metabase", "reporting", "idle", 10, 10, 0)},
			[]Finding{pgRefused}, "ledger-export", []string{"0 to 150", "refused: orders-api", "maximumPoolSize=50", "orders-api 25→28"}},
		{"mysql refusal", []evidence.Series{
			conns("ledger-export", "ledger", "", 2, 120, 10*time.Minute), conns("orders-api", "orders", "", 30, 30, 0)},
			[]Finding{mysqlRefused}, "ledger-export", []string{"2 to 120"}},
		{"no refusal: a lock timeout", []evidence.Series{
			conns("ledger-export", "ledger", "idle", 0, 150, 10*time.Minute), conns("orders-api", "orders", "idle", 20, 21, 0)},
			[]Finding{lockWait}, "", nil},
		{"everyone grew: no single taker", []evidence.Series{
			conns("ledger-export", "ledger", "idle", 0, 60, 10*time.Minute), conns("orders-api", "orders", "idle", 20, 70, 10*time.Minute)},
			[]Finding{pgRefused}, "", nil},
		{"one client only", []evidence.Series{conns("orders-api", "orders", "idle", 20, 90, 10*time.Minute)},
			[]Finding{pgRefused}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: []MetricSet{{Name: "pg_stat_activity_count", Series: c.series}}, Logs: logs, Changes: changes, Window: w}
			fs := detectDBSlotsTaken(ev, c.found)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("want none, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("want one finding on %s, got %+v", c.subject, fs)
			}
			h := &Hypothesis{Kind: KindDBSlotsTaken, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := dbSlotsTaken.describe(h, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}

func TestCalibrateConnectionSlots(t *testing.T) {
	refused := &Finding{Kind: KindDatabase, Subject: "postgresql", Source: SrcLogs, Weight: 0.85,
		Facts: map[string]string{"line": "FATAL:  remaining connection slots are reserved for non-replication superuser connections"}}
	lock := &Finding{Kind: KindDatabase, Subject: "postgresql", Source: SrcLogs, Weight: 0.85,
		Facts: map[string]string{"line": "ERROR:  canceling statement due to lock timeout"}}
	full := answerShape{timeline: 4, evidence: 5}
	cases := []struct {
		name string
		h    *Hypothesis
		want float64
	}{
		{"refused for slots, nobody named", &Hypothesis{Kind: KindDatabase, Subject: "postgresql", Score: 0.8, Primary: []*Finding{refused}}, 70},
		{"refused for slots after a change lowered the limit", &Hypothesis{Kind: KindDatabase, Subject: "postgresql", Score: 0.8, Primary: []*Finding{refused},
			Trigger: &Finding{Kind: KindConfigChange, Subject: "postgresql", Facts: map[string]string{"description": "max_connections 500 -> 100"}}}, 85},
		{"a lock timeout is not a slot limit", &Hypothesis{Kind: KindDatabase, Subject: "postgresql", Score: 0.8, Primary: []*Finding{lock}}, 85},
	}
	for _, c := range cases {
		if got := calibrate(&Analysis{Hypotheses: []*Hypothesis{c.h}}, 85, full); got != c.want {
			t.Errorf("%s: confidence %v, want %v", c.name, got, c.want)
		}
	}
}
