package analyst

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// alertPayload is an Alertmanager webhook payload with one alert.
func alertPayload(name, status, metric, pod string, starts, ends time.Time) string {
	end := "0001-01-01T00:00:00Z"
	if !ends.IsZero() {
		end = ends.Format(time.RFC3339)
	}
	return fmt.Sprintf(`{"receiver":"oncall","status":%q,"alerts":[{"status":%q,
 "labels":{"alertname":%q,"namespace":"shop","pod":%q,"service":"orders-db","severity":"page"},
 "annotations":{"summary":"%s above threshold for 5 minutes"},
 "startsAt":%q,"endsAt":%q,
 "generatorURL":"http://prometheus.monitoring:9090/graph?g0.expr=%s%%7Bservice%%3D%%22orders-db%%22%%7D+%%3E+30",
 "fingerprint":"a1b2c3d4e5f60718"}],"groupLabels":{"alertname":%q},"version":"4"}`,
		status, status, name, pod, metric, starts.Format(time.RFC3339), end, metric, name)
}

// openMetrics is a gauge sampled each minute from t0 for n minutes: low,
// then rising to a peak and falling back from rise to rise+30m (stuck
// high afterwards when recovers is false).
func openMetrics(metric, pod string, t0 time.Time, n int, rise time.Time, recovers bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# HELP %s a gauge\n# TYPE %s gauge\n", metric, metric)
	for i := range n {
		t := t0.Add(time.Duration(i) * time.Minute)
		v := 0.2
		switch d := t.Sub(rise).Minutes(); {
		case d >= 0 && d < 15:
			v += 3 * d
		case d >= 15 && d < 20:
			v += 45 - 9*(d-15)
		case d >= 20 && !recovers:
			v = 50
		}
		fmt.Fprintf(&b, "%s{namespace=\"shop\",pod=%q,service=\"orders-db\"} %.3f %d\n", metric, pod, v, t.Unix())
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// TestResolvedAlert: a resolved alert whose series rose and came back is
// explained by the job whose log began just before the rise; an alert
// still firing, a series still high, or nothing coinciding is not.
func TestResolvedAlert(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	now := t0.Add(8 * time.Hour)
	rise := t0.Add(3*time.Hour + 5*time.Minute)
	job := func(at time.Time) string {
		hm := func(d time.Duration) string { return at.Add(d).Format(time.RFC3339) }
		return fmt.Sprintf(`%s batch-02 orders-purge[7710]: starting nightly purge target=orders-db.shop.svc:5432
%s batch-02 orders-purge[7710]: order_lines: 9120442 rows older than cutoff
%s batch-02 orders-purge[7710]: order_lines: DELETE in one transaction
%s batch-02 orders-purge[7710]: order_lines: deleted 9120442 rows in 900s
%s batch-02 orders-purge[7710]: done, exit 0
`, hm(0), hm(time.Minute), hm(3*time.Minute), hm(18*time.Minute), hm(21*time.Minute))
	}
	cases := []struct {
		name, alert, metric string
		status              string
		ends                time.Time
		recovers            bool
		jobAt               time.Time
		want                []string // nil: not explained
	}{
		{"replication lag from a nightly delete", "PostgresReplicationLagHigh", "pg_replication_lag", "resolved", rise.Add(25 * time.Minute), true, rise.Add(-5 * time.Minute),
			[]string{"orders-db is healthy now", "PostgresReplicationLagHigh fired 03:11–03:30 UTC and resolved", "pg_replication_lag rose from 0.2 to", "orders-purge ran from 03:00 UTC", "DELETE in one transaction"}},
		{"another alert, another series", "DiskIOSaturated", "node_disk_io_time_weighted_seconds", "resolved", rise.Add(25 * time.Minute), true, rise.Add(-5 * time.Minute),
			[]string{"DiskIOSaturated fired", "node_disk_io_time_weighted_seconds rose", "orders-purge ran"}},
		{"still firing", "PostgresReplicationLagHigh", "pg_replication_lag", "firing", time.Time{}, true, rise.Add(-5 * time.Minute), nil},
		{"the series is still high", "PostgresReplicationLagHigh", "pg_replication_lag", "resolved", rise.Add(25 * time.Minute), false, rise.Add(-5 * time.Minute), nil},
		{"the job ran hours before", "PostgresReplicationLagHigh", "pg_replication_lag", "resolved", rise.Add(25 * time.Minute), true, rise.Add(-3 * time.Hour), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"bundle.json":           {Data: []byte(`{"captured_at":"` + now.Format(time.RFC3339) + `"}`)},
				"alerts.json":           {Data: []byte(alertPayload(c.alert, c.status, c.metric, "orders-db-1", rise.Add(6*time.Minute), c.ends))},
				"prometheus/orders.om":  {Data: []byte(openMetrics(c.metric, "orders-db-1", t0, 8*60, rise, c.recovers))},
				"logs/orders-purge.log": {Data: []byte(job(c.jobAt))},
			}
			src := bundleSources(t, fsys, now)
			ctx := context.Background()
			w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: now}
			alerts, err := src.Alerts.List(ctx, w.BaselineStart, w.End)
			if err != nil {
				t.Fatal(err)
			}
			series, err := src.Metrics.QueryRange(ctx, c.metric, w.BaselineStart, w.End, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			m := analysis.NewMiner(w.BaselineStart, w.Start, w.End)
			if err := src.Logs.Scan(ctx, evidence.LogQuery{Source: srcName(t, src), Since: w.BaselineStart, Until: w.End}, func(l evidence.LogLine) error {
				m.Add(l.Time, "orders-purge.log", l.Text)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			logs := []LogSet{{Source: "orders-purge.log", Subject: "orders-purge", Origin: SrcLogs, Host: true, Templates: m.Templates()}}
			sc := Scope{Service: "orders-db", Namespace: "shop", Message: "the alert fired overnight, is orders-db ok?", Window: w}
			ep := explainResolvedAlerts(alerts, []MetricSet{{Name: c.metric, Series: series}}, logs, nil, sc)
			if c.want == nil {
				if ep != nil {
					t.Fatalf("explained: %+v", ep)
				}
				return
			}
			if ep == nil {
				t.Fatal("not explained")
			}
			res := &finding.Result{Verdict: finding.VerdictHealthy, Summary: "No fault found in orders-db.", RootCause: finding.RootCause{Description: "No fault found.", Confidence: 20}}
			applyAlertEpisode(res, ep, sc)
			for _, s := range c.want {
				if !strings.Contains(res.RootCause.Description, s) {
					t.Errorf("description lacks %q: %s", s, res.RootCause.Description)
				}
			}
			if res.Verdict != finding.VerdictHealthy || len(res.RootCause.Evidence) < 3 || len(res.Timeline) < 4 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// srcName is the bundle's one log source.
func srcName(t *testing.T, src *evidence.Sources) string {
	ss, err := src.Logs.Sources(context.Background())
	if err != nil || len(ss) != 1 {
		t.Fatalf("log sources %v %v", ss, err)
	}
	return ss[0]
}
