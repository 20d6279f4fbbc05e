package analyst

import "testing"

func TestParseRequestLine(t *testing.T) {
	cases := []struct {
		name, line string
		want       requestLine
	}{
		{"Envoy default format",
			`[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80"`,
			requestLine{Method: "POST", Route: "/api/v1/locations", Status: 204, Duration: 0.226, Host: "locations", Upstream: "10.0.2.1:80", Client: "10.0.35.28"}},
		{"Envoy, unbracketed time, cluster as upstream, upstream timeout",
			`2026-11-22T09:58:26.557Z "GET /v1/manifests/export?depot=DEP-35&date=2026-11-22 HTTP/1.1" 504 UT 0 24 15000 - "203.0.113.232" "harbourline-sdk-python/4.3.1" "efa6b517-f34c-7b69-66fa-b48cd705424a" "api.harbourline.io" "manifest-exporter"`,
			requestLine{Method: "GET", Route: "/v1/manifests/export", Status: 504, Flags: "UT", Duration: 15, Host: "api.harbourline.io", Upstream: "manifest-exporter", Client: "203.0.113.232", Agent: "harbourline-sdk-python/4.3.1"}},
		{"Istio sidecar format",
			`[2020-11-25T21:26:18.409Z] "GET /status/418 HTTP/1.1" 418 - via_upstream - "-" 0 135 4 4 "-" "curl/7.73.0-DEV" "84961386-6d84-929d-98bd-c5aee93b5c88" "httpbin:8000" "10.44.1.27:80" outbound|8000||httpbin.foo.svc.cluster.local 10.44.1.23:37652 10.0.45.184:8000 10.44.1.23:46520 - default`,
			requestLine{Method: "GET", Route: "/status/{id}", Status: 418, Duration: -1, Upstream: "httpbin", Agent: "curl/7.73.0-DEV"}},
		{"Istio with a response flag",
			`[2024-02-01T10:00:00.000Z] "POST /cart/checkout HTTP/1.1" 503 UF upstream_reset_before_response_started{connection_failure} - "-" 0 91 2 - "-" "Go-http-client/1.1" "5b1e" "payments:8080" "-" outbound|8080||payments.shop.svc.cluster.local - 10.96.0.12:8080 10.1.2.3:50412 - default`,
			requestLine{Method: "POST", Route: "/cart/checkout", Status: 503, Flags: "UF", Duration: -1, Upstream: "payments", Agent: "Go-http-client/1.1"}},
		{"nginx combined",
			`203.0.113.7 - - [22/Nov/2026:10:05:35 +0000] "GET /v1/manifests/export?depot=DEP-21 HTTP/1.1" 504 167 "-" "curl/8.5.0"`,
			requestLine{Method: "GET", Route: "/v1/manifests/export", Status: 504, Duration: -1, Client: "203.0.113.7", Agent: "curl/8.5.0"}},
		{"ingress-nginx",
			`192.168.49.1 - - [10/Mar/2024:12:00:01 +0000] "GET /api/orders/1234 HTTP/1.1" 502 150 "-" "Mozilla/5.0" 389 0.002 [shop-orders-api-8080] [] 10.244.0.12:8080 0 0.002 502 7c9a1e2b3c4d`,
			requestLine{Method: "GET", Route: "/api/orders/{id}", Status: 502, Duration: 0.002, Upstream: "shop-orders-api-8080", Client: "192.168.49.1", Agent: "Mozilla/5.0"}},
		{"proxy line with key=value timings",
			`2026-11-23T12:22:52.096Z 10.8.0.234 "POST /v1/quotes HTTP/1.1" 200 2478 rt=0.085 urt=0.083 upstream=quoting-quote-service-8080 host=api.brightmove-insure.com`,
			requestLine{Method: "POST", Route: "/v1/quotes", Status: 200, Duration: 0.085, Upstream: "quoting-quote-service-8080", Host: "api.brightmove-insure.com"}},
		{"logfmt request log",
			`ts=2026-03-01T10:00:00Z level=info msg="request done" method=GET path=/v1/shipments/SHP-1702635 status=503 duration_ms=812 upstream=shipment-db`,
			requestLine{Method: "GET", Route: "/v1/shipments/{id}", Status: 503, Duration: 0.812, Upstream: "shipment-db"}},
		{"JSON request log",
			`{"time":"2026-03-01T10:00:00Z","level":"warn","msg":"request","method":"PUT","path":"/v2/carts/7f9c2ab4-1d2e-4c5b-9a8f-0e1d2c3b4a59/items","status":500,"latency":"1.5s"}`,
			requestLine{Method: "PUT", Route: "/v2/carts/{id}/items", Status: 500, Duration: 1.5}},
		{"plain service line",
			`2026-11-20T08:39:12.907Z INFO  POST /v1/sms 503 5003ms tenant=acme-bank channel=otp`,
			requestLine{Method: "POST", Route: "/v1/sms", Status: 503, Duration: 5.003}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := parseRequestLine(c.line)
			if !ok {
				t.Fatalf("not read as a request: %s", c.line)
			}
			r.Path = ""
			if r != c.want {
				t.Errorf("got  %+v\nwant %+v", r, c.want)
			}
		})
	}
	for _, l := range []string{
		`2026-11-20T08:39:07.881502+00:00 [info] <0.488.0> Free disk space is insufficient.`,
		`ERROR publish sms.outbound: confirm timeout after 5000ms (connection blocked by broker)`,
	} {
		if r, ok := parseRequestLine(l); ok {
			t.Errorf("%q read as a request: %+v", l, r)
		}
	}
}

func TestRouteOf(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/tracking/7624540":              "/v1/tracking/{id}",
		"/v1/quotes/Q-319781?x=1":           "/v1/quotes/{id}",
		"/api/v2/users/me":                  "/api/v2/users/me",
		"/v1/manifests/export?depot=DEP-35": "/v1/manifests/export",
		"/reports/2026-11-22/summary":       "/reports/{id}/summary",
		"/objects/5f2b3c4d5e6f7a8b9c0d1e2f": "/objects/{id}",
		"/healthz":                          "/healthz",
		"/static/app.3f9a1c.js":             "/static/{id}",
		"/v3/accounts/a1b2c3d4-0000-4000-8000-123456789abc/limits": "/v3/accounts/{id}/limits",
	} {
		if got := routeOf(in); got != want {
			t.Errorf("routeOf(%q) = %q, want %q", in, got, want)
		}
	}
}
