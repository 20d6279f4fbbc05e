package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReloadRejectedLines: the reasons servers log for a rejected reload
// (nginx's [emerg] and its failed test, ingress-nginx's reload failure,
// Prometheus's config error) are read; a reload asked for or done is not.
func TestReloadRejectedLines(t *testing.T) {
	for line, want := range map[string]bool{
		`	nginx: [emerg] invalid number of arguments in "add_header" directive in /tmp/nginx/nginx-cfg2794410387:2261`: true,
		`	nginx: configuration file /tmp/nginx/nginx-cfg2794410387 test failed`:                                        true,
		`E1125 12:48:07.037662       7 controller.go:205] "Unexpected failure reloading the backend" err=<`:            true,
		`ts=2026-11-25T12:48:07.037Z caller=main.go:1191 level=error msg="Error reloading config" err="couldn't load configuration (--config.file=\"/etc/prometheus/prometheus.yml\"): parsing YAML file /etc/prometheus/prometheus.yml: yaml: line 12: did not find expected key"`: true,
		`I1125 12:48:06.905118       7 controller.go:193] "Configuration changes detected, backend reload required"`:                                                                                                                                                                false,
		`I1125 12:40:06.905118       7 controller.go:213] "Backend successfully reloaded"`:                                                                                                                                                                                          false,
	} {
		if got := reloadFailedLineRE.MatchString(line); got != want {
			t.Errorf("%.70q: %v, want %v", line, got, want)
		}
	}
	for _, c := range []struct {
		typ, msg string
		ok       bool
	}{
		{"Warning", "Error reloading NGINX: exit status 1", true},
		{"Normal", "NGINX reload triggered due to a change in configuration", false},
	} {
		if _, ok := reloadRejected.event(&corev1.Event{Type: c.typ, Reason: "RELOAD", Message: c.msg}); ok != c.ok {
			t.Errorf("RELOAD %q: %v", c.msg, ok)
		}
	}
}

// TestDetectReloadRejected: a last-reload gauge that fell to 0 in the
// window and stays there is a rejected reload from then, of the
// controller its labels name (ingress-nginx by its pod, Prometheus by its
// job); the changes made since are not applied and the snippet handed
// over is quoted. A gauge back at 1, or always 1, is none.
func TestDetectReloadRejected(t *testing.T) {
	now := time.Date(2026, 11, 25, 13, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	start := now.Add(-100 * time.Minute)
	at := func(i int) float64 { return map[bool]float64{true: 1}[i < 48] } // 0 from 12:48
	nginx := "nginx_ingress_controller_config_last_reload_successful"
	changes := []evidence.Change{
		{Timestamp: start.Add(48 * time.Minute), Service: "promo-landing", Kind: "config", Description: "marketing: new Ingress promo-landing, security headers via configuration-snippet"},
		{Timestamp: start.Add(65 * time.Minute), Service: "orders-api", Kind: "config", Description: "orders-api Ingress: nginx.ingress.kubernetes.io/limit-rps 50 -> 20"},
	}
	snippet := evidence.CommandOutput{Command: `kubectl get ingress promo-landing -n marketing -o jsonpath='{.metadata.annotations.nginx\.ingress\.kubernetes\.io/configuration-snippet}'`,
		Lines: []string{`add_header X-Frame-Options "SAMEORIGIN" always`, `add_header Content-Security-Policy "frame-ancestors 'self'" always;`}}
	cases := []struct {
		name    string
		series  evidence.Series
		subject string
	}{
		{"ingress-nginx", failSeries(evidence.Labels{"__name__": nginx, "controller_class": "k8s.io/ingress-nginx", "controller_namespace": "ingress-nginx", "controller_pod": "ingress-nginx-controller-7d4b9c8f65-5kq7w"}, start, 100, at), "ingress-nginx-controller"},
		{"prometheus", failSeries(evidence.Labels{"__name__": "prometheus_config_last_reload_successful", "job": "prometheus"}, start, 100, at), "prometheus"},
		{"recovered", failSeries(evidence.Labels{"__name__": nginx, "controller_pod": "ingress-nginx-controller-7d4b9c8f65-5kq7w"}, start, 100, func(i int) float64 { return map[bool]float64{true: 1}[i < 48 || i > 90] }), ""},
		{"always ok", failSeries(evidence.Labels{"__name__": nginx, "controller_pod": "ingress-nginx-controller-7d4b9c8f65-5kq7w"}, start, 100, func(int) float64 { return 1 }), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: []MetricSet{{Name: c.series.Labels["__name__"], Series: []evidence.Series{c.series}}}, Changes: changes, Commands: []evidence.CommandOutput{snippet}, Window: w}
			fs := detectReloadRejected(ev, nil)
			if c.subject == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != c.subject || !fs[0].Time.Equal(start.Add(48*time.Minute)) {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			h := &Hypothesis{Kind: KindReloadRejected, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			trig := &Finding{Kind: KindConfigChange, Subject: "promo-landing", Time: changes[0].Timestamp, Facts: map[string]string{"description": changes[0].Description}}
			if !reloadRejected.fitsChange(h, trig) {
				t.Error("the change at the onset does not trigger it")
			}
			if reloadRejected.fitsChange(h, &Finding{Kind: KindConfigChange, Subject: "orders-api", Time: changes[1].Timestamp, Facts: map[string]string{"description": changes[1].Description}}) {
				t.Error("a change after the onset triggers it")
			}
			h.Trigger = trig
			wantDescribed(t, h, Scope{}, c.subject+" rejects every configuration reload since 12:48", "changes made since are not applied: orders-api at 13:05", "limit-rps 50 -> 20", "began with the change of promo-landing", `add_header X-Frame-Options \"SAMEORIGIN\" always`)
			if !reloadRejected.related(h, &Finding{Kind: KindConfigChange, Subject: "orders-api"}) {
				t.Error("the change not applied is not related")
			}
		})
	}
}

// TestReloadRejectedBeforeSeries: a last-reload gauge at 0 over its whole
// series says the rejection is older than the series; the server's log
// lines of it from before the window (Prometheus's rule manager logfmt,
// and its "Error reloading config") name the server's workload, when the
// rejections began and the parser's reason, which the answer quotes
// rather than the bare "reload failed".
func TestReloadRejectedBeforeSeries(t *testing.T) {
	now := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	start := now.Add(-100 * time.Minute)
	zero := func(int) float64 { return 0 }
	first := time.Date(2026, 11, 17, 16, 2, 11, 0, time.UTC)
	src := "prometheus-k8s-0/prometheus"
	rejected := []evidence.LogLine{
		{Time: first, Source: src, Text: `ts=2026-11-17T16:02:11.402Z caller=manager.go:1066 level=error component="rule manager" msg="loading groups failed" err="/etc/prometheus/rules/slo.yaml: 12:15: group \"slo\", rule 2, \"ApiErrorBudgetBurn\": could not parse expression: 1:87: parse error: unclosed left bracket"`},
		{Time: first.Add(time.Millisecond), Source: src, Text: `ts=2026-11-17T16:02:11.403Z caller=main.go:1136 level=error msg="Error reloading config" err="one or more errors occurred while applying the new configuration (--config.file=\"/etc/prometheus/config_out/prometheus.env.yaml\")"`},
	}
	for _, c := range []struct {
		name    string
		lines   []evidence.LogLine
		subject string
		want    []string
	}{
		{"rule parse error days ago", rejected, "prometheus-k8s", []string{"prometheus-k8s rejects every configuration reload since Nov 17 16:02 UTC", "parse error: unclosed left bracket"}},
		{"no log of it", nil, "prometheus", []string{"prometheus rejects every configuration reload"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := failSeries(evidence.Labels{"__name__": "prometheus_config_last_reload_successful", "job": "prometheus"}, start, 100, zero)
			ev := &Gathered{Metrics: []MetricSet{{Name: s.Labels["__name__"], Series: []evidence.Series{s}}}, RejectedReloads: c.lines, Window: w}
			fs := detectReloadRejected(ev, nil)
			if len(fs) != 1 || fs[0].Subject != c.subject {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			h := &Hypothesis{Kind: KindReloadRejected, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{Window: w}, c.want...)
		})
	}
	for line, want := range map[string]bool{
		`[ERROR] Corefile changed but reload failed: plugin/forward: Corefile:30 - Error during parsing: unknown property 'max_fail'`: true,
		`27-Nov-2026 09:13:14.649 reloading configuration failed: unexpected token near '}'`:                                          true,
		`[INFO] Reloading complete`:                     false,
		`msg="Completed loading of configuration file"`: false,
	} {
		if got := rejectedConfigRE.MatchString(line); got != want {
			t.Errorf("%.70q: %v, want %v", line, got, want)
		}
	}
}
