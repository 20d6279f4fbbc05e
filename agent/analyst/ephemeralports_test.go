package analyst

import (
	"strings"
	"testing"
)

func TestEphemeralPorts(t *testing.T) {
	testLines(t, ephemeralPorts, []lineCase{
		{`2026/11/24 14:04:17 [crit] 31#31: *482110 connect() to 10.42.2.19:8080 failed (99: Cannot assign requested address) while connecting to upstream, client: 10.20.0.14, server: api.example.com, request: "GET /v1/quotes?zip=10000 HTTP/1.1", upstream: "http://10.42.2.19:8080/v1/quotes?zip=10000", host: "api.example.com"`, KindEphemeralPorts},
		{`dial tcp 10.0.4.12:5432: connect: cannot assign requested address`, KindEphemeralPorts},
		{`[2026-11-24 14:05:01.220][1][warning][upstream] connect failed: EADDRNOTAVAIL`, KindEphemeralPorts},
		{`2026/11/24 14:04:17 [error] 31#31: *1 connect() failed (111: Connection refused) while connecting to upstream`, KindConnRefused},
		{`GET /v1/quotes 200 12ms`, ""},
	})
	cases := []struct{ line, want string }{
		{`client: 10.20.0.14, server: api.example.com, request: "GET /v1/quotes?zip=10000 HTTP/1.1"`, "quotes"},
		{`request: "POST /api/v2beta1/orders/123 HTTP/1.1"`, "orders"},
		{`request: "GET / HTTP/1.1"`, ""},
		{`connect() failed (99: Cannot assign requested address)`, ""},
	}
	for _, c := range cases {
		if got := proxiedService(c.line); got != c.want {
			t.Errorf("proxiedService(%q) = %q, want %q", c.line, got, c.want)
		}
	}
	for in, want := range map[string]string{"edge-nginx-error": "edge-nginx", "edge-nginx-access": "edge-nginx", "apache_error": "apache", "payments-api": "payments-api", "-error": "-error",
		"pricing-engine-gc": "pricing-engine", "ledger_gc": "ledger"} {
		if got := trimLogStream(in); got != want {
			t.Errorf("trimLogStream(%q) = %q, want %q", in, got, want)
		}
	}
	h := &Hypothesis{Kind: KindEphemeralPorts, Subject: "edge-nginx", Primary: []*Finding{{Kind: KindEphemeralPorts, Subject: "edge-nginx",
		Facts: map[string]string{"line": "connect() to 10.42.2.19:8080 failed (99: Cannot assign requested address) while connecting to upstream"}}}}
	if d := describe(h, Scope{}); !strings.Contains(d, "edge-nginx has run out of ephemeral ports") || !strings.Contains(d, "TIME_WAIT") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "keepalive") {
		t.Errorf("recommendations %v", recs)
	}
}
