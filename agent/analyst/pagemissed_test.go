package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPageAsked reads questions about a page that did not come, and not
// questions about the outage alone.
func TestPageAsked(t *testing.T) {
	for q, want := range map[string]bool{
		"Why did nobody get paged?": true,
		"The disk filled at 04:10 and alerts were firing but no one was notified, why?": true,
		"OrdersLatencyHigh should have paged us but PagerDuty has nothing":              true,
		"we were never paged for the outage last night":                                 true,
		"Opsgenie has nothing for the 3am incident, was the alert even sent?":           true,
		"Why is checkout returning 502s since 10:05?":                                   false,
		"PaymentsErrorRateHigh is paging, is the PSP down?":                             false,
	} {
		if got := pageAskRE.MatchString(q); got != want {
			t.Errorf("%q: asked about a missed page %v, want %v", q, got, want)
		}
	}
}

// TestPageMissedNotifyFailing reads Alertmanager failing to deliver a
// receiver's notifications in the forms its versions log them.
func TestPageMissedNotifyFailing(t *testing.T) {
	for _, c := range []struct {
		name, line           string
		receiver, integ, err string
		rejected             bool
	}{
		{"logfmt 0.2x, PagerDuty routing key refused",
			`ts=2026-11-23T04:11:15.402Z caller=dispatch.go:353 level=error component=dispatcher msg="Notify for alerts failed" num_alerts=2 err="pagerduty-dba/pagerduty[0]: notify retry canceled due to unrecoverable error after 1 attempts: unexpected status code 400: {\"status\":\"invalid event\",\"message\":\"Event object is invalid\",\"errors\":[\"Invalid routing key\"]}"`,
			"pagerduty-dba", "pagerduty", "Invalid routing key", true},
		{"slog 0.28, Slack webhook revoked",
			`time=2026-11-23T04:11:15.402Z level=ERROR source=dispatch.go:360 msg="Notify for alerts failed" component=dispatcher num_alerts=1 err="slack-ops/slack[0]: notify retry canceled due to unrecoverable error after 1 attempts: channel \"#ops\": unexpected status code 404: no_service"`,
			"slack-ops", "slack", "no_service", true},
		{"older Error on notify with receiver and integration fields",
			`level=error ts=2026-11-23T04:11:15.402Z caller=notify.go:732 component=dispatcher msg="Error on notify" err="cancelling notify retry for \"opsgenie\" due to unrecoverable error: unexpected status code 422: {\"message\":\"Key format is not valid!\"}" context_err=null receiver=opsgenie-sre integration=opsgenie[0]`,
			"opsgenie-sre", "opsgenie", "422", true},
		{"a retry over an unreachable webhook",
			`ts=2026-11-23T04:11:15.402Z caller=notify.go:848 level=warn component=dispatcher receiver=webhook-oncall integration=webhook[0] aggrGroup="{}:{alertname=\"PostgresqlDown\"}" msg="Notify attempt failed, will retry later" attempts=1 err="Post \"<redacted>\": dial tcp 10.4.0.12:443: i/o timeout"`,
			"webhook-oncall", "webhook", "i/o timeout", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("alertmanager-main", false, 0, c.line, c.line, c.line)
			sc := Scope{Message: "DiskWillFillIn4h was firing in Alertmanager but nobody got paged. Why?", Service: "ledger-db"}
			routes := evidence.CommandOutput{Run: "amtool --alertmanager.url=http://localhost:9093 config routes test team=dba severity=critical", Lines: []string{c.receiver}}
			change := evidence.Change{Timestamp: win.BaselineStart.Add(-48 * time.Hour), Service: c.integ, Kind: "config", Description: "on-call: service moved, the old " + c.integ + " integration removed"}
			fs := detectPageMissed(&Gathered{Logs: []LogSet{set}, Commands: []evidence.CommandOutput{routes}, Earlier: []evidence.Change{change}, Window: win, Scope: sc}, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v, want one", fs)
			}
			f := fs[0]
			if f.Subject != "alertmanager" || f.fact("receiver") != c.receiver || f.fact("integration") != c.integ || !strings.Contains(f.fact("notify_error"), c.err) || (f.fact("rejected") != "") != c.rejected {
				t.Errorf("read %s: receiver %q integration %q error %q rejected %q", f.Subject, f.fact("receiver"), f.fact("integration"), f.fact("notify_error"), f.fact("rejected"))
			}
			if f.fact("page_change") == "" || f.fact("routed") == "" {
				t.Errorf("the change %q or the route %q not read", f.fact("page_change"), f.fact("routed"))
			}
			h := &Hypothesis{Kind: KindPageMissed, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, sc, c.receiver, "DiskWillFillIn4h reached nobody", c.err)
			// The same log, asked about the outage, is no missed page.
			sc.Message = "ledger-db ran out of disk at 04:10, why?"
			if fs := detectPageMissed(&Gathered{Logs: []LogSet{set}, Window: win, Scope: sc}, nil); len(fs) != 0 {
				t.Errorf("a question about the outage read as a missed page: %+v", fs)
			}
		})
	}
}

// alertsSeries is Prometheus's ALERTS series of one alert firing over
// [from, to] of the window.
func alertsSeries(labels map[string]string, from, to time.Duration) evidence.Series {
	s := evidence.Series{Labels: evidence.Labels{"__name__": "ALERTS", "alertstate": "firing"}}
	for k, v := range labels {
		s.Labels[k] = v
	}
	for d := from; d <= to; d += time.Minute {
		s.Points = append(s.Points, evidence.Point{T: win.Start.Add(d), V: 1})
	}
	return s
}

// TestPageMissedInhibited reads an alert muted by an inhibit rule whose
// source alert fired with the same equal labels, in both forms of the
// rules' matchers; a source on another cluster mutes nothing.
func TestPageMissedInhibited(t *testing.T) {
	amtoolConfig := func(rules ...string) evidence.CommandOutput {
		lines := []string{"global:", "  resolve_timeout: 5m", "route:", "  receiver: \"null\"", "inhibit_rules:"}
		lines = append(lines, rules...)
		lines = append(lines, "receivers:", "- name: \"null\"", "- name: pagerduty-payments")
		return evidence.CommandOutput{Run: "amtool --alertmanager.url=http://localhost:9093 config show", Lines: lines}
	}
	matchers := amtoolConfig(
		"- source_matchers: [severity=\"critical\"]", "  target_matchers: [severity=~\"warning|info\"]", "  equal: [namespace, alertname]",
		"- source_matchers: [alertname=\"MaintenanceMode\"]", "  target_matchers: [severity=~\"info|warning|critical\"]", "  equal: [cluster]")
	oldForm := amtoolConfig(
		"- source_match:", "    alertname: NodeMaintenance", "  target_match_re:", "    severity: warning|critical", "  equal: ['cluster']")
	inhibited := evidence.CommandOutput{Run: "amtool --alertmanager.url=http://localhost:9093 alert query --inhibited", Lines: []string{
		"Alertname                      Starts At                Summary                                         State",
		"CPUThrottlingHigh              2026-11-26 04:12:03 UTC  CPU throttling is high.                         suppressed",
	}}
	target := map[string]string{"alertname": "PaymentsErrorRateHigh", "namespace": "payments", "service": "payments-api", "severity": "critical", "cluster": "prod-eu1"}
	for _, c := range []struct {
		name   string
		cfg    evidence.CommandOutput
		source map[string]string
		want   bool
	}{
		{"source_matchers, a maintenance alert held open", matchers, map[string]string{"alertname": "MaintenanceMode", "severity": "none", "cluster": "prod-eu1"}, true},
		{"source_match and target_match_re", oldForm, map[string]string{"alertname": "NodeMaintenance", "severity": "info", "cluster": "prod-eu1"}, true},
		{"the source fires on another cluster", matchers, map[string]string{"alertname": "MaintenanceMode", "severity": "none", "cluster": "prod-us1"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := MetricSet{Name: "ALERTS", Series: []evidence.Series{alertsSeries(c.source, -30*time.Minute, time.Hour), alertsSeries(target, 10*time.Minute, 40*time.Minute)}}
			sc := Scope{Message: "Card payments failed from 08:10 to 09:25. PaymentsErrorRateHigh should have paged us but PagerDuty has nothing. Why did nobody get paged?", Namespace: "payments"}
			closer := Finding{Kind: KindRBACDenied, Subject: "maintenance-window-close", Severity: SevCritical, Weight: 0.9, Summary: "forbidden to patch configmaps"}
			fs := detectPageMissed(&Gathered{Metrics: []MetricSet{ms}, Commands: []evidence.CommandOutput{c.cfg, inhibited}, Window: win, Scope: sc}, []Finding{closer})
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != "payments-api" || f.fact("source_alert") != c.source["alertname"] {
				t.Errorf("subject %q source %q", f.Subject, f.fact("source_alert"))
			}
			h := &Hypothesis{Kind: KindPageMissed, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, sc, "inhibited", "PaymentsErrorRateHigh", c.source["alertname"], "CPUThrottlingHigh", "cluster")
			if strings.Contains(c.source["alertname"], "Maintenance") && !strings.Contains(describe(h, sc), "maintenance-window-close") {
				t.Errorf("what keeps the source firing not named: %s", describe(h, sc))
			}
		})
	}
}
