package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An errors-per-second series (Micrometer's http_server_requests_errors,
// a gRPC or Express errors counter, read as a rate) judged against the
// requests the same service answered, read from its latency histogram's
// _count: a 5xx every two minutes on a service answering 21 requests a
// second is no error rate that rose; a tenth of its requests failing is;
// without request rates the rise is judged on its own.
func TestErrorShareAgainstRequests(t *testing.T) {
	end := time.Date(2026, 11, 14, 8, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	// one point a minute over baseline and window; val gives minute i's
	// value (i from 0 at the baseline's start).
	series := func(name, pod string, val func(i int) float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": name, "namespace": "inventory", "pod": pod}}
		for i := 0; i < 120; i++ {
			s.Points = append(s.Points, evidence.Point{T: w.BaselineStart.Add(time.Duration(i) * time.Minute), V: val(i)})
		}
		return s
	}
	// errors: none in the baseline, then v per second from minute 70 on
	// (on each pod).
	errs := func(name string, v float64) MetricSet {
		ms := MetricSet{Name: name, Class: MetricErrors, Unit: "/s", Origin: SrcMetrics}
		for _, pod := range []string{"inventory-api-69c8d7b5f4-6hxkq", "inventory-api-69c8d7b5f4-lq2tz"} {
			ms.Series = append(ms.Series, series(name, pod, func(i int) float64 {
				if i >= 70 {
					return v
				}
				return 0
			}))
		}
		return ms
	}
	latency := func(reqPerPod float64) MetricSet {
		ms := MetricSet{Name: "http_server_requests_seconds (mean)", Class: MetricLatency, Unit: "s", Origin: SrcMetrics}
		for _, pod := range []string{"inventory-api-69c8d7b5f4-6hxkq", "inventory-api-69c8d7b5f4-lq2tz"} {
			ms.Series = append(ms.Series, series("http_server_requests_seconds_sum", pod, func(int) float64 { return 0.04 }))
			ms.Requests = append(ms.Requests, series("http_server_requests_seconds_count", pod, func(int) float64 { return reqPerPod }))
		}
		return ms
	}
	for _, tc := range []struct {
		name string
		sets []MetricSet
		want bool // an error-rate finding on inventory-api
	}{
		{"Micrometer: a 5xx every two minutes at 21 requests/s", []MetricSet{errs("http_server_requests_errors_total", 0.00833), latency(10.5)}, false},
		{"Express counter: 2 errors/s at 20 requests/s", []MetricSet{errs("http_errors_total", 1), latency(10)}, true},
		{"gRPC: 0.3 % of requests failing", []MetricSet{errs("grpc_server_handled_errors_total", 0.015), latency(5)}, false},
		{"no request rates: judged on its own", []MetricSet{errs("http_server_requests_errors_total", 0.5)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := false
			for _, f := range DetectMetrics(tc.sets, w) {
				if f.Kind == KindErrorRate && f.Subject == "inventory-api" {
					got = true
				}
			}
			if got != tc.want {
				t.Errorf("error-rate finding: got %v, want %v", got, tc.want)
			}
		})
	}
}
