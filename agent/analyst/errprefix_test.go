package analyst

import "testing"

// A wrapped error whose first link names the callee names the dependency;
// a one-word library prefix does not.
func TestDependencyTargetErrorPrefix(t *testing.T) {
	cases := []struct{ line, want string }{
		{`{"time":"2026-03-02T10:11:12Z","level":"ERROR","msg":"quote failed","err":"rate-card: 429 Too Many Requests","status":503}`, "rate-card"},
		{`time=2026-03-02T10:11:12Z level=error msg="lookup failed" error="user-profile.accounts.svc.cluster.local: 503 Service Unavailable"`, "user-profile"},
		{`{"level":"warn","ts":1772446272.1,"msg":"call failed","error":"geo-coder: rpc error: code = ResourceExhausted desc = rate limited"}`, "geo-coder"},
		// Library and operation prefixes are not callees.
		{`{"level":"error","msg":"get member","err":"sql: acquire conn: context deadline exceeded"}`, ""},
		{`level=error msg="publish failed" err="context deadline exceeded"`, ""},
	}
	for _, c := range cases {
		if got := DependencyTarget(c.line); got != c.want {
			t.Errorf("DependencyTarget(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// An Envoy sidecar's inbound access log line is the logging service
// answering, an outbound one a call it made.
func TestEnvoyInbound(t *testing.T) {
	cases := []struct {
		line string
		want bool
	}{
		{`[2026-03-02T10:40:54.191Z] "POST /v1/check HTTP/1.1" 429 RL local_rate_limited - "-" 410 18 0 - "-" "Go-http-client/1.1" "2f06ca04-0d5c" "geo.shop.svc.cluster.local:8000" "-" inbound|8000|| - 10.2.1.16:8000 10.2.1.212:34147 outbound_.8000_._.geo.shop.svc.cluster.local default`, true},
		{`[2026-03-02T10:40:54.641Z] "GET /healthz HTTP/1.1" 200 - via_upstream - "-" 0 2 1 1 "-" "kube-probe/1.29" "34c5eb94" "10.2.1.44:8080" "10.2.1.44:8080" inbound|8080|http|orders.shop.svc.cluster.local 127.0.0.6:56565 10.2.1.44:8080 10.2.0.1:54620 - default`, true},
		{`[2026-03-02T10:40:55.112Z] "POST /v1/check HTTP/1.1" 429 - via_upstream - "-" 309 18 3 2 "-" "Go-http-client/1.1" "4d862835" "geo.shop.svc.cluster.local:8000" "10.2.1.44:8000" outbound|8000||geo.shop.svc.cluster.local 10.2.3.9:41234 10.96.4.2:8000 10.2.3.9:55120 - default`, false},
	}
	for _, c := range cases {
		if got := envoyInboundRE.MatchString(c.line); got != c.want {
			t.Errorf("envoyInbound(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}
