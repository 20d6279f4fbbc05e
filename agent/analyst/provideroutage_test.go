package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestProviderOutage: a caller's calls to an outside host whose share of
// failures (the provider's 5xx answers and timeouts) rises from nothing,
// while its calls to another outside provider keep succeeding, are the
// provider's outage, read from a Prometheus client counter by host and
// status, OpenTelemetry's client histogram counts by server.address and
// http.response.status_code, and Istio's requests by destination service;
// no healthy second provider, a second provider failing too, timeouts
// alone, a host of the cluster or a share already high before is not.
func TestProviderOutage(t *testing.T) {
	t0 := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	onset := t0.Add(30 * time.Minute)
	// series of rate v before the onset and after (per minute, an hour).
	ser := func(l evidence.Labels, before, after float64) evidence.Series {
		s := evidence.Series{Labels: l}
		for i := 0; i < 60; i++ {
			t := t0.Add(time.Duration(i) * time.Minute)
			v := before
			if !t.Before(onset) {
				v = after
			}
			s.Points = append(s.Points, evidence.Point{T: t, V: v})
		}
		return s
	}
	type form struct {
		name, metric, class string
		labels              func(host, status string) evidence.Labels
	}
	forms := []form{
		{"prometheus client counter", "http_client_requests_total", MetricRequests, func(h, s string) evidence.Labels {
			return evidence.Labels{"job": "payments", "namespace": "shop", "host": h, "status": s}
		}},
		{"otel client histogram counts", "http_client_request_duration_seconds_count", MetricLatency, func(h, s string) evidence.Labels {
			return evidence.Labels{"service_name": "payments", "server_address": h, "http_response_status_code": s}
		}},
		{"istio requests", "istio_requests_total", MetricRequests, func(h, s string) evidence.Labels {
			return evidence.Labels{"reporter": "source", "source_workload": "payments", "destination_service": h, "response_code": s}
		}},
	}
	type calls struct {
		host, status  string
		before, after float64
	}
	pp, other := "api.payprovider.example.com", "api.cards.example.com"
	cases := []struct {
		name  string
		calls []calls
		want  bool
	}{
		{"503s and timeouts, other provider fine", []calls{{pp, "201", 2, 0.3}, {pp, "503", 0, 1.2}, {pp, "timeout", 0, 0.5}, {other, "200", 3, 3}}, true},
		{"502s only, other provider fine", []calls{{pp, "200", 2, 0.5}, {pp, "502", 0, 1.5}, {other, "200", 3, 3}}, true},
		{"no second provider", []calls{{pp, "201", 2, 0.3}, {pp, "503", 0, 1.2}}, false},
		{"second provider failing too", []calls{{pp, "201", 2, 0.3}, {pp, "503", 0, 1.2}, {other, "200", 3, 1}, {other, "503", 0, 2}}, false},
		{"timeouts alone", []calls{{pp, "201", 2, 0.3}, {pp, "timeout", 0, 1.7}, {other, "200", 3, 3}}, false},
		{"a host of the cluster", []calls{{"ledger.payments.svc.cluster.local", "200", 2, 0.3}, {"ledger.payments.svc.cluster.local", "503", 0, 1.7}, {other, "200", 3, 3}}, false},
		{"failing before too", []calls{{pp, "201", 2, 1}, {pp, "503", 1, 1.2}, {other, "200", 3, 3}}, false},
	}
	line := `2026-06-09T10:31:02.118Z error capture failed body={"name":"INTERNAL_SERVICE_ERROR"} logger=provider status=503 url=https://api.payprovider.example.com/v2/orders/8X1/capture`
	logs := []LogSet{{Source: "payments-7d9f-abcde", Subject: "payments", Namespace: "shop", Templates: []analysis.LogTemplate{{Template: line, Example: line, Count: 9, Incident: 9, FirstSeen: onset}}}}
	for _, fm := range forms {
		for _, c := range cases {
			t.Run(fm.name+"/"+c.name, func(t *testing.T) {
				ms := MetricSet{Name: fm.metric, Class: fm.class, Unit: "/s"}
				for _, k := range c.calls {
					s := ser(fm.labels(k.host, k.status), k.before, k.after)
					if fm.class == MetricRequests {
						ms.Series = append(ms.Series, s)
					} else {
						ms.Requests = append(ms.Requests, s)
					}
				}
				ev := &Gathered{Metrics: []MetricSet{ms}, Logs: logs}
				out := detectProviderOutage(ev, nil)
				if (len(out) > 0) != c.want {
					t.Fatalf("found %d, want %v", len(out), c.want)
				}
				if !c.want {
					return
				}
				f := out[0]
				if f.Subject != "payments" || f.fact("provider") != pp || f.fact("healthy") != other || !f.Time.Equal(onset) || len(f.Evidence) < 3 {
					t.Errorf("finding %s -> %s (healthy %s) at %s, %d evidence", f.Subject, f.fact("provider"), f.fact("healthy"), f.Time, len(f.Evidence))
				}
				d := providerOutage.describe(&Hypothesis{Kind: KindProviderOutage, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
				if !strings.Contains(d, "provider outage") || !strings.Contains(d, pp) || !strings.Contains(d, "status 50") || !strings.Contains(d, "INTERNAL_SERVICE_ERROR") {
					t.Errorf("described %q", d)
				}
			})
		}
	}
}
