package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestClientSurge names the one client whose requests drive a service's
// load, from the request lines of ingress-nginx (a partner's sync crawler
// by its User-Agent), Envoy (a script by its address) and a service's own
// logfmt request log (a client id), when the service's load shows rising.
// A mix of clients that only grew together, or a large client that was as
// large before, is not this cause.
func TestClientSurge(t *testing.T) {
	nginx := func(ip, agent string) string {
		return fmt.Sprintf(`%s - - [21/Apr/2026:13:45:00 +0000] "GET /api/v2/search?q=desk+lamp&page=7 HTTP/2.0" 200 8750 "-" "%s" 107 0.088 [search-search-api-8080] [] 10.70.10.158:8080 8336 0.087 200 1eef`, ip, agent)
	}
	envoy := func(ip string) string {
		return fmt.Sprintf(`[2026-04-21T13:45:00.000Z] "POST /v1/quotes HTTP/1.1" 200 - 312 1204 41 40 "%s" "python-requests/2.31.0" "7c1e0f4e-2b7a-4c55-9a1e-22c1d4b0e8aa" "pricing.internal" "10.1.4.17:8080"`, ip)
	}
	logfmt := func(client string) string {
		return fmt.Sprintf(`ts=2026-04-21T13:45:00Z level=info msg=request method=GET path=/v1/stock/4471 status=200 duration_ms=12 client_id=%s`, client)
	}
	browsers := []string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/124.0", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) Safari/604.1", "okhttp/4.12.0", "shop-ios/8.12.0 (iPhone15,3; iOS 17.4.1)"}
	// lines spreads base lines over the baseline and inc lines over the
	// window, made by mk(i).
	lines := func(base, inc int, mkBase, mkInc func(i int) string) []evidence.LogLine {
		var out []evidence.LogLine
		for i := 0; i < base; i++ {
			out = append(out, evidence.LogLine{Time: win.BaselineStart.Add(time.Duration(i) * time.Hour / time.Duration(base)), Text: mkBase(i)})
		}
		for i := 0; i < inc; i++ {
			out = append(out, evidence.LogLine{Time: win.Start.Add(time.Duration(i) * time.Hour / time.Duration(inc)), Text: mkInc(i)})
		}
		return out
	}
	mixed := func(i int) string { return nginx(fmt.Sprintf("10.20.%d.%d", i%7, i%200), browsers[i%len(browsers)]) }
	crawler := func(i int) string {
		if i%4 == 0 {
			return mixed(i)
		}
		return nginx(fmt.Sprintf("203.0.113.%d", 45+i%3), "acme-catalog-sync/2.4.0 (+https://partners.acme-retail.example/sync)")
	}
	hpa := Finding{Kind: KindHPAMax, Subject: "search-api", Time: win.Start.Add(10 * time.Minute), Weight: 0.9}
	cases := []struct {
		name    string
		set     LogSet
		found   []Finding
		subject string // "" for no finding
		want    []string
	}{
		{"ingress-nginx: a partner's sync crawler by its User-Agent", LogSet{Source: "ingress-nginx", Subject: "ingress-nginx", Origin: SrcLogs, Lines: lines(60, 400, mixed, crawler)},
			[]Finding{hpa}, "search-api", []string{"acme-catalog-sync/2.4.0", "none in the baseline", "203.0.113.45", "GET /api/v2/search"}},
		{"Envoy: one address's script, the rate rising in the log itself", LogSet{Source: "pricing-envoy", Subject: "pricing", Origin: SrcLogs, Lines: lines(40, 300,
			func(i int) string { return envoy(fmt.Sprintf("10.9.%d.%d", i%5, i%50)) },
			func(i int) string {
				if i%5 == 0 {
					return envoy(fmt.Sprintf("10.9.%d.%d", i%5, i%50))
				}
				return envoy("198.51.100.23")
			})}, nil, "pricing", []string{"address \"198.51.100.23\"", "POST /v1/quotes", "rose from"}},
		{"logfmt: a client id", LogSet{Source: "stock-api", Subject: "stock-api", Origin: SrcLogs, Lines: lines(50, 400,
			func(i int) string { return logfmt([]string{"web", "ios", "android"}[i%3]) },
			func(i int) string {
				return logfmt([]string{"web", "ios", "android", "wms-sync", "wms-sync", "wms-sync", "wms-sync", "wms-sync"}[i%8])
			})},
			nil, "stock-api", []string{"client id \"wms-sync\""}},
		{"the same mix of clients, only more of them", LogSet{Source: "ingress-nginx", Subject: "ingress-nginx", Origin: SrcLogs, Lines: lines(60, 400, mixed, mixed)},
			[]Finding{hpa}, "", nil},
		{"a large client that was as large before", LogSet{Source: "ingress-nginx", Subject: "ingress-nginx", Origin: SrcLogs, Lines: lines(60, 400, crawler, crawler)},
			[]Finding{hpa}, "", nil},
		{"a new client, but the load did not rise", LogSet{Source: "ingress-nginx", Subject: "ingress-nginx", Origin: SrcLogs, Lines: lines(300, 300, mixed, crawler)},
			nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{c.set}, Window: win, Scope: Scope{Service: c.subject}}
			f := onlyFinding(t, detectClientSurge(ev, c.found), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, append(c.want, "one client drives the load")...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Rate-limit or block") {
				t.Errorf("first recommendation: %+v", recs)
			}
		})
	}
	if p := loadLinePattern(Scope{Message: "KubeHpaMaxedOut is firing for checkout, what is driving the traffic?"}); p == "" {
		t.Error("a load question reads no request lines")
	}
	if p := loadLinePattern(Scope{Message: "why does orders-api crash on start?"}); p != "" {
		t.Errorf("a crash question reads request lines: %q", p)
	}
}
