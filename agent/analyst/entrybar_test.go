package analyst

import "testing"

func TestDropEntryWobble(t *testing.T) {
	sc := Scope{Service: "catalog-api"}
	tests := []struct {
		name, subject, summary string
		facts                  map[string]string
		dropped                bool
	}{
		{"micrometer mean of one pod, +23%", "catalog-api",
			"http_server_requests_seconds (mean) of pod catalog-api-5b8c7d9f64-qw9t4 rose from 39.4 ms to 48.5 ms at 13:20", nil, true},
		{"istio p99 of the service, +30%", "catalog-api",
			"istio_request_duration_milliseconds p99 of catalog-api rose from 210 ms to 0.27 s at 09:12", nil, true},
		{"ms to seconds, tenfold", "catalog-api",
			"http_request_duration_seconds p95 of catalog-api rose from 120 ms to 1.4 s at 10:02", nil, false},
		{"doubled", "catalog-api",
			"nginx_ingress_controller_request_duration_seconds (mean) of catalog-api rose from 40 ms to 95 ms at 10:02", nil, false},
		{"error share from zero", "catalog-api",
			"error ratio of catalog-api rose from 0% to 4.2% at 10:02", nil, false},
		{"from zero to zero", "catalog-api",
			"catalog_api:error_ratio:5m of catalog-api rose from 0 to 0 at 09:40", nil, true},
		{"error share from zero to 0.03%", "catalog-api",
			"error ratio of catalog-api rose from 0% to 0.03% at 10:02", nil, true},
		{"from zero to a latency", "catalog-api",
			"grpc_server_handling_seconds p99 of catalog-api rose from 0 ms to 850 ms at 10:02", nil, false},
		{"another service's rise", "search-api",
			"http_server_requests_seconds (mean) of search-api rose from 39.4 ms to 48.5 ms at 13:20", nil, false},
		{"the metric detector's own finding (has a baseline)", "catalog-api",
			"latency of catalog-api rose from 39.4 ms to 48.5 ms at 13:20", map[string]string{"baseline": "39.4 ms"}, false},
		{"log template", "catalog-api",
			"catalog-api logged 40 lines of a template new since 13:02 (none before): \"timeout\"", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Finding{Kind: KindLatency, Source: SrcMetrics, Subject: tt.subject, Summary: tt.summary, Facts: tt.facts}
			out := dropEntryWobble([]Finding{f}, sc)
			if got := len(out) == 0; got != tt.dropped {
				t.Fatalf("dropped = %v, want %v", got, tt.dropped)
			}
		})
	}
}
