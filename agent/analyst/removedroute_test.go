package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRemovedRoute reads an error-ratio alert whose errors are one route
// answering 404 since a release removed it: from request counters by
// route and code (handler, route or path labels), with the caller read
// from the access log (a quoted ua= field, the combined format's last
// field) — a probe's calls are not user-facing. A route that always
// answered 404, or 404s that are not what the errors are, is no finding.
func TestRemovedRoute(t *testing.T) {
	t0 := time.Date(2026, 12, 15, 7, 25, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	flip := t0.Add(15 * time.Minute)
	series := func(label, route, code string, before, after float64) evidence.Series {
		var pts []evidence.Point
		for d := -time.Hour; d <= time.Hour; d += time.Minute {
			v := before
			if !t0.Add(d).Before(flip) {
				v = after
			}
			pts = append(pts, evidence.Point{T: t0.Add(d), V: v})
		}
		return evidence.Series{Labels: evidence.Labels{"service": "accounts-api", "namespace": "accounts", label: route, "code": code}, Points: pts}
	}
	metrics := func(label string, old404, five float64) []MetricSet {
		return []MetricSet{{Name: "http_requests_total", Class: MetricRequests, Unit: "/s", Series: []evidence.Series{
			series(label, "/v1/accounts/{id}", "200", 39.5, 39.5),
			series(label, "/v1/accounts/{id}", "500", 0.003, five),
			series(label, "/v1/sessions", "401", 1, 1),
			series(label, "/v1/legacy/ping", "200", 0.94, 0),
			series(label, "/v1/legacy/ping", "404", old404, 0.94),
		}}}
	}
	logs := func(line string) []LogSet {
		return []LogSet{{Source: "accounts-api", Subject: "accounts-api", Origin: SrcKubernetes, Templates: []analysis.LogTemplate{
			{Template: "<*>", Example: line, Incident: 90, FirstSeen: flip}}}}
	}
	const (
		kv       = `2026-12-15T08:10:16.673Z INFO  http method=GET path=/v1/legacy/ping status=404 dur_ms=0.4 ua="Blackbox Exporter/0.25.0" src=blackbox-eu-west-1`
		combined = `10.2.0.7 - - [15/Dec/2026:08:10:16 +0000] "GET /v1/legacy/ping HTTP/1.1" 404 19 "-" "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)"`
		client   = `10.2.0.9 - - [15/Dec/2026:08:10:16 +0000] "GET /v1/legacy/ping HTTP/1.1" 404 19 "-" "shop-android/5.2.1 okhttp/4.12.0"`
	)
	msg := "AccountsApiErrorBudgetBurn fired at 07:47 (burn rate 16x). is it real?"
	cases := []struct {
		name, label, line, msg string
		old404, five           float64
		want, probe            bool
		caller                 string
	}{
		{"blackbox probe, handler label, logfmt access log", "handler", kv, msg, 0, 0.003, true, true, "Blackbox Exporter/0.25.0"},
		{"uptime monitor, route label, combined log", "route", combined, "error rate SLO burn on accounts-api", 0, 0.003, true, true, "Pingdom"},
		{"an app still calling it, path label", "path", client, "why are 4xx up on accounts-api?", 0, 0.003, true, false, "shop-android"},
		{"no access log: the caller unknown", "handler", "", msg, 0, 0.003, true, false, ""},
		{"the route always answered 404", "handler", kv, msg, 0.9, 0.003, false, false, ""},
		{"the errors are 5xx elsewhere", "handler", kv, msg, 0, 5, false, false, ""},
		{"not an error question", "handler", kv, "is accounts-api slow?", 0, 0.003, false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := Scope{Message: c.msg, Service: "accounts-api", Namespace: "accounts", Window: w}
			ev := &Gathered{Metrics: metrics(c.label, c.old404, c.five), Logs: logs(c.line), Scope: sc, Window: w}
			fs := detectRemovedRoute(ev, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != "accounts-api" || f.fact("route") != "/v1/legacy/ping" || f.Time != flip || (f.fact("probe") != "") != c.probe || !strings.Contains(f.fact("caller"), c.caller) {
				t.Errorf("finding %+v", f)
			}
			// Who calls it makes the answer sure; without it, it is not.
			if (f.fact("why") == "") != (c.caller == "") || c.caller == "" && f.Weight > 0.6 {
				t.Errorf("why %q weight %.2f with caller %q", f.fact("why"), f.Weight, f.fact("caller"))
			}
			d := removedRoute.describe(&Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}}, sc)
			if !strings.Contains(d, "404 on /v1/legacy/ping") || c.probe != strings.Contains(d, "not user-facing") {
				t.Errorf("description: %s", d)
			}
		})
	}
}
