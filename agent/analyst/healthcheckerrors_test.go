package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestHealthCheckErrors checks that an error question is answered from the
// access log: 5xx answers all to a health-check path or a synthetic
// monitor while users' requests succeed are the check's; users' own 5xx,
// or too few errors, are not.
func TestHealthCheckErrors(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 2, 30, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	tmpl := func(n int, line string) analysis.LogTemplate {
		return analysis.LogTemplate{Example: line, Count: n, Incident: n, FirstSeen: t0}
	}
	user := tmpl(1944, `2026-11-21T02:45:00.000000000Z 108.177.14.228 - - [21/Nov/2026:02:45:00 +0000] "GET /products/wool-throw-blanket HTTP/2.0" 200 27800 "https://www.lumenhome.eu/" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36" 34 0.182 [storefront-web-frontend-3000] [] 10.80.3.205:3000 28561 0.181 200 a2710de0f9eb02cfce1cf7ce46cd0473`)
	check := tmpl(1621, `2026-11-21T02:45:00.000000000Z 13.56.152.183 - - [21/Nov/2026:02:45:00 +0000] "GET /healthz/deep HTTP/1.1" 503 187 "-" "Checkly/1.0 (https://www.checklyhq.com)" 214 2.004 [storefront-web-frontend-3000] [] 10.80.3.205:3000 187 2.004 503 3f524300dbfb1ba380cffeef5810943a`)
	userErr := tmpl(400, `2026-11-21T02:46:00.000000000Z 108.177.14.229 - - [21/Nov/2026:02:46:00 +0000] "POST /checkout HTTP/2.0" 502 150 "https://www.lumenhome.eu/cart" "Mozilla/5.0 (Macintosh)" 40 0.012 [storefront-web-frontend-3000] [] 10.80.3.205:3000 0 0.011 502 b1`)
	sc := Scope{Service: "web-frontend", Message: "FrontendErrorRateHigh fired for web-frontend at 03:12. Is it real? Are customers actually getting errors?"}
	cases := []struct {
		name      string
		templates []analysis.LogTemplate
		sc        Scope
		want      bool
	}{
		{"all 5xx to the health check", []analysis.LogTemplate{user, check}, sc, true},
		{"users get 5xx too", []analysis.LogTemplate{user, check, userErr}, sc, false},
		{"a latency question", []analysis.LogTemplate{user, check}, Scope{Service: "web-frontend", Message: "Why is web-frontend slow?"}, false},
		{"a handful of errors", []analysis.LogTemplate{user, tmpl(5, check.Example)}, sc, false},
	}
	for _, c := range cases {
		ev := &Gathered{Logs: []LogSet{{Source: "ingress-nginx-controller", Subject: "ingress-nginx-controller", Origin: SrcLogs, Templates: c.templates}}, Window: w, Scope: c.sc}
		fs := detectHealthCheckErrors(ev, nil)
		if got := len(fs) == 1; got != c.want {
			t.Errorf("%s: findings %+v, want one: %v", c.name, fs, c.want)
			continue
		}
		if c.want {
			f := fs[0]
			if f.Subject != "web-frontend" || f.fact("route") != "/healthz/deep" || f.fact("agent") != "Checkly" || f.fact("user_errors") != "0" || len(f.Evidence) != 2 {
				t.Errorf("%s: finding %s %v", c.name, f.Subject, f.Facts)
			}
		}
	}
}
