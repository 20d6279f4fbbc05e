package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestLoadSurgeNamesOOMTrigger(t *testing.T) {
	w := testWindow()
	surge := w.Start.Add(10 * time.Minute)
	conns := wseries(w, evidence.Labels{"pod": "presence-gateway-6c9d7f5b8k-4wrnm", "namespace": "rt"}, func(t time.Time) float64 {
		if t.Before(surge) {
			return 3000
		}
		return 13500
	})
	flat := wseries(w, evidence.Labels{"service": "search"}, func(time.Time) float64 { return 100 })
	sets := []MetricSet{
		{Name: "presence_ws_connections_active", Class: MetricSaturation, Series: []evidence.Series{conns}},
		{Name: "http_requests_total", Class: MetricRequests, Unit: "/s", Series: []evidence.Series{flat}},
	}
	fs := DetectLoadSurge(sets, w)
	if len(fs) != 1 || fs[0].Subject != "presence-gateway" || fs[0].fact("ratio") != "4.5" {
		t.Fatalf("load surge findings: %+v", fs)
	}
	oom := Finding{Kind: KindOOMKilled, Subject: "presence-gateway", Object: "pod rt/presence-gateway-6c9d7f5b8k-4wrnm", Time: surge.Add(8 * time.Minute),
		Weight: 0.95, Source: SrcKubernetes, Facts: map[string]string{"memory_limit": "1Gi"}}
	a := Reason([]Finding{oom, fs[0]}, Scope{Service: "presence-gateway", Window: w})
	d := describe(a.Hypotheses[0], Scope{})
	if !strings.Contains(d, "load surge") || !strings.Contains(d, "4.5× connections") {
		t.Errorf("OOM description should name the connection surge: %s", d)
	}
	for name, want := range map[string]bool{"presence_ws_connections_active": true, "http_requests_total": true, "db_pool_active_connections": false,
		"http_request_errors_total": false, "redis_connected_clients": true, "nginx_ingress_controller_request_duration_seconds_sum": false} {
		if got := IsLoadMetric(name); got != want {
			t.Errorf("IsLoadMetric(%q) = %v, want %v", name, got, want)
		}
	}
}

// Request counters whose names do not end in _total are read as rates
// when their series only grow; a gauge of requests in flight is not.
func TestRequestCounterLike(t *testing.T) {
	for name, want := range map[string]string{
		"nginx_ingress_controller_requests":                     MetricRequests,
		"envoy_cluster_upstream_rq_total":                       MetricRequests,
		"http_server_inflight_requests":                         "",
		"nginx_ingress_controller_nginx_process_requests_total": MetricRequests,
	} {
		if got, _ := ClassifyMetric(name); got != want && !(want == "" && got != MetricRequests) {
			t.Errorf("ClassifyMetric(%q) = %q, want %q", name, got, want)
		}
	}
	pts := func(vs ...float64) evidence.Series {
		s := evidence.Series{}
		for i, v := range vs {
			s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i) * time.Minute), V: v})
		}
		return s
	}
	if !counterLike([]evidence.Series{pts(100, 180, 260, 3, 90)}) {
		t.Error("a counter with a reset not read as a counter")
	}
	if counterLike([]evidence.Series{pts(12, 15, 9, 14, 11)}) {
		t.Error("a gauge read as a counter")
	}
}
