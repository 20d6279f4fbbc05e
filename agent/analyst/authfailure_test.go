package analyst

import (
	"strings"
	"testing"
)

func TestAuthFailure(t *testing.T) {
	testLines(t, authFailure, []lineCase{
		{`ERROR stripe charge failed: 401 Unauthorized {"error":{"message":"Expired API Key provided: sk_live_****1234","type":"invalid_request_error"}}`, KindAuth},
		{`psql: error: connection to server on socket "/var/run/postgresql/.s.PGSQL.5432" failed: FATAL:  password authentication failed for user "orders"`, KindAuth},
		{`An error occurred (ExpiredToken) when calling the GetObject operation: The provided token has expired.`, KindAuth},
		{`GET /login 200 4ms`, ""},
		// bare statuses in the forms services log them
		{`{"level":"error","status":403,"msg":"upstream refused the call"}`, KindAuth},
		{`time="2026-11-24T09:38:29Z" level=error msg="call failed" code=401`, KindAuth},
		{`10.1.2.3 - - [24/Nov/2026:09:38:29 +0000] "POST /v1/charge HTTP/1.1" 403 162 "-" "Go-http-client/1.1" error`, KindAuth},
		// milliseconds of a clock time are no status: Redis, logback,
		// Python logging, a log with a comma or colon before them
		{`1:M 24 Nov 2026 09:38:29.403 # Background saving error`, ""},
		{`2026-11-24 10:02:11,401 ERROR [main] o.a.k.c.NetworkClient - Connection to node 2 failed`, ""},
		{`2026-11-24 10:02:11,403 - worker - ERROR - job failed after 3 attempts`, ""},
		{`E1124 10:02:11.401211 1 controller.go:114] error syncing item`, ""},
		{`ERROR request took 1.403 seconds`, ""},
	})
	cases := []struct {
		facts map[string]string
		want  string
	}{
		{map[string]string{"caller": "billing", "credential": "expired", "external": "Stripe", "status": "401", "line": "401 Unauthorized: Expired API Key provided"},
			"the credential (API key/token) that billing uses for the external Stripe API expired: every call is rejected with HTTP 401 (unauthorized)"},
		{map[string]string{"caller": "orders", "line": `FATAL:  password authentication failed for user "orders"`},
			"authentication or authorisation fails in orders (credentials rejected)"},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindAuth, Subject: "billing", Primary: []*Finding{{Kind: KindAuth, Subject: "billing", Facts: c.facts}}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("description %q lacks %q", d, c.want)
		}
		if len(recommend(h, Scope{})) == 0 {
			t.Errorf("no recommendations")
		}
	}
}
