package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestLBHealthCheck reads a load balancer's own log of its health checks
// (HAProxy's syslog lines as it prints them): every server of a backend
// marked DOWN by the check is the check's failure, with the reason and the
// servers' answers to the health path; one server down is not.
func TestLBHealthCheck(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(13 * time.Minute)
	lines := func(src string, ls ...string) LogSet {
		set := LogSet{Source: src, Subject: subjectOfSource(src), Origin: SrcLogs, HasBaseline: true}
		for i, l := range ls {
			set.Templates = append(set.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 3, Incident: 3, FirstSeen: at.Add(time.Duration(i) * time.Minute), FirstIncident: at.Add(time.Duration(i) * time.Minute), LastSeen: w.End})
		}
		return set
	}
	down := []string{
		`2026-09-01T09:13:21.067000+00:00 lb-01 haproxy[2211]: [WARNING]  (2211) : Server be_partner_api/app-01 is DOWN, reason: Layer7 wrong status, code: 404, info: "Not Found", check duration: 5ms. 2 active and 0 backup servers left. 3 sessions active, 0 requeued, 0 remaining in queue.`,
		`2026-09-01T09:15:10.691000+00:00 lb-01 haproxy[2211]: [WARNING]  (2211) : Server be_partner_api/app-02 is DOWN, reason: Layer7 wrong status, code: 404, info: "Not Found", check duration: 5ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`,
		`2026-09-01T09:17:04.763000+00:00 lb-01 haproxy[2211]: [ALERT]    (2211) : backend 'be_partner_api' has no server available!`,
	}
	app := lines("app-01/partner-api.log", `2026-09-01T09:13:14.059Z DEBUG 4410 --- [partner-api] [nio-8080-exec-2] c.a.partner.web.RequestLog               : GET /healthz 404 1ms remote=10.30.0.5`)
	oneDown := lines("haproxy.log", `2026-09-01T08:21:13.000000+00:00 lb-01 haproxy[2211]: [WARNING]  (2211) : Server be_webhooks/hook-02 is DOWN, reason: Layer4 timeout, check duration: 2001ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`)
	cases := []struct {
		name    string
		logs    []LogSet
		subject string
		says    []string
	}{
		{"every server down on a 404 health check", []LogSet{lines("haproxy.log", down...), app}, "partner-api",
			[]string{"health check fails on every server of partner-api", "be_partner_api", "Layer7 wrong status, code 404", "no server available", "/healthz with 404"}},
		{"two of three down, no answer logged", []LogSet{lines("haproxy.log", down[:2]...)}, "partner-api", []string{"fails on servers of partner-api", "app-01, app-02"}},
		{"one server down is that server's problem", []LogSet{oneDown}, "", nil},
		{"nginx with no live upstream", []LogSet{lines("nginx/error.log", `2026/09/01 09:17:05 [error] 31#31: *8812 no live upstreams while connecting to upstream, client: 35.158.201.6, server: partners.example.com, request: "GET /v2/orders HTTP/1.1", upstream: "http://partner_api/v2/orders", host: "partners.example.com"`)}, "partner-api",
			[]string{"health check fails on every server of partner-api", "partner_api", "no server available"}},
		{"Envoy with no healthy upstream", []LogSet{lines("envoy.log", `[2026-09-01T09:17:05.120Z] "GET /v2/orders HTTP/1.1" 503 UH 0 19 0 - "35.158.201.6" "curl/8.5" "b1c2" "partners.example.com" "-" upstream_cluster=partner-api no healthy upstream`)}, "partner-api",
			[]string{"every server of partner-api"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectLBHealthCheck(&Gathered{Logs: c.logs, Window: w, Scope: Scope{Service: "partner-api"}}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindLBHealthCheck, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.says...)
		})
	}
}
