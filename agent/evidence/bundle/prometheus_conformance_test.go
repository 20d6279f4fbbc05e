package bundle_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
)

// The PromQL conformance suite: every function, operator, aggregation and
// modifier of PromQL, instant and range, evaluated by the bundle backend
// and by a real Prometheus (Debian's, 2.42) over the same samples, which
// promtool backfills from the bundle's OpenMetrics. The data has counter
// resets, a series that starts late, a gap longer than the lookback, an
// irregularly scraped series, and joins (info metrics), so that the answers
// depend on extrapolation, staleness and lookback.
//
// Sample timestamps sit at .250 s and evaluation times on whole seconds:
// the left-closed windows of Prometheus 2 and the left-open ones of
// Prometheus 3 (the bundle's engine) then select the same samples.

// confT0 is the first sample time of the conformance data (2026-03-14T08:00:00Z).
const confT0 = 1773475200

// confSteps is the number of 15 s scrapes (two hours).
const confSteps = 481

func confAt(hms string) time.Time {
	t, err := time.Parse(time.RFC3339, "2026-03-14T"+hms+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

// writeConformanceOM writes the conformance data as OpenMetrics to path.
func writeConformanceOM(tb testing.TB, path string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	ts := func(i int) string { return strconv.Itoa(confT0+15*i) + ".25" }
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', 12, 64) }
	family := func(name, typ string) { fmt.Fprintf(w, "# TYPE %s %s\n", name, typ) }
	// series writes one series: value(i) for each scrape i where ok(i).
	series := func(text string, value func(i int) float64, ok func(i int) bool) {
		for i := range confSteps {
			if ok == nil || ok(i) {
				fmt.Fprintf(w, "%s %s %s\n", text, num(value(i)), ts(i))
			}
		}
	}
	instances := []string{"a", "b", "c"}
	phase := map[string]float64{"a": 0, "b": 1.3, "c": 2.9}
	// c starts at 08:25; b restarts at 08:47:30 and 09:31:30.
	cStarted := func(inst string) func(int) bool {
		return func(i int) bool { return inst != "c" || i >= 100 }
	}
	restart := func(inst string, i int) bool { return inst == "b" && (i == 190 || i == 366) }

	family("http_requests", "counter")
	for _, inst := range instances {
		for _, code := range []string{"200", "500"} {
			vals := make([]float64, confSteps)
			v := 5000.0 // see versionDifferences: counters that start near 0
			for i := range confSteps {
				base := 12.0
				if code == "500" {
					base = 0.2
					if i >= 280 { // errors from 09:10
						base = 5
					}
				}
				if restart(inst, i) {
					v = 0
				}
				v += math.Round(base*(1+0.5*math.Sin(float64(i)/20+phase[inst]))*15*1000) / 1000
				vals[i] = v
			}
			series(fmt.Sprintf(`http_requests_total{job="api",instance=%q,code=%q}`, inst, code), func(i int) float64 { return vals[i] }, cStarted(inst))
		}
	}
	family("http_request_duration_seconds", "histogram")
	les := []string{"0.05", "0.1", "0.25", "0.5", "1", "+Inf"}
	for _, inst := range []string{"a", "b"} {
		counts := make([][]float64, len(les))
		sum, count := make([]float64, confSteps), make([]float64, confSteps)
		for b := range les {
			counts[b] = make([]float64, confSteps)
		}
		shares := func(i int) []float64 {
			if i >= 280 {
				return []float64{0.1, 0.25, 0.5, 0.8, 0.95, 1}
			}
			return []float64{0.3, 0.6, 0.85, 0.95, 0.99, 1}
		}
		acc := make([]float64, len(les))
		for b, share := range shares(0) {
			acc[b] = 10000 * share
		}
		var s, c float64
		for i := range confSteps {
			n := float64(20 + i%7)
			if inst == "b" {
				n += 5
			}
			for b, share := range shares(i) {
				acc[b] += math.Round(n * share)
				counts[b][i] = acc[b]
			}
			c += n
			s += n * (0.08 + 0.1*float64(i/280))
			sum[i], count[i] = math.Round(s*1000)/1000, c
		}
		for b, le := range les {
			series(fmt.Sprintf(`http_request_duration_seconds_bucket{job="api",instance=%q,le=%q}`, inst, le), func(i int) float64 { return counts[b][i] }, nil)
		}
		series(fmt.Sprintf(`http_request_duration_seconds_sum{job="api",instance=%q}`, inst), func(i int) float64 { return sum[i] }, nil)
		series(fmt.Sprintf(`http_request_duration_seconds_count{job="api",instance=%q}`, inst), func(i int) float64 { return count[i] }, nil)
	}
	family("up", "gauge")
	for _, inst := range instances {
		series(fmt.Sprintf(`up{job="api",instance=%q}`, inst), func(i int) float64 {
			if inst == "c" && i < 100 || inst == "b" && (i >= 188 && i <= 192 || i >= 364 && i <= 368) {
				return 0
			}
			return 1
		}, nil)
	}
	family("node_temperature_celsius", "gauge")
	for _, inst := range instances {
		series(fmt.Sprintf(`node_temperature_celsius{instance=%q,sensor="cpu"}`, inst), func(i int) float64 {
			return math.Round((20+10*math.Sin(float64(i)/15+phase[inst])+float64(i%5)*0.1)*100) / 100
		}, nil)
		series(fmt.Sprintf(`node_temperature_celsius{instance=%q,sensor="board"}`, inst), func(i int) float64 {
			return math.Round((-3+5*math.Cos(float64(i)/25+phase[inst]))*100) / 100
		}, nil)
	}
	family("node_load_ratio", "gauge")
	for _, inst := range instances {
		series(fmt.Sprintf(`node_load_ratio{instance=%q}`, inst), func(i int) float64 {
			return math.Round(0.9*math.Sin(float64(i)/10+phase[inst])*1000) / 1000
		}, nil)
	}
	family("node_boot_time_seconds", "gauge")
	for k, addr := range []string{"10.0.0.1:9100", "10.0.0.2:9100"} {
		series(fmt.Sprintf(`node_boot_time_seconds{instance=%q}`, addr), func(int) float64 { return float64(1773400000 + 3600*k) }, nil)
	}
	family("queue_depth", "gauge")
	// orders: nothing from 09:00:15 to 09:19:45 (longer than the lookback);
	// mail: scraped irregularly, with a 5-minute gap at 09:40.
	series(`queue_depth{queue="orders"}`, func(i int) float64 { return float64(i * 7 % 50) }, func(i int) bool { return i <= 240 || i >= 320 })
	series(`queue_depth{queue="mail"}`, func(i int) float64 { return float64(i%13) - 4 }, func(i int) bool { return i*i%5 != 0 && (i < 400 || i >= 420) })
	pods := []struct{ pod, node string }{{"cart-1", "n1"}, {"cart-2", "n2"}, {"checkout-1", "n1"}, {"checkout-2", "n2"}}
	family("container_memory_working_set_bytes", "gauge")
	for k, p := range pods {
		series(fmt.Sprintf(`container_memory_working_set_bytes{namespace="shop",pod=%q,node=%q}`, p.pod, p.node), func(i int) float64 {
			return math.Round(1e8 + float64(i)*1e5*float64(k+1) + 1e7*math.Sin(float64(i)/30+float64(k)))
		}, nil)
	}
	family("kube_pod_container_resource_limits", "gauge")
	for k, p := range pods {
		series(fmt.Sprintf(`kube_pod_container_resource_limits{namespace="shop",pod=%q,resource="memory"}`, p.pod), func(int) float64 { return float64(5e8 + 1e8*k) }, nil)
	}
	family("kube_pod_info", "gauge")
	for _, p := range pods {
		series(fmt.Sprintf(`kube_pod_info{namespace="shop",pod=%q,node=%q}`, p.pod, p.node), func(int) float64 { return 1 }, nil)
	}
	family("kube_node_info", "gauge")
	for _, n := range []string{"n1", "n2"} {
		series(fmt.Sprintf(`kube_node_info{node=%q,kernel="6.1.0-%s"}`, n, n), func(int) float64 { return 1 }, nil)
	}
	family("build_info", "gauge")
	for _, inst := range instances {
		version := "1.2.3"
		if inst == "c" {
			version = "1.3.0"
		}
		series(fmt.Sprintf(`build_info{instance=%q,version=%q}`, inst, version), func(int) float64 { return 1 }, nil)
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// startPrometheus serves om from the real prometheus binary on a loopback
// port (evidencetest.StartPrometheus) and returns its API client.
func startPrometheus(t *testing.T, om string) v1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: evidencetest.StartPrometheus(t, om)})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

// liveSeries converts a Prometheus API answer.
func liveSeries(v model.Value) []evidence.Series {
	lbls := func(m model.Metric) evidence.Labels {
		l := evidence.Labels{}
		for k, v := range m {
			l[string(k)] = string(v)
		}
		return l
	}
	var out []evidence.Series
	switch v := v.(type) {
	case model.Vector:
		for _, s := range v {
			out = append(out, evidence.Series{Labels: lbls(s.Metric), Points: []evidence.Point{{T: s.Timestamp.Time().UTC(), V: float64(s.Value)}}})
		}
	case model.Matrix:
		for _, s := range v {
			ser := evidence.Series{Labels: lbls(s.Metric)}
			for _, p := range s.Values {
				ser.Points = append(ser.Points, evidence.Point{T: p.Timestamp.Time().UTC(), V: float64(p.Value)})
			}
			out = append(out, ser)
		}
	case *model.Scalar:
		out = append(out, evidence.Series{Labels: evidence.Labels{}, Points: []evidence.Point{{T: v.Timestamp.Time().UTC(), V: float64(v.Value)}}})
	}
	return out
}

// confQuery is one expression of the suite. Live, when set, is how
// Prometheus 2.42 spells the same question (a function renamed since).
// Empty marks answers that are empty at some or all of the times.
type confQuery struct {
	Expr, Live string
	Empty      bool
}

// confInstant are evaluated at every time of confTimes, and, unless they
// return range vectors or strings, as range queries.
var confInstant = []confQuery{
	// selectors, offsets, @, lookback and staleness
	{Expr: `http_requests_total`},
	{Expr: `http_requests_total{code!="200", instance=~"a|b"}`},
	{Expr: `{__name__=~"node_.*", instance="a"}`},
	{Expr: `{__name__=~"http_request_duration_seconds_(sum|count)"}`},
	{Expr: `http_requests_total offset 10m`},
	{Expr: `http_requests_total offset -7m`},
	{Expr: `http_requests_total @ 1773478800`},
	{Expr: `rate(http_requests_total[5m] @ 1773478800)`},
	{Expr: `rate(http_requests_total[5m] @ 1773478800 offset 5m)`},
	{Expr: `http_requests_total @ start()`},
	{Expr: `sum(rate(http_requests_total[5m] @ end()))`},
	{Expr: `queue_depth`, Empty: true},
	{Expr: `queue_depth offset 4m`},
	{Expr: `up == 0`, Empty: true},
	{Expr: `node_temperature_celsius{sensor="board"} < 0`, Empty: true},
	{Expr: `no_such_metric`, Empty: true},
	{Expr: `no_such_metric{job="api"} or vector(0)`},
	// range functions over counters (resets, a series that starts late)
	{Expr: `rate(http_requests_total[5m])`},
	{Expr: `rate(http_requests_total[1m])`},
	{Expr: `rate(http_requests_total[90s])`},
	{Expr: `rate(http_requests_total[1h30m])`},
	{Expr: `irate(http_requests_total[5m])`},
	{Expr: `increase(http_requests_total[10m])`},
	{Expr: `increase(http_requests_total{instance="c"}[30m])`},
	{Expr: `resets(http_requests_total[30m])`},
	{Expr: `changes(up[1h])`},
	{Expr: `delta(node_temperature_celsius[10m])`},
	{Expr: `idelta(node_temperature_celsius[5m])`},
	{Expr: `deriv(node_temperature_celsius[15m])`},
	{Expr: `predict_linear(node_temperature_celsius[30m], 3600)`},
	{Expr: `predict_linear(container_memory_working_set_bytes[1h], 4 * 3600) > on (pod) kube_pod_container_resource_limits`, Empty: true},
	{Expr: `double_exponential_smoothing(node_temperature_celsius[30m], 0.3, 0.6)`, Live: `holt_winters(node_temperature_celsius[30m], 0.3, 0.6)`},
	{Expr: `avg_over_time(queue_depth[10m])`},
	{Expr: `min_over_time(node_temperature_celsius[20m])`},
	{Expr: `max_over_time(node_temperature_celsius[20m])`},
	{Expr: `sum_over_time(queue_depth[10m])`},
	{Expr: `count_over_time(queue_depth[10m])`},
	{Expr: `quantile_over_time(0.9, node_temperature_celsius[30m])`},
	{Expr: `quantile_over_time(0, node_load_ratio[30m])`},
	{Expr: `stddev_over_time(node_temperature_celsius[30m])`},
	{Expr: `stdvar_over_time(node_load_ratio[30m])`},
	{Expr: `last_over_time(queue_depth[30m])`},
	{Expr: `present_over_time(queue_depth[5m])`},
	{Expr: `absent_over_time(queue_depth{queue="orders"}[5m])`, Empty: true},
	{Expr: `absent_over_time(no_such_metric{job="x"}[5m])`},
	{Expr: `absent(no_such_metric{job="x", instance=~"a.*"})`},
	{Expr: `absent(up)`, Empty: true},
	{Expr: `absent(queue_depth{queue="orders"})`, Empty: true},
	// histograms
	{Expr: `histogram_quantile(0.99, rate(http_request_duration_seconds_bucket[5m]))`},
	{Expr: `histogram_quantile(0.5, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`},
	{Expr: `histogram_quantile(0.9, sum by (le, instance) (increase(http_request_duration_seconds_bucket[10m])))`},
	{Expr: `histogram_quantile(1.5, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`},
	{Expr: `rate(http_request_duration_seconds_sum[5m]) / rate(http_request_duration_seconds_count[5m])`},
	{Expr: `histogram_fraction(0, 0.1, rate(http_request_duration_seconds_bucket[5m]))`,
		Live: `rate(http_request_duration_seconds_bucket{le="0.1"}[5m]) / ignoring (le) rate(http_request_duration_seconds_bucket{le="+Inf"}[5m])`},
	{Expr: `histogram_fraction(0.05, 0.5, sum by (le) (increase(http_request_duration_seconds_bucket[10m])))`,
		Live: `(sum(increase(http_request_duration_seconds_bucket{le="0.5"}[10m])) - sum(increase(http_request_duration_seconds_bucket{le="0.05"}[10m]))) / sum(increase(http_request_duration_seconds_bucket{le="+Inf"}[10m]))`},
	{Expr: `histogram_quantiles(sum by (le, instance) (rate(http_request_duration_seconds_bucket[5m])), "q", 0.9)`,
		Live: `label_replace(histogram_quantile(0.9, sum by (le, instance) (rate(http_request_duration_seconds_bucket[5m]))), "q", "0.9", "", "")`},
	{Expr: `histogram_count(rate(http_request_duration_seconds_bucket[5m]))`, Empty: true},
	{Expr: `histogram_sum(rate(http_request_duration_seconds_bucket[5m]))`, Empty: true},
	// instant functions
	{Expr: `abs(node_temperature_celsius)`},
	{Expr: `ceil(node_temperature_celsius)`},
	{Expr: `floor(node_temperature_celsius)`},
	{Expr: `round(node_temperature_celsius)`},
	{Expr: `round(node_temperature_celsius, 0.5)`},
	{Expr: `sgn(node_temperature_celsius)`},
	{Expr: `clamp(node_temperature_celsius, 0, 20)`},
	{Expr: `clamp_min(node_temperature_celsius, 5)`},
	{Expr: `clamp_max(node_temperature_celsius, 5)`},
	{Expr: `sqrt(node_temperature_celsius)`},
	{Expr: `exp(node_load_ratio)`},
	{Expr: `ln(node_temperature_celsius)`},
	{Expr: `log2(node_temperature_celsius)`},
	{Expr: `log10(container_memory_working_set_bytes)`},
	{Expr: `sin(node_load_ratio) + cos(node_load_ratio) + tan(node_load_ratio)`},
	{Expr: `asin(node_load_ratio)`},
	{Expr: `acos(node_load_ratio)`},
	{Expr: `atan(node_temperature_celsius)`},
	{Expr: `sinh(node_load_ratio)`},
	{Expr: `cosh(node_load_ratio)`},
	{Expr: `tanh(node_load_ratio)`},
	{Expr: `asinh(node_temperature_celsius)`},
	{Expr: `acosh(node_temperature_celsius + 10)`},
	{Expr: `atanh(node_load_ratio)`},
	{Expr: `deg(node_load_ratio)`},
	{Expr: `rad(node_temperature_celsius)`},
	{Expr: `pi()`},
	{Expr: `time()`},
	{Expr: `vector(time())`},
	{Expr: `scalar(sum(up))`},
	{Expr: `scalar(up)`},
	{Expr: `timestamp(up)`},
	{Expr: `time() - timestamp(queue_depth)`},
	{Expr: `time() - node_boot_time_seconds`},
	{Expr: `hour()`},
	{Expr: `minute(timestamp(up))`},
	{Expr: `day_of_week()`},
	{Expr: `day_of_month(vector(1772323200))`},
	{Expr: `day_of_year()`},
	{Expr: `days_in_month(vector(1772323200))`},
	{Expr: `month()`},
	{Expr: `year(node_boot_time_seconds)`},
	{Expr: `label_replace(node_boot_time_seconds, "host", "$1", "instance", "(.*):.*")`},
	{Expr: `label_replace(up, "instance", "", "instance", "b")`},
	{Expr: `label_join(up, "id", "/", "job", "instance")`},
	{Expr: `sort(rate(http_requests_total[5m]))`},
	{Expr: `sort_desc(node_temperature_celsius)`},
	// aggregations
	{Expr: `sum(rate(http_requests_total[5m]))`},
	{Expr: `sum by (code) (rate(http_requests_total[5m]))`},
	{Expr: `sum(rate(http_requests_total[5m])) by (instance)`},
	{Expr: `avg without (instance) (rate(http_requests_total[5m]))`},
	{Expr: `min by (sensor) (node_temperature_celsius)`},
	{Expr: `max by (sensor) (node_temperature_celsius)`},
	{Expr: `count by (job) (up)`},
	{Expr: `count(no_such_metric)`, Empty: true},
	{Expr: `group by (version) (build_info)`},
	{Expr: `stddev by (sensor) (node_temperature_celsius)`},
	{Expr: `stdvar(node_load_ratio)`},
	{Expr: `count_values("version_count", build_info)`},
	{Expr: `count_values by (sensor) ("temp", round(node_temperature_celsius))`},
	{Expr: `topk(2, node_temperature_celsius)`},
	{Expr: `topk by (sensor) (1, node_temperature_celsius)`},
	{Expr: `bottomk(2, rate(http_requests_total[5m]))`},
	{Expr: `quantile(0.9, node_temperature_celsius)`},
	{Expr: `quantile by (sensor) (0.25, node_temperature_celsius)`},
	{Expr: `sum without (le) (http_request_duration_seconds_bucket)`},
	// binary operators
	{Expr: `1 + 2 * 3 - 4 / 8 % 3`},
	{Expr: `2 ^ 3 ^ 2`},
	{Expr: `-2 ^ 2`},
	{Expr: `1 > bool 2`},
	{Expr: `0x10 + 1e2 + 1.5`},
	{Expr: `-http_requests_total`},
	{Expr: `node_temperature_celsius * 9 / 5 + 32`},
	{Expr: `node_temperature_celsius % 7`},
	{Expr: `node_temperature_celsius ^ 2`},
	{Expr: `sum without () (node_load_ratio atan2 on (instance) node_temperature_celsius{sensor="cpu"})`},
	{Expr: `sum without () (node_load_ratio atan2 0.5)`},
	{Expr: `node_temperature_celsius > 15`, Empty: true},
	{Expr: `node_temperature_celsius >= bool 15`},
	{Expr: `node_temperature_celsius != 20`},
	{Expr: `node_temperature_celsius == bool node_temperature_celsius`},
	{Expr: `20 < node_temperature_celsius`, Empty: true},
	{Expr: `rate(http_requests_total{code="500"}[5m]) / ignoring (code) rate(http_requests_total{code="200"}[5m])`},
	{Expr: `sum by (instance) (rate(http_requests_total{code="500"}[5m])) / on (instance) sum by (instance) (rate(http_requests_total[5m]))`},
	{Expr: `container_memory_working_set_bytes / on (namespace, pod) group_left kube_pod_container_resource_limits`},
	{Expr: `container_memory_working_set_bytes * on (node) group_left (kernel) kube_node_info`},
	{Expr: `kube_node_info * on (node) group_right (kernel) container_memory_working_set_bytes`},
	{Expr: `rate(http_requests_total[5m]) * on (instance) group_left (version) build_info`},
	{Expr: `http_requests_total and on (instance) up == 1`},
	{Expr: `up == 0 or up * 2`},
	{Expr: `http_requests_total unless on (instance) up == 0`},
	{Expr: `node_temperature_celsius and node_temperature_celsius > 25`, Empty: true},
	{Expr: `queue_depth or on () vector(-1)`},
	// subqueries
	{Expr: `max_over_time(rate(http_requests_total[1m])[10m:1m])`},
	{Expr: `min_over_time(deriv(node_temperature_celsius[5m])[15m:])`},
	{Expr: `avg_over_time(sum by (code) (rate(http_requests_total[5m]))[30m:2m] offset 5m)`},
	{Expr: `max_over_time(max_over_time(queue_depth[2m])[20m:45s])`},
	{Expr: `rate(sum(http_requests_total)[10m:30s])`},
	// comments and spelling
	{Expr: "sum(up) # how many instances answer"},
	{Expr: `sum(up{job="api"}) by (job)`},
	{Expr: `SUM BY (job) (up)`},
}

// confMatrix return range vectors: instant queries only.
var confMatrix = []confQuery{
	{Expr: `http_requests_total{instance="b"}[2m]`},
	{Expr: `queue_depth[10m]`, Empty: true},
	{Expr: `up[1m] offset 1h`},
	{Expr: `rate(http_requests_total{instance="a"}[5m])[10m:1m]`},
	{Expr: `node_temperature_celsius{instance="a"}[3m] @ 1773478800`},
}

var confTimes = []string{"08:30:17", "09:03:43", "09:07:43", "09:31:37", "09:59:50"}

// confRanges are the windows of the range queries.
var confRanges = []struct {
	start, end string
	step       time.Duration
}{
	{"08:05:17", "09:59:17", time.Minute},
	{"08:50:03", "09:40:33", 7*time.Minute + 30*time.Second},
}

func TestBundlePromQLConformance(t *testing.T) {
	dir := t.TempDir()
	om := filepath.Join(dir, "prometheus", "metrics.om")
	writeConformanceOM(t, om)
	live := startPrometheus(t, om)
	b, err := bundle.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	bm := b.Sources(time.Time{}).Metrics
	ctx := context.Background()
	const eps = 1e-9
	compare := func(q confQuery, what string, got []evidence.Series, gotErr error, want model.Value, wantErr error, nonEmpty map[string]bool) {
		t.Helper()
		if gotErr != nil || wantErr != nil {
			t.Errorf("%s: bundle error %v, prometheus error %v", what, gotErr, wantErr)
			return
		}
		if msg := evidencetest.DiffSeries(liveSeries(want), got, eps); msg != "" {
			t.Errorf("%s differs from prometheus: %s", what, msg)
		}
		if len(got) > 0 {
			nonEmpty[q.Expr] = true
		}
	}
	nonEmpty := map[string]bool{}
	run := func(qs []confQuery, ranges bool) {
		for _, q := range qs {
			liveExpr := q.Expr
			if q.Live != "" {
				liveExpr = q.Live
			}
			for _, hms := range confTimes {
				at := confAt(hms)
				got, gotErr := bm.Query(ctx, q.Expr, at)
				want, _, _, wantErr := live.Query(ctx, liveExpr, at)
				compare(q, fmt.Sprintf("%s at %s", q.Expr, hms), got, gotErr, want, wantErr, nonEmpty)
			}
			if !ranges {
				continue
			}
			for _, r := range confRanges {
				start, end := confAt(r.start), confAt(r.end)
				got, gotErr := bm.QueryRange(ctx, q.Expr, start, end, r.step)
				want, _, _, wantErr := live.QueryRange(ctx, liveExpr, v1.Range{Start: start, End: end, Step: r.step})
				compare(q, fmt.Sprintf("%s from %s to %s step %s", q.Expr, r.start, r.end, r.step), got, gotErr, want, wantErr, nonEmpty)
			}
		}
	}
	run(confInstant, true)
	run(confMatrix, false)
	// list_metrics: the series API over the same windows
	for _, tc := range []struct{ match, start, end string }{
		{`up`, "08:00:00", "10:00:00"},
		{`{__name__=~"node_.*", instance!="b"}`, "08:30:00", "09:00:00"},
		{`http_requests_total{instance="c"}`, "08:00:00", "08:20:00"},
		{`http_requests_total{instance="c"}`, "08:00:00", "08:30:00"},
		{`{job="api"}`, "09:00:00", "09:30:00"},
	} {
		start, end := confAt(tc.start), confAt(tc.end)
		got, err := bm.SeriesSet(ctx, tc.match, start, end)
		want, _, _, wantErr := live.Series(ctx, []string{tc.match}, start, end)
		if err != nil || wantErr != nil {
			t.Errorf("SeriesSet(%s): %v / %v", tc.match, err, wantErr)
			continue
		}
		asSeries := func(ls []evidence.Labels) []evidence.Series {
			out := []evidence.Series{}
			for _, l := range ls {
				out = append(out, evidence.Series{Labels: l})
			}
			return out
		}
		var wl []evidence.Labels
		for _, ls := range want {
			l := evidence.Labels{}
			for k, v := range ls {
				l[string(k)] = string(v)
			}
			wl = append(wl, l)
		}
		if msg := evidencetest.DiffSeries(asSeries(wl), asSeries(got), 0); msg != "" {
			t.Errorf("SeriesSet(%s, %s, %s) differs from prometheus: %s", tc.match, tc.start, tc.end, msg)
		}
	}
	// A query that selects nothing everywhere proves nothing: only those
	// marked Empty may answer nothing at some times, and every query must
	// answer something somewhere, except the ones about absence.
	for _, q := range append(slices.Clone(confInstant), confMatrix...) {
		if !nonEmpty[q.Expr] && !strings.Contains(q.Expr, "no_such_metric") && !strings.HasPrefix(q.Expr, "histogram_") && !strings.HasPrefix(q.Expr, "absent(") {
			t.Errorf("%s: no series at any time: the query should select data", q.Expr)
		}
	}
}
