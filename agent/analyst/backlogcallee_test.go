package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestMetricConsumerWaits: a growing lag's consumer whose client latency
// metric names the service it calls (Micrometer's client_name, the
// OpenTelemetry semantic conventions' server_address, Istio's
// destination_service_name for the source workload, in milliseconds)
// waits per record on that callee, and the callee's deploy just before
// its calls slowed is named. A callee at its usual pace, a rise below the
// bar, another service's calls and a change after the slowdown are not.
func TestMetricConsumerWaits(t *testing.T) {
	w := testWindow()
	slowAt := w.Start.Add(10 * time.Minute)
	step := func(before, after float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.Before(slowAt) {
				return before * (1 + 0.02*float64(at.Minute()%3))
			}
			return after
		}
	}
	micrometer := evidence.Labels{"__name__": "http_client_requests_seconds_sum", "application": "invoice-worker", "client_name": "vat-rates.tax.svc.cluster.local", "uri": "/v2/rates/{country}"}
	otel := evidence.Labels{"__name__": "http_client_request_duration_seconds_sum", "service_name": "invoice-worker", "server_address": "vat-rates.tax.svc", "http_request_method": "GET"}
	istio := evidence.Labels{"__name__": "istio_request_duration_milliseconds_sum", "reporter": "source", "source_workload": "invoice-worker", "destination_service_name": "vat-rates"}
	other := evidence.Labels{"__name__": "http_client_requests_seconds_sum", "application": "orders-api", "client_name": "vat-rates.tax.svc.cluster.local"}
	deploy := evidence.Change{Timestamp: slowAt.Add(-90 * time.Second), Service: "vat-rates", Kind: "deploy", Description: "vat-rates 2.0.0: drop the rate cache", Revision: "2.0.0"}
	late := evidence.Change{Timestamp: slowAt.Add(30 * time.Minute), Service: "vat-rates", Kind: "config", Description: "vat-rates: replicas 3 -> 6"}
	cases := []struct {
		name    string
		set     MetricSet
		changes []evidence.Change
		callee  string
		change  bool
	}{
		{"micrometer client_name, with the callee's deploy", MetricSet{Name: "http_client_requests_seconds (mean)", Class: MetricLatency, Unit: "s", Series: []evidence.Series{wseries(w, micrometer, step(0.02, 0.7))}},
			[]evidence.Change{deploy}, "vat-rates", true},
		{"opentelemetry server_address", MetricSet{Name: "http_client_request_duration_seconds (mean)", Class: MetricLatency, Unit: "s", Series: []evidence.Series{wseries(w, otel, step(0.03, 0.9))}},
			nil, "vat-rates", false},
		{"istio source workload, milliseconds", MetricSet{Name: "istio_request_duration_milliseconds (mean)", Class: MetricLatency, Series: []evidence.Series{wseries(w, istio, step(25, 650))}},
			[]evidence.Change{late}, "vat-rates", false},
		{"below the bar", MetricSet{Name: "http_client_requests_seconds (mean)", Class: MetricLatency, Unit: "s", Series: []evidence.Series{wseries(w, micrometer, step(0.02, 0.12))}},
			nil, "", false},
		{"the usual pace", MetricSet{Name: "http_client_requests_seconds (mean)", Class: MetricLatency, Unit: "s", Series: []evidence.Series{wseries(w, micrometer, step(0.5, 0.5))}},
			nil, "", false},
		{"another service's calls", MetricSet{Name: "http_client_requests_seconds (mean)", Class: MetricLatency, Unit: "s", Series: []evidence.Series{wseries(w, other, step(0.02, 0.7))}},
			nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := Finding{Kind: KindBacklog, Subject: "invoice-worker", Time: slowAt.Add(8 * time.Minute), Facts: map[string]string{"what": "consumer lag", "group": "invoice-worker"}}
			fs := detectConsumerWaits(&Gathered{Metrics: []MetricSet{c.set}, Changes: c.changes, Window: w}, []Finding{b})
			f, ok := oneFinding(t, fs, c.callee != "")
			if !ok {
				return
			}
			if f.Kind != KindSlowOperation || f.fact("callee") != c.callee || (f.fact("callee_change") != "") != c.change {
				t.Fatalf("%s on %s callee %q change %q", f.Kind, f.Subject, f.fact("callee"), f.fact("callee_change"))
			}
			h := &Hypothesis{Kind: KindBacklog, Subject: b.Subject, Primary: []*Finding{&b}, Support: []*Finding{&f}}
			if !backlogM.related(h, &f) {
				t.Errorf("the consumer's wait is not related to the backlog")
			}
			d := describeBacklog(h)
			if !strings.Contains(d, "each record waits for its call to "+c.callee) || c.change && !strings.Contains(d, "after the vat-rates deploy") {
				t.Errorf("description: %s", d)
			}
		})
	}
}
