package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

const hpaPage = `$ kubectl describe hpa checkout -n shop
Name:                                                  checkout
Namespace:                                             shop
CreationTimestamp:                                     Fri, 16 Jan 2026 09:47:03 +0000
Reference:                                             Deployment/checkout
Metrics:                                               ( current / target )
  resource cpu on pods  (as a percentage of request):  <unknown> / 70%
Min replicas:                                          3
Max replicas:                                          20
Deployment pods:                                       3 current / 3 desired
Events:
  Type     Reason                        Age                  From                       Message
  ----     ------                        ----                 ----                       -------
%s
`

// TestHPABlind: an autoscaler whose CPU utilization is undefined because
// a container has no CPU request does not scale; a few "no metrics
// returned" events while new pods start are noise, and a long run of them
// counts.
func TestHPABlind(t *testing.T) {
	now := time.Date(2026, 8, 19, 14, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-90 * time.Minute), End: now}
	cases := []struct {
		name, events string
		want         []string // nil: no finding
	}{
		{"a sidecar without a cpu request", `  Warning  FailedGetResourceMetric       15s (x371 over 93m)  horizontal-pod-autoscaler  failed to get cpu utilization: missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m
  Warning  FailedComputeMetricsReplicas  15s (x371 over 93m)  horizontal-pod-autoscaler  invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m`,
			[]string{"cannot compute its metric", "does not scale checkout out", "container cloud-sql-proxy has no cpu request"}},
		{"new pods without metrics yet", `  Warning  FailedGetResourceMetric  38m (x4 over 39m)  horizontal-pod-autoscaler  failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API`, nil},
		{"the metrics API down for an hour", `  Warning  FailedGetResourceMetric  20s (x240 over 62m)  horizontal-pod-autoscaler  failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io)`,
			[]string{"cannot compute its metric", "unable to handle the request"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(strings.Replace(hpaPage, "%s", c.events, 1)), now)
			var got []Finding
			for _, f := range DetectEvents(res.Events, nil, w) {
				if f.Kind == KindHPABlind {
					got = append(got, f)
				}
			}
			if c.want == nil {
				if len(got) != 0 {
					t.Fatalf("findings %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Subject != "checkout" {
				t.Fatalf("findings %+v from %d events", got, len(res.Events))
			}
			h := &Hypothesis{Kind: KindHPABlind, Subject: got[0].Subject, Primary: []*Finding{&got[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

// TestHPABlindMetricRenamed: a custom metric the adapter cannot find is
// followed to its source: the counter series of the workload that stopped
// while another began (renamed), or, without the series, the change
// before the failure to how the workload exports its metrics. A change
// of other content, or of another workload, is not named.
func TestHPABlindMetricRenamed(t *testing.T) {
	onset := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	stop := onset.Add(-70 * time.Minute)
	pts := func(from, to time.Time) []evidence.Point {
		var p []evidence.Point
		for t := from; !t.After(to); t = t.Add(time.Minute) {
			p = append(p, evidence.Point{T: t, V: 1})
		}
		return p
	}
	start, end := onset.Add(-3*time.Hour), onset.Add(time.Hour)
	msgs := []string{
		"unable to get metric http_requests_per_second: unable to fetch metrics from custom metrics API: the server could not find the metric http_requests_per_second for pods",
		"failed to get pods metric value: unable to get metric http_requests_per_second: unable to fetch metrics from custom metrics API: the server could not find the metric http_requests_per_second for pods",
	}
	series := []MetricSet{
		{Name: "http_requests_total", Series: []evidence.Series{{Labels: evidence.Labels{"namespace": "shop", "pod": "orders-6b8c9d7f44-fq8lz"}, Points: pts(start, stop)}}},
		{Name: "http_server_requests_seconds_count", Series: []evidence.Series{{Labels: evidence.Labels{"service": "orders", "uri": "/orders"}, Points: pts(stop.Add(time.Minute), end)}}},
		{Name: "process_cpu_seconds_total", Series: []evidence.Series{{Labels: evidence.Labels{"job": "orders"}, Points: pts(start, end)}}},
	}
	deploy := evidence.Change{Service: "orders", Kind: "deploy", Timestamp: stop, Description: "orders 4.0.0: move to the OpenTelemetry SDK, drop legacy metric names"}
	other := evidence.Change{Service: "orders", Kind: "config", Timestamp: stop.Add(-20 * time.Minute), Description: "payment timeout 2s -> 4s"}
	elsewhere := evidence.Change{Service: "cart", Kind: "deploy", Timestamp: stop, Description: "cart 2.0: new Prometheus metric names"}
	for _, msg := range msgs {
		// The series say it.
		f := Finding{Kind: KindHPABlind, Subject: "orders", Time: onset, Facts: map[string]string{"message": msg}}
		metricRenamed(&Gathered{Metrics: series, Earlier: []evidence.Change{deploy, other}}, &f)
		if f.fact("source_metric") != "http_requests_total" || f.fact("successor") != "http_server_requests_seconds_count" || !strings.Contains(f.fact("renamed_by"), "4.0.0") {
			t.Errorf("series: facts %v", f.Facts)
		}
		h := &Hypothesis{Kind: KindHPABlind, Subject: "orders", Primary: []*Finding{&f}}
		if d := describe(h, Scope{}); !strings.Contains(d, "http_requests_total, stopped for orders") || !strings.Contains(d, "renamed") {
			t.Errorf("series: description %s", d)
		}
		// Only the change says it.
		g := Finding{Kind: KindHPABlind, Subject: "orders", Time: onset, Facts: map[string]string{"message": msg}}
		metricRenamed(&Gathered{Earlier: []evidence.Change{deploy, other, elsewhere}}, &g)
		if g.fact("source_metric") != "" || !strings.Contains(g.fact("metrics_change"), "OpenTelemetry") {
			t.Errorf("change: facts %v", g.Facts)
		}
		// Nothing about metrics changed: nothing is said.
		n := Finding{Kind: KindHPABlind, Subject: "orders", Time: onset, Facts: map[string]string{"message": msg}}
		metricRenamed(&Gathered{Earlier: []evidence.Change{other, elsewhere}}, &n)
		if n.fact("metrics_change") != "" || n.fact("source_metric") != "" {
			t.Errorf("unrelated changes: facts %v", n.Facts)
		}
	}
	// A missing CPU request is not a missing metric.
	f := Finding{Kind: KindHPABlind, Subject: "orders", Time: onset, Facts: map[string]string{"message": "failed to get cpu utilization: missing request for cpu in container istio-proxy of Pod orders-6b8c9d7f44-fq8lz"}}
	metricRenamed(&Gathered{Earlier: []evidence.Change{deploy}}, &f)
	if f.fact("metrics_change") != "" {
		t.Errorf("cpu request: facts %v", f.Facts)
	}
}
