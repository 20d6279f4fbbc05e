package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestKeepAliveRace reads a proxy's early closes of reused upstream
// connections (nginx's error log as it prints it), names the service
// behind them from the route, and the upstream's idle timeout and the
// change that enabled upstream keepalive when the evidence has them.
func TestKeepAliveRace(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(5 * time.Minute)
	set := func(src, subject string, ls ...string) LogSet {
		s := LogSet{Source: src, Subject: subject, Origin: SrcLogs, Host: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 6, Incident: 6, FirstSeen: at, FirstIncident: at, LastSeen: w.End})
		}
		return s
	}
	errLog := set("api-gateway/error.log", "error",
		`2026-05-06T07:43:26.000000+00:00 gw-02 nginx: 2026/05/06 07:43:26 [error] 2214#2214: *1648933 upstream prematurely closed connection while reading response header from upstream, client: 86.12.175.89, server: api.acme-shop.com, request: "GET /v1/profile/me/addresses HTTP/1.1", upstream: "http://10.0.4.21:3000/v1/profile/me/addresses", host: "api.acme-shop.com"`,
		`2026-05-06T07:44:56.000000+00:00 gw-02 nginx: 2026/05/06 07:44:56 [error] 2214#2214: *1828156 recv() failed (104: Connection reset by peer) while reading response header from upstream, client: 5.148.27.202, server: api.acme-shop.com, request: "GET /v1/profile/me HTTP/1.1", upstream: "http://10.0.4.22:3000/v1/profile/me", host: "api.acme-shop.com"`)
	access := set("api-gateway/access.log", "access",
		`2026-05-06T07:43:26+00:00 gw-02 86.12.175.89 - - "GET /v1/profile/me/addresses HTTP/1.1" 502 157 "-" "Mozilla/5.0" rt=0.003 uct="0.000" urt="0.002" ua="10.0.4.21:3000" us="502"`)
	profile := set("profile-service.log", "profile-service",
		`2026-05-06T07:40:07.000Z info: [profile-01] profile-service 4.2.0 listening on 0.0.0.0:3000 (node v20.12.2, http.Server keepAliveTimeout=5000ms headersTimeout=60000ms)`)
	catalog := set("catalog-service.log", "catalog-service", `2026-05-06T07:40:00.000Z INFO catalog-service started`)
	change := evidence.Change{Timestamp: at.Add(-time.Minute), Service: "api-gateway", Kind: "config", Description: `nginx: reuse upstream connections for all upstreams (keepalive 64; keepalive_timeout 60s; proxy_http_version 1.1; proxy_set_header Connection "")`}
	cases := []struct {
		name    string
		logs    []LogSet
		changes []evidence.Change
		subject string
		says    []string
	}{
		{"early closes after keepalive was enabled", []LogSet{errLog, access, profile, catalog}, []evidence.Change{change}, "profile-service",
			[]string{"idle keep-alive connections to profile-service", "api-gateway", "5000ms", "keepalive was enabled by the config change of api-gateway"}},
		{"the proxy's log alone", []LogSet{errLog, catalog, set("profile-service.log", "profile-service", "2026-05-06T10:00:00.000Z info: GET /v1/profile/me 200 4ms")}, nil, "profile-service",
			[]string{"idle keep-alive connections to profile-service"}},
		{"an upstream that timed out is not a race", []LogSet{set("api-gateway/error.log", "error", `2026/05/06 07:43:26 [error] 2214#2214: *1 upstream timed out (110: Connection timed out) while reading response header from upstream, request: "GET /v1/profile/me HTTP/1.1", upstream: "http://10.0.4.22:3000/v1/profile/me"`)}, nil, "", nil},
	}
	for _, c := range cases {
		fs := detectKeepAliveRace(&Gathered{Logs: c.logs, Changes: c.changes, Window: w, Scope: Scope{Service: "api-gateway"}}, nil)
		if c.subject == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none", c.name, len(fs))
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != c.subject || fs[0].fact("proxy") != "api-gateway" {
			t.Errorf("%s: findings %+v, want one on %s behind api-gateway", c.name, fs, c.subject)
			continue
		}
		h := &Hypothesis{Kind: KindKeepAliveRace, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		d := keepAliveRace.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
}
