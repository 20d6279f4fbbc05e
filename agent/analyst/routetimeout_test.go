package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A route timeout shorter than the requests behind it, as an Istio
// gateway and a standalone Envoy log it (504 UT), with the timeout read
// from a VirtualService or the proxy's route config and the change that
// set it; without such a change, or with a 504 the upstream answered
// itself, it is not this.
func TestDetectRouteTimeout(t *testing.T) {
	istio := `[2026-03-14T10:18:47.893Z] "GET /api/statements/A-1/2026-10.pdf HTTP/1.1" 504 UT response_timeout - "-" 0 24 3000 - "203.0.113.17" "Mozilla/5.0 (X11; Linux x86_64)" "3ff8798d-c6cf-4b0e-a329-236f05d02f7d" "portal.example.com" "10.40.2.18:8080" outbound|8080||statements.billing.svc.cluster.local 10.40.1.9:52439 10.40.1.9:8443 203.0.113.17:56614 portal.example.com -`
	envoy := `[2026-03-14T10:18:47.893Z] "POST /v1/reports HTTP/1.1" 504 UT 512 24 15001 - "10.0.3.7" "okhttp/4.12.0" "1b2c3d4e-0000-4000-8000-000000000001" "reports:8080" "10.0.4.9:8080"`
	own := `[2026-03-14T10:18:47.893Z] "GET /api/statements/A-1/2026-10.pdf HTTP/1.1" 504 - via_upstream - "-" 0 24 3000 2999 "203.0.113.17" "Mozilla/5.0 (X11; Linux x86_64)" "3ff8798d-c6cf-4b0e-a329-236f05d02f7d" "portal.example.com" "10.40.2.18:8080" outbound|8080||statements.billing.svc.cluster.local 10.40.1.9:52439 10.40.1.9:8443 203.0.113.17:56614 portal.example.com -`
	work := `{"time":"2026-03-14T10:19:04.117Z","level":"INFO","msg":"statement rendered","pages":9,"db_ms":153,"render_ms":8016}`
	reportsWork := `time=2026-03-14T10:19:04Z level=info msg="report built" duration_ms=41000`
	reportsFast := `time=2026-03-14T10:19:04Z level=info msg="report built" duration_ms=9000`
	vs := evidence.CommandOutput{Command: "kubectl get virtualservice statements -n billing -o yaml", Lines: []string{
		"  - route:", "    - destination:", "        host: statements.billing.svc.cluster.local", "    retries:", "      attempts: 2", "      perTryTimeout: 1500ms", "    timeout: 3s",
	}}
	route := evidence.CommandOutput{Command: "istioctl proxy-config route gw.istio-system -o json", Lines: []string{
		`  "cluster": "outbound|8080||reports.ops.svc.cluster.local",`, `  "timeout": "15s",`,
	}}
	defaults := evidence.Change{Timestamp: win.Start.Add(-2 * time.Hour), Service: "billing-mesh", Kind: "config", Description: "apply route-defaults v3 to billing VirtualServices (timeouts and retries for every HTTP route)"}
	// A Spring Boot upstream logging its time with the unit ("took=2400ms")
	// behind a sidecar whose route has retries off.
	sidecar := `[2026-03-14T10:18:47.893Z] "POST /v1/quote HTTP/1.1" 504 UT response_timeout - "-" 4781 24 1000 - "-" "Go-http-client/1.1" "13e53db0-cf0b-4531-9163-58219b00a1aa" "pricing.shop.svc.cluster.local:8080" "10.52.1.76:8080" outbound|8080||pricing.shop.svc.cluster.local 10.52.1.226:39823 10.52.2.108:8080 10.52.1.148:58247 - default`
	spring := `2026-03-14T10:19:04.117Z  INFO 1 --- [pricing] [nio-8080-exec-7] c.e.pricing.api.PriceController          : price computed lines=40 took=2400ms`
	noRetries := evidence.CommandOutput{Command: "kubectl get virtualservice pricing -n shop -o yaml", Lines: []string{
		"  http:", "  - retries:", "      attempts: 0", "    route:", "    - destination:", "        host: pricing.shop.svc.cluster.local", "    timeout: 1s",
	}}
	upgrade := evidence.Change{Timestamp: win.Start.Add(-2 * time.Hour), Service: "reports-db", Kind: "infra", Description: "reports-db: minor version 16.4 -> 16.6"}
	cases := []struct {
		name             string
		sets             []LogSet
		cmds             []evidence.CommandOutput
		change           evidence.Change
		subject, setting string
		work             string
	}{
		{"Istio gateway, VirtualService, the upstream's render time", []LogSet{minedSet("istio-ingressgateway", false, 0, istio, istio), minedSet("statements", false, 0, work, work)}, []evidence.CommandOutput{vs}, defaults,
			"statements", "timeout 3s", "render_ms up to 8.0 s"},
		{"standalone Envoy, the route config, the upstream's duration_ms", []LogSet{minedSet("edge-envoy", false, 0, envoy, envoy), minedSet("reports", false, 0, reportsWork, reportsWork)}, []evidence.CommandOutput{route}, defaults,
			"reports", "timeout 15s", "duration_ms up to 41.0 s"},
		{"Istio sidecar, retries off, the upstream's took=...ms", []LogSet{minedSet("cart", false, 0, sidecar, sidecar), minedSet("pricing", false, 0, spring, spring)}, []evidence.CommandOutput{noRetries}, defaults,
			"pricing", "timeout 1s", "up to 2.4 s"},
		{"an upstream not seen finishing past the timeout", []LogSet{minedSet("edge-envoy", false, 0, envoy, envoy), minedSet("reports", false, 0, reportsFast, reportsFast)}, []evidence.CommandOutput{route}, defaults,
			"", "", ""},
		{"no change to timeouts", []LogSet{minedSet("istio-ingressgateway", false, 0, istio, istio)}, nil, upgrade, "", "", ""},
		{"a 504 the upstream answered", []LogSet{minedSet("istio-ingressgateway", false, 0, own, own)}, nil, defaults, "", "", ""},
	}
	// An upstream whose own latency rose got slower: not this.
	slower := &Gathered{Logs: []LogSet{minedSet("istio-ingressgateway", false, 0, istio, istio), minedSet("statements", false, 0, work, work)}, Commands: []evidence.CommandOutput{vs}, Changes: []evidence.Change{defaults}, Window: win}
	onlyFinding(t, detectRouteTimeout(slower, []Finding{{Kind: KindLatency, Subject: "statements"}}), "")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, Changes: []evidence.Change{c.change}, Window: win}
			f := onlyFinding(t, detectRouteTimeout(ev, nil), c.subject)
			if f == nil {
				return
			}
			if !slices.Contains(f.Related, c.sets[0].Subject) || f.fact("change") == "" {
				t.Errorf("related %v change %q", f.Related, f.fact("change"))
			}
			h := &Hypothesis{Kind: KindRouteTimeout, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "504 UT", c.setting, c.work)
			if d := routeTimeout.describe(h, Scope{}); len(c.cmds) > 0 && c.cmds[0].Command == noRetries.Command && strings.Contains(d, "retries re-send") {
				t.Errorf("retries told with attempts 0: %s", d)
			}
		})
	}
}
