package analyst

import "testing"

func TestDropEntryWobble(t *testing.T) {
	sc := Scope{Service: "catalog-api"}
	tests := []struct {
		name    string
		f       Finding
		dropped bool
	}{
		{"micrometer mean of one pod, +23%", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "http_server_requests_seconds (mean) of pod catalog-api-5b8c7d9f64-qw9t4 rose from 39.4 ms to 48.5 ms at 13:20"}, true},
		{"istio p99 of the service, +30%", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "istio_request_duration_milliseconds p99 of catalog-api rose from 210 ms to 0.27 s at 09:12"}, true},
		{"ms to seconds, tenfold", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "http_request_duration_seconds p95 of catalog-api rose from 120 ms to 1.4 s at 10:02"}, false},
		{"doubled", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "nginx_ingress_controller_request_duration_seconds (mean) of catalog-api rose from 40 ms to 95 ms at 10:02"}, false},
		{"error share from zero", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "error ratio of catalog-api rose from 0% to 4.2% at 10:02"}, false},
		{"from zero to zero", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "catalog_api:error_ratio:5m of catalog-api rose from 0 to 0 at 09:40"}, true},
		{"error share from zero to 0.03%", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "error ratio of catalog-api rose from 0% to 0.03% at 10:02"}, true},
		{"from zero to a latency", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "grpc_server_handling_seconds p99 of catalog-api rose from 0 ms to 850 ms at 10:02"}, false},
		{"another service's rise", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "search-api",
			Summary: "http_server_requests_seconds (mean) of search-api rose from 39.4 ms to 48.5 ms at 13:20"}, false},
		{"the metric detector's own finding (has a baseline)", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "latency of catalog-api rose from 39.4 ms to 48.5 ms at 13:20", Facts: map[string]string{"baseline": "39.4 ms"}}, false},
		{"log template", Finding{Kind: KindLatency, Source: SrcMetrics, Subject: "catalog-api",
			Summary: "catalog-api logged 40 lines of a template new since 13:02 (none before): \"timeout\""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := dropEntryWobble([]Finding{tt.f}, sc)
			if got := len(out) == 0; got != tt.dropped {
				t.Fatalf("dropped = %v, want %v", got, tt.dropped)
			}
		})
	}
}
