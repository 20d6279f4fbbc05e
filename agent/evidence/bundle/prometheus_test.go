package bundle_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
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
		{`sum(`, `query "sum(" at 2026-03-14T09:30:00Z: 1:5: parse error: unclosed left parenthesis`},
		{`rate(http_requests_total)`, "expected type range vector in call to function \"rate\", got instant vector"},
		{`{code=~".*"}`, "vector selector must contain at least one non-empty matcher"},
		{`x{a=~"("}`, "error parsing regexp"},
		{`no_such_function(x)`, `unknown function with name "no_such_function"`},
		{`http_requests_total + on (service) http_requests_total`, "many-to-many matching not allowed"},
		{`topk("a", http_requests_total)`, "expected type scalar in aggregation parameter, got string"},
		{`"just a string"`, "returned a string"},
	}
	for _, tc := range cases {
		_, err := m.Query(context.Background(), tc.expr, at("09:30:00"))
		var e *evidence.Error
		if !errors.As(err, &e) || e.Code != evidence.CodeInvalid || e.Source != "prometheus" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Query(%q): %v, want invalid mentioning %q", tc.expr, err, tc.want)
		}
	}
	rangeCases := []struct {
		expr       string
		start, end time.Time
		step       time.Duration
		want       string
	}{
		{"up", at("09:00:00"), at("10:00:00"), time.Millisecond, "3600001 points per series exceed the limit of 11000"},
		{"up", at("09:00:00"), at("10:00:00"), 0, "step must be positive"},
		{"up", at("10:00:00"), at("09:00:00"), time.Minute, "end is before start"},
		{"http_requests_total[5m]", at("09:00:00"), at("10:00:00"), time.Minute,
			`query_range "http_requests_total[5m]" from 2026-03-14T09:00:00Z to 2026-03-14T10:00:00Z step 1m0s: invalid expression type "range vector" for range query, must be Scalar or instant Vector`},
	}
	for _, tc := range rangeCases {
		_, err := m.QueryRange(context.Background(), tc.expr, tc.start, tc.end, tc.step)
		if evidence.CodeOf(err) != evidence.CodeInvalid || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("QueryRange(%q, step %s): %v, want invalid mentioning %q", tc.expr, tc.step, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Query(ctx, "up", at("09:30:00")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled query: %v", err)
	}
}

// TestBundlePromQLMissingMetric: a metric the bundle lacks is an empty
// answer, not an error, as on a live Prometheus.
func TestBundlePromQLMissingMetric(t *testing.T) {
	m := openShop(t).Metrics
	for _, expr := range []string{`no_such_metric`, `rate(no_such_metric[5m])`, `sum by (service) (no_such_metric)`} {
		got, err := m.Query(context.Background(), expr, at("09:30:00"))
		if err != nil || len(got) != 0 {
			t.Errorf("Query(%q) = %v, %v; want no series and no error", expr, got, err)
		}
		got, err = m.QueryRange(context.Background(), expr, at("09:00:00"), at("09:30:00"), time.Minute)
		if err != nil || len(got) != 0 {
			t.Errorf("QueryRange(%q) = %v, %v; want no series and no error", expr, got, err)
		}
	}
}

// beyondOM is data for what Prometheus 2.42 cannot be asked: m is a gauge
// sampled each minute from 1700000000 (values 1 3 2 5 100 4 6 7 8 9 10),
// c_total a counter growing 1/s whose first sample, at 1700000060, is 60.
const beyondOM = `# TYPE m gauge
m{k="x"} 1 1700000000
m{k="x"} 3 1700000060
m{k="x"} 2 1700000120
m{k="x"} 5 1700000180
m{k="x"} 100 1700000240
m{k="x"} 4 1700000300
m{k="x"} 6 1700000360
m{k="x"} 7 1700000420
m{k="x"} 8 1700000480
m{k="x"} 9 1700000540
m{k="x"} 10 1700000600
m{k="y"} 2 1700000540
m{k="y"} 2 1700000600
# TYPE c counter
c_total 60 1700000060
c_total 120 1700000120
c_total 180 1700000180
c_total 240 1700000240
c_total 300 1700000300
c_total 360 1700000360
c_total 420 1700000420
c_total 480 1700000480
c_total 540 1700000540
c_total 600 1700000600
# TYPE target_info gauge
target_info{instance="i1",job="j",env="prod"} 1 1700000600
# TYPE app_up gauge
app_up{instance="i1",job="j"} 1 1700000600
# EOF
`

// TestBundlePromQLBeyond242 checks, against values worked out by hand, the
// functions and behaviours of the bundle's engine that the Prometheus of the
// conformance suite (2.42) lacks or answers differently (docs/bundles.md).
func TestBundlePromQLBeyond242(t *testing.T) {
	b, err := bundle.Open(fstest.MapFS{"prometheus/m.om": {Data: []byte(beyondOM)}}, "beyond")
	if err != nil {
		t.Fatal(err)
	}
	m := b.Sources(time.Time{}).Metrics
	end := time.Unix(1700000600, 0).UTC()
	one := func(v float64, kv ...string) []evidence.Series { return []evidence.Series{series(v, end, kv...)} }
	q := func(expr string) evidencetest.MetricQuery { return evidencetest.MetricQuery{Expr: expr, At: end} }
	evidencetest.RunMetrics(t, m, []evidencetest.MetricWant{
		// windows are left-open: (end-5m, end] holds the samples from 360 s
		{MetricQuery: q(`first_over_time(m{k="x"}[5m])`), Want: one(6, "__name__", "m", "k", "x")},
		{MetricQuery: q(`ts_of_first_over_time(m{k="x"}[5m])`), Want: one(1700000360, "k", "x")},
		{MetricQuery: q(`count_over_time(m{k="x"}[10m])`), Want: one(10, "k", "x")},
		{MetricQuery: q(`ts_of_max_over_time(m{k="x"}[10m])`), Want: one(1700000240, "k", "x")},
		{MetricQuery: q(`ts_of_min_over_time(m{k="x"}[10m])`), Want: one(1700000120, "k", "x")},
		{MetricQuery: q(`ts_of_last_over_time(m{k="x"}[10m])`), Want: one(1700000600, "k", "x")},
		// 3 2 5 100 4 6 7 8 9 10: median 6.5, deviations' median 2.5
		{MetricQuery: q(`mad_over_time(m{k="x"}[10m])`), Want: one(2.5, "k", "x")},
		{MetricQuery: q(`count(limitk(1, m))`), Want: one(1)},
		{MetricQuery: q(`count(limit_ratio(1, m))`), Want: one(2)},
		{MetricQuery: q(`max_of(2, 3) + min_of(2, 3)`), Want: one(5)},
		{MetricQuery: q(`count_over_time(m{k="x"}[4m+6m])`), Want: one(10, "k", "x")},
		{MetricQuery: q(`info(app_up)`), Want: one(1, "__name__", "app_up", "instance", "i1", "job", "j", "env", "prod")},
		// fill(0) stands in for the side that has no match
		{MetricQuery: q(`m{k="y"} + fill(0) m{k="x"}`), Want: []evidence.Series{series(10, end, "k", "x"), series(2, end, "k", "y")}},
		{MetricQuery: q(`m + fill(0) app_up`), Want: []evidence.Series{
			series(10, end, "k", "x"), series(2, end, "k", "y"), series(1, end, "instance", "i1", "job", "j")}},
		// the trapezoids between the samples at 540 s and 600 s: 2 × 60
		{MetricQuery: q(`integral(m{k="y"}[10m])`), Want: one(120, "k", "y")},
		// OpenMetrics files carry no start timestamps, nor native histograms
		{MetricQuery: q(`start_timestamp(c_total)`), Want: nil},
		{MetricQuery: q(`histogram_avg(m) or histogram_stddev(m) or histogram_stdvar(m)`), Want: nil},
		// atan2 drops the metric name, as the arithmetic operators do
		{MetricQuery: q(`m{k="y"} atan2 0`), Eps: 1e-12, Want: one(math.Pi/2, "k", "y")},
		// a counter that starts inside the window: extrapolated by half a
		// scrape interval to the left, never below zero (540 over 540 s,
		// plus 30 s of 1/s); Prometheus 2 extrapolated 60 s
		{MetricQuery: q(`increase(c_total[15m])`), Eps: 1e-12, Want: one(570)},
		// anchored and smoothed windows do not extrapolate: 600 - 60
		{MetricQuery: q(`increase(c_total[15m] anchored)`), Eps: 1e-12, Want: one(540)},
		{MetricQuery: q(`increase(c_total[15m] smoothed)`), Eps: 1e-12, Want: one(540)},
		{MetricQuery: evidencetest.MetricQuery{Expr: `step() + range()`, Start: end.Add(-2 * time.Minute), End: end, Step: time.Minute}, Want: []evidence.Series{
			{Labels: evidence.Labels{}, Points: []evidence.Point{{T: end.Add(-2 * time.Minute), V: 180}, {T: end.Add(-time.Minute), V: 180}, {T: end, V: 180}}}}},
	})
	// sort_by_label and sort_desc keep their order in an instant answer
	for _, tc := range []struct{ expr, want string }{
		{`sort_by_label(m, "k")`, "x y"},
		{`sort_by_label_desc(m, "k")`, "y x"},
		{`sort_desc(m)`, "x y"},
		{`sort(m)`, "y x"},
	} {
		got, err := m.Query(context.Background(), tc.expr, end)
		var ks []string
		for _, s := range got {
			ks = append(ks, s.Labels["k"])
		}
		if err != nil || strings.Join(ks, " ") != tc.want {
			t.Errorf("%s: order %v, %v; want %s", tc.expr, ks, err, tc.want)
		}
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

// TestBundlePromQLConcurrent runs instant and range queries from many
// goroutines at once, from the first load on, as localization and the
// analyst do, and expects each to answer as it does alone.
func TestBundlePromQLConcurrent(t *testing.T) {
	exprs := []string{
		`sum by (service) (rate(http_requests_total[5m]))`,
		`histogram_quantile(0.9, sum by (le, service) (rate(http_request_duration_seconds_bucket[5m])))`,
		`max_over_time(container_memory_working_set_bytes[10m]) / on () group_left max(container_memory_working_set_bytes)`,
	}
	ctx := context.Background()
	want := map[string][]evidence.Series{}
	alone := openShop(t).Metrics
	for _, e := range exprs {
		got, err := alone.QueryRange(ctx, e, at("09:00:30"), at("10:40:30"), time.Minute)
		if err != nil || len(got) == 0 {
			t.Fatalf("%s: %v %v", e, got, err)
		}
		want[e] = got
	}
	m := openShop(t).Metrics // not loaded yet
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := exprs[i%len(exprs)]
			got, err := m.QueryRange(ctx, e, at("09:00:30"), at("10:40:30"), time.Minute)
			if err != nil || !reflect.DeepEqual(got, want[e]) {
				errs <- fmt.Sprintf("%s: %d series, %v", e, len(got), err)
			}
			if _, err := m.Query(ctx, e, at("10:00:30")); err != nil {
				errs <- fmt.Sprintf("%s: %v", e, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
