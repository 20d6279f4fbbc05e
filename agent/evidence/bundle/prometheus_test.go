package bundle_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
)

func at(hms string) time.Time {
	t, err := time.Parse(time.RFC3339, "2026-03-14T"+hms+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

func series(v float64, t time.Time, kv ...string) evidence.Series {
	l := evidence.Labels{}
	for i := 0; i < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return evidence.Series{Labels: l, Points: []evidence.Point{{T: t, V: v}}}
}

// ShopMetricWants are hand-computed answers for the test bundle's metrics
// (the generator's counters grow linearly, so rates are exact).
func shopMetricWants() []evidencetest.MetricWant {
	t := at("09:30:30")
	q := func(expr string) evidencetest.MetricQuery { return evidencetest.MetricQuery{Expr: expr, At: t} }
	rng := evidencetest.MetricQuery{Expr: `rate(http_requests_total{service="cart"}[5m])`, Start: at("09:00:30"), End: at("09:10:30"), Step: 5 * time.Minute}
	return []evidencetest.MetricWant{
		{MetricQuery: q(`http_requests_total{service="checkout",code="200"}`), Want: []evidence.Series{
			series(61200, t, "__name__", "http_requests_total", "service", "checkout", "code", "200")}},
		{MetricQuery: q(`rate(http_requests_total{service="cart"}[5m])`), Eps: 1e-9, Want: []evidence.Series{
			series(35, t, "service", "cart", "code", "200")}},
		{MetricQuery: q(`sum by (service) (rate(http_requests_total[5m]))`), Eps: 1e-9, Want: []evidence.Series{
			series(35, t, "service", "cart"), series(20.2, t, "service", "checkout")}},
		{MetricQuery: q(`sum without (code) (increase(http_requests_total{code=~"2.."}[5m]))`), Eps: 1e-9, Want: []evidence.Series{
			series(35*300, t, "service", "cart"), series(20*300, t, "service", "checkout")}},
		{MetricQuery: q(`histogram_quantile(0.5, sum by (le, service) (rate(http_request_duration_seconds_bucket[5m])))`), Eps: 1e-9, Want: []evidence.Series{
			series(0.075, t, "service", "cart"), series(0.075, t, "service", "checkout")}},
		{MetricQuery: q(`sum(rate(http_requests_total{code="500"}[5m])) / sum(rate(http_requests_total[5m]))`), Eps: 1e-9, Want: []evidence.Series{
			series(0.2/55.2, t)}},
		{MetricQuery: q(`rate(http_requests_total{code!="200"}[5m]) > 1`), Want: nil},
		{MetricQuery: q(`max(container_memory_working_set_bytes) / 1e6 + 1`), Eps: 1e-9, Want: []evidence.Series{series(152, t)}},
		{MetricQuery: q(`count(http_requests_total) * 2`), Want: []evidence.Series{series(6, t)}},
		{MetricQuery: q(`topk(1, rate(http_requests_total[5m]))`), Eps: 1e-9, Want: []evidence.Series{
			series(35, t, "service", "cart", "code", "200")}},
		// after the counter reset at 10:16, rate still sees the steady 14/s
		{MetricQuery: evidencetest.MetricQuery{Expr: `rate(http_requests_total{service="checkout",code="200"}[5m])`, At: at("10:18:30")}, Eps: 1e-9,
			Want: []evidence.Series{series(14, at("10:18:30"), "service", "checkout", "code", "200")}},
		// nothing after the end of the data plus the 5m lookback
		{MetricQuery: evidencetest.MetricQuery{Expr: `http_requests_total`, At: at("10:46:00")}, Want: nil},
		{MetricQuery: rng, Eps: 1e-9, Want: []evidence.Series{{Labels: evidence.Labels{"service": "cart", "code": "200"},
			Points: []evidence.Point{{T: at("09:00:30"), V: 35}, {T: at("09:05:30"), V: 35}, {T: at("09:10:30"), V: 35}}}}},
	}
}

func TestBundleMetricsConformance(t *testing.T) {
	s := openShop(t)
	if s.Metrics == nil {
		t.Fatal("no Metrics source")
	}
	evidencetest.RunMetrics(t, s.Metrics, shopMetricWants())
}

func TestBundleSeriesSet(t *testing.T) {
	m := openShop(t).Metrics
	ctx := context.Background()
	cases := []struct {
		match      string
		start, end time.Time
		want       int
	}{
		{`http_requests_total`, at("08:00:00"), at("11:00:00"), 3},
		{`{__name__=~"http_request_duration_seconds_.*", service="cart"}`, at("08:00:00"), at("11:00:00"), 9},
		{``, at("08:00:00"), at("11:00:00"), 3 + 18 + 1},
		{`http_requests_total`, at("11:00:00"), at("12:00:00"), 0},
	}
	for _, tc := range cases {
		got, err := m.SeriesSet(ctx, tc.match, tc.start, tc.end)
		if err != nil || len(got) != tc.want {
			t.Errorf("SeriesSet(%q): %d series, %v; want %d", tc.match, len(got), err, tc.want)
		}
	}
	if _, err := m.SeriesSet(ctx, `rate(x[5m])`, at("08:00:00"), at("11:00:00")); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("SeriesSet with an expression: %v, want invalid", err)
	}
}

func TestBundlePromQLErrors(t *testing.T) {
	m := openShop(t).Metrics
	cases := []struct{ expr, want string }{
		{`http_requests_total and up`, `set operator "and"`},
		{`quantile_over_time(0.9, x[5m])`, "function quantile_over_time()"},
		{`rate(http_requests_total[5m:1m])`, "subqueries"},
		{`a / on(x) group_left b`, "group_left"},
		{`sum(`, "parsing"},
		{`rate(http_requests_total)`, "range vector"},
		{`{code=~".*"}`, "selector needs"},
		{`x{a=~"("}`, "regular expression"},
		{`quantile(0.9, x)`, "aggregation quantile()"},
		{`x @ 100`, "@ modifier"},
	}
	for _, tc := range cases {
		_, err := m.Query(context.Background(), tc.expr, at("09:30:00"))
		var e *evidence.Error
		if !errors.As(err, &e) || e.Code != evidence.CodeInvalid || e.Source != "prometheus" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Query(%q): %v, want invalid mentioning %q", tc.expr, err, tc.want)
		}
	}
	if _, err := m.QueryRange(context.Background(), "up", at("09:00:00"), at("10:00:00"), time.Millisecond); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("too many points: %v", err)
	}
}

func TestBundleOpenMetricsParsing(t *testing.T) {
	om := `# HELP req Requests.
# TYPE req counter
req_total{path="/a\"b",method="GET"} 1 1700000000
req_total{path="/a\"b",method="GET"} 3 1700000060.5 # {trace_id="x"} 1 1700000060
req_total{method="GET",path="/a\"b"} 2 1700000030
temp{} +Inf 1700000000
temp NaN 1700000060
# EOF
this is ignored
`
	b, _ := bundle.Open(fstest.MapFS{"prometheus/a.om": {Data: []byte(om)}}, "om")
	m := b.Sources(time.Time{}).Metrics
	got, err := m.Query(context.Background(), `req_total[2m]`, time.Unix(1700000070, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Points) != 3 || got[0].Labels["path"] != `/a"b` || got[0].Points[1].V != 2 || got[0].Points[2].T.UnixMilli() != 1700000060500 {
		t.Errorf("parsed %+v", got)
	}
	tv, err := m.Query(context.Background(), `temp`, time.Unix(1700000010, 0))
	if err != nil || len(tv) != 1 || !math.IsInf(tv[0].Points[0].V, 1) {
		t.Errorf("temp: %+v %v", tv, err)
	}
}

func TestBundleOpenMetricsMalformed(t *testing.T) {
	cases := []struct {
		name, data string
		line       int
		msg        string
	}{
		{"no timestamp", "# TYPE x gauge\nx 1 100\nx 2\n# EOF\n", 3, "no timestamp"},
		{"bad value", "x{a=\"b\"} abc 100\n", 1, "bad sample value"},
		{"bad labels", "# HELP x y\nx{a=b} 1 100\n", 2, "want a=\"value\""},
		{"bad type", "# TYPE x countr\n", 1, "unknown metric type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"prometheus/bad.om":     {Data: []byte(tc.data)},
				"kubernetes/nodes.json": {Data: []byte(`{"kind":"NodeList","items":[{"metadata":{"name":"n1"}}]}`)},
			}
			b, _ := bundle.Open(fsys, "bad")
			s := b.Sources(time.Time{})
			_, err := s.Metrics.Query(context.Background(), "x", time.Unix(100, 0))
			var e *evidence.Error
			if !errors.As(err, &e) || e.Code != evidence.CodeMalformed || e.File != "prometheus/bad.om" || e.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want malformed prometheus/bad.om:%d %q", err, tc.line, tc.msg)
			}
			if nodes, err := s.Kubernetes.Nodes(context.Background()); err != nil || len(nodes) != 1 {
				t.Errorf("the rest of the bundle: %v %v", nodes, err)
			}
		})
	}
}
