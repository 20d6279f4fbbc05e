package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestFaultLines(t *testing.T) {
	cases := []struct {
		line           string
		apply, recover bool
		target, what   string
	}{
		// Chaos Mesh: the controller and the daemon (zap console).
		{"2026-11-12T10:19:40.400Z\tINFO\tnetworkchaos\tadd networkchaos\t{\"namespace\": \"pricing\", \"name\": \"rate-card-latency-gameday\", \"action\": \"delay\", \"mode\": \"all\", \"selector\": {\"namespaces\":[\"pricing\"],\"labelSelectors\":{\"app.kubernetes.io/name\":\"rate-card\"}}, \"duration\": null}", true, false, "rate-card", "a network delay"},
		{"2026-11-12T10:19:40.799Z\tINFO\trecords\tapply chaos\t{\"id\": \"pricing/rate-card-64b9c7d8f-ckq7z\"}", true, false, "rate-card", ""},
		{"2026-11-12T10:19:41.349Z\tINFO\tchaos-daemon-server\ttc rules applied\t{\"device\": \"eth0\", \"netem\": \"delay 120ms 15ms 25%\", \"pod\": \"rate-card-64b9c7d8f-ckq7z\"}", true, false, "rate-card", "a network delay of 120ms"},
		{"2026-11-12T10:03:13.000Z\tINFO\trecords\trecover chaos\t{\"id\": \"pricing-staging/quote-api-5d7c8b9f6-jr2lw\"}", false, true, "quote-api", ""},
		{"2026-11-12T10:03:12.000Z\tINFO\tpodchaos\tremove podchaos\t{\"namespace\": \"pricing-staging\", \"name\": \"quote-api-pod-kill\"}", false, true, "", "pod kills"},
		// A bare tc command on a host, Toxiproxy, Litmus.
		{"Nov 12 10:19:41 node-3 sudo[8812]: ops : COMMAND=/usr/sbin/tc qdisc add dev eth0 root netem loss 5% target=orders-db-0", true, false, "orders-db", "packet loss"},
		{`time="2026-11-12T10:20:00Z" level=info msg="Added toxic" name=latency_downstream proxy=redis toxic_type=latency target=cart-redis-7f9c8d6b5-x2x4z`, true, false, "cart-redis", "a network delay"},
		{`time="2026-11-12T10:40:00Z" level=info msg="Removed toxic" name=latency_downstream proxy=redis target=cart-redis-7f9c8d6b5-x2x4z`, false, true, "cart-redis", ""},
		// Near misses: a health check, a retry policy, a test's own words.
		{"2026-11-12T10:00:00.000Z\tINFO\tchaos-daemon-server\tgrpc health check\t{\"status\": \"SERVING\"}", false, false, "", ""},
		{`level=info msg="applied retry policy" attempts=5 perTryTimeout=250ms pod=cart-7f9c8d6b5-x2x4z`, false, false, "cart", ""},
	}
	for _, c := range cases {
		if got := faultApplyRE.MatchString(c.line); got != c.apply {
			t.Errorf("apply(%.70q) = %v, want %v", c.line, got, c.apply)
		}
		if got := faultRecoverRE.MatchString(c.line); got != c.recover {
			t.Errorf("recover(%.70q) = %v, want %v", c.line, got, c.recover)
		}
		if got := faultTarget(c.line); got != c.target {
			t.Errorf("faultTarget(%.70q) = %q, want %q", c.line, got, c.target)
		}
		if got := faultWhat(c.line); got != c.what {
			t.Errorf("faultWhat(%.70q) = %q, want %q", c.line, got, c.what)
		}
	}
}

// TestDetectFaultInjection checks that a fault still in place is found on
// its target with what was injected, and that one recovered before the
// incident window is not.
func TestDetectFaultInjection(t *testing.T) {
	t0 := time.Date(2026, 11, 12, 10, 0, 0, 0, time.UTC)
	tmpl := func(at time.Duration, n int, example string) analysis.LogTemplate {
		return analysis.LogTemplate{Example: example, Count: n, Incident: n, FirstSeen: t0.Add(at), LastSeen: t0.Add(at + time.Second)}
	}
	daemon := LogSet{Source: "chaos-daemon", Subject: "chaos-daemon", Origin: SrcLogs, Templates: []analysis.LogTemplate{
		tmpl(-50*time.Minute, 1, "2026-11-12T09:10:00.000Z\tINFO\tchaos-daemon-server\ttc rules applied\t{\"device\": \"eth0\", \"netem\": \"loss 10%\", \"pod\": \"fx-rates-6c8d9f7b5-qq2wz\"}"),
		tmpl(-40*time.Minute, 1, "2026-11-12T09:20:00.000Z\tINFO\tchaos-daemon-server\ttc rules removed\t{\"device\": \"eth0\", \"pod\": \"fx-rates-6c8d9f7b5-qq2wz\"}"),
		tmpl(19*time.Minute, 2, "2026-11-12T10:19:41.349Z\tINFO\tchaos-daemon-server\ttc rules applied\t{\"device\": \"eth0\", \"netem\": \"delay 120ms 15ms 25%\", \"pod\": \"rate-card-64b9c7d8f-ckq7z\"}"),
		tmpl(0, 12, "2026-11-12T10:00:00.000Z\tINFO\tchaos-daemon-server\tgrpc health check\t{\"status\": \"SERVING\"}"),
	}}
	ev := &Gathered{Logs: []LogSet{daemon}, Window: Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}}
	fs := detectFaultInjection(ev, nil)
	if len(fs) != 1 {
		t.Fatalf("findings = %+v, want one (rate-card)", fs)
	}
	f := fs[0]
	if f.Subject != "rate-card" || f.fact("fault") != "a network delay of 120ms" || f.fact("tool") != "chaos-daemon" || !f.Time.Equal(t0.Add(19*time.Minute)) || f.Namespace != "" {
		t.Errorf("finding = %s %q %q at %s, want rate-card, a network delay of 120ms, chaos-daemon at 10:19", f.Subject, f.fact("fault"), f.fact("tool"), f.Time)
	}
	h := &Hypothesis{Kind: KindFaultInjection, Subject: f.Subject, Primary: []*Finding{&f}}
	if d := faultInjection.describe(h, Scope{}); d == "" || !strings.Contains(d, "120ms") || !strings.Contains(d, "still in place") {
		t.Errorf("describe = %q", d)
	}
}

// Faults a mesh injects by configuration, as Istio's sidecar and a
// standalone Envoy log them (DI delayed, FI aborted), with the delay and
// share a VirtualService or the proxy's route config sets and the game day
// that put it there; a request delayed by its callee is not one.
func TestMeshFaults(t *testing.T) {
	istioDI := `[2026-03-14T10:29:51.700Z] "GET /v1/suggest?q=run HTTP/1.1" 200 DI via_upstream - "-" 0 714 5023 22 "-" "undici" "82466a69-5ba5-45db-b5f4-4515b566bcf3" "suggest.search.svc.cluster.local:8080" "10.66.3.21:8080" outbound|8080||suggest.search.svc.cluster.local 10.66.2.40:42352 172.20.14.77:8080 10.66.2.40:42108 - default`
	envoyFI := `[2026-03-14T10:29:51.700Z] "POST /api/orders HTTP/1.1" 503 FI 0 18 0 - "10.0.3.7" "okhttp/4.12.0" "1b2c3d4e-0000-4000-8000-000000000001" "orders:8080" "-"`
	slow := `[2026-03-14T10:29:51.700Z] "GET /v1/suggest?q=run HTTP/1.1" 200 - via_upstream - "-" 0 714 5023 5020 "-" "undici" "82466a69-5ba5-45db-b5f4-4515b566bcf3" "suggest.search.svc.cluster.local:8080" "10.66.3.21:8080" outbound|8080||suggest.search.svc.cluster.local 10.66.2.40:42352 172.20.14.77:8080 10.66.2.40:42108 - default`
	vs := evidence.CommandOutput{Command: "kubectl get virtualservice suggest -n search -o yaml", Lines: []string{
		"spec:", "  hosts:", "  - suggest.search.svc.cluster.local", "  http:", "  - fault:", "      delay:", "        fixedDelay: 5s", "        percentage:", "          value: 10",
	}}
	route := evidence.CommandOutput{Command: "istioctl proxy-config route web-66c9d7f8b5-rk2wp.web --name 8080 -o json", Lines: []string{
		`  "name": "suggest.search.svc.cluster.local:8080",`, `  "envoy.filters.http.fault": {`, `    "delay": {`, `      "fixedDelay": "2s",`, `      "percentage": {`, `        "numerator": 250000,`,
	}}
	gameDay := evidence.Change{Timestamp: win.BaselineStart.Add(-time.Hour), Service: "suggest", Kind: "infra", Description: "game day GD-14: latency injection between web and suggest"}
	cases := []struct {
		name            string
		line            string
		cmds            []evidence.CommandOutput
		subject, fault  string
		experiment, via string
	}{
		{"Istio delay set by a VirtualService, a game day", istioDI, []evidence.CommandOutput{vs}, "suggest", "a fixed delay of 5s on 10% of requests", "GD-14", "VirtualService"},
		{"Istio delay read from the proxy's route config", istioDI, []evidence.CommandOutput{route}, "suggest", "a fixed delay of 2s on 25% of requests", "GD-14", "VirtualService"},
		{"a standalone Envoy's abort", envoyFI, nil, "orders", "aborted requests", "", "fault filter"},
		{"slow callee, nothing injected", slow, nil, "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("web", false, 0, c.line, c.line)}, Commands: c.cmds, Earlier: []evidence.Change{gameDay}, Window: win}
			f := onlyFinding(t, meshFaults(ev), c.subject)
			if f == nil {
				return
			}
			if f.fact("fault") != c.fault || !strings.Contains(f.fact("experiment"), c.experiment) || !strings.Contains(f.fact("tool"), c.via) || !slices.Contains(f.Related, "web") {
				t.Errorf("fault %q experiment %q tool %q related %v", f.fact("fault"), f.fact("experiment"), f.fact("tool"), f.Related)
			}
		})
	}
}
