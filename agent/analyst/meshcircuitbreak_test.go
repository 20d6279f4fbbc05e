package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A caller's proxy failing calls to a healthy callee by its own circuit
// breaker or outlier detection, as Istio's sidecar access log, a
// standalone Envoy's default access log and the admin stats print it; a
// host missing with no ejection shown is a Service without endpoints, not
// this.
func TestDetectMeshCircuitBreak(t *testing.T) {
	istioUO := `[2026-03-10T12:47:50.388Z] "POST /v1/quotes HTTP/1.1" 503 UO upstream_reset_before_response_started{overflow} - "-" 612 81 0 - "-" "okhttp/4.12.0" "e6ace778-3082-4d11-b1de-40e07cfbc186" "rates.logistics.svc.cluster.local:8080" "-" outbound|8080||rates.logistics.svc.cluster.local - 10.100.61.204:8080 10.31.5.71:51665 - default`
	envoyUO := `[2026-03-10T12:47:50.388Z] "GET /api/stock/42 HTTP/1.1" 503 UO 0 81 0 - "10.0.3.7" "Go-http-client/1.1" "1b2c3d4e-0000-4000-8000-000000000001" "inventory:8080" "-"`
	istioUH := `[2026-03-10T13:51:23.531Z] "GET /v2/prices/SKU-1?currency=EUR HTTP/1.1" 503 UH no_healthy_upstream - "-" 0 19 0 - "-" "Go-http-client/1.1" "bcd2e831-6770-4e5c-808d-5fb72fd617a5" "prices.shop.svc.cluster.local:8080" "-" outbound|8080||prices.shop.svc.cluster.local - 10.128.44.19:8080 10.24.1.52:55648 - default`
	endpoints := evidence.CommandOutput{Command: `istioctl proxy-config endpoint web-6d9c7f8b4d-h7wzn.shop --cluster "outbound|8080||prices.shop.svc.cluster.local"`, Lines: []string{
		"ENDPOINT            STATUS      OUTLIER CHECK     CLUSTER",
		"10.24.1.18:8080     HEALTHY     FAILED            outbound|8080||prices.shop.svc.cluster.local",
		"10.24.2.77:8080     HEALTHY     FAILED            outbound|8080||prices.shop.svc.cluster.local",
	}}
	stats := evidence.CommandOutput{Command: "kubectl exec -n checkout checkout-7f6b5c9d48-8ltxz -c istio-proxy -- pilot-agent request GET stats", Lines: []string{
		"cluster.outbound|8080||rates.logistics.svc.cluster.local.circuit_breakers.default.remaining_rq: 0",
		"cluster.outbound|8080||rates.logistics.svc.cluster.local.upstream_rq_pending_overflow: 14422",
	}}
	dr := evidence.CommandOutput{Command: "kubectl get destinationrule rates -n logistics -o yaml", Lines: []string{
		"spec:", "  host: rates.logistics.svc.cluster.local", "  trafficPolicy:", "    connectionPool:", "      http:",
		"        http1MaxPendingRequests: 8", "        http2MaxRequests: 16",
	}}
	cases := []struct {
		name            string
		sets            []LogSet
		cmds            []evidence.CommandOutput
		subject, mode   string
		caller, setting string
		istio           bool
	}{
		{"Istio sidecar overflow with stats and the DestinationRule", []LogSet{minedSet("checkout", false, 0, istioUO, istioUO)}, []evidence.CommandOutput{stats, dr},
			"rates", "overflow", "checkout", "http2MaxRequests 16", true},
		{"standalone Envoy overflow", []LogSet{minedSet("edge-envoy", false, 0, envoyUO, envoyUO)}, nil,
			"inventory", "overflow", "edge-envoy", "", false},
		{"every endpoint failing the outlier check", []LogSet{minedSet("web", false, 0, istioUH, istioUH)}, []evidence.CommandOutput{endpoints},
			"prices", "eject", "web", "", true},
		{"no healthy host and no ejection shown", []LogSet{minedSet("web", false, 0, istioUH, istioUH)}, nil,
			"", "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectMeshCircuitBreak(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("mode") != c.mode || !slices.Contains(f.Related, c.caller) || !strings.Contains(f.fact("settings"), c.setting) || (f.fact("istio") != "") != c.istio {
				t.Errorf("mode %q related %v settings %q istio %q", f.fact("mode"), f.Related, f.fact("settings"), f.fact("istio"))
			}
			h := &Hypothesis{Kind: KindMeshCircuitBreak, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			want := map[string]string{"overflow": "503 UO", "eject": "OUTLIER CHECK FAILED"}[c.mode]
			wantDescribed(t, h, Scope{}, want, c.caller)
			if c.istio {
				wantDescribed(t, h, Scope{}, "DestinationRule")
			}
		})
	}
	// A change to the traffic policy triggers it, a deploy does not.
	h := &Hypothesis{Kind: KindMeshCircuitBreak, Subject: "rates", Onset: win.Start}
	policy := &Finding{Kind: KindConfigChange, Time: win.Start.Add(-time.Minute)}
	policy.setFact("description", "rates: DestinationRule with outlier detection (consecutive5xxErrors 1)")
	deploy := &Finding{Kind: KindDeploy, Time: win.Start.Add(-time.Minute)}
	deploy.setFact("description", "rates 2.9.1: round prices half-even")
	if !meshCircuitBreak.fitsChange(h, policy) || meshCircuitBreak.fitsChange(h, deploy) {
		t.Error("a DestinationRule change must fit, a deploy must not")
	}
}
