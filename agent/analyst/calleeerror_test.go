package analyst

import (
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestCalleeFailure(t *testing.T) {
	cases := []struct{ line, want string }{
		// pino with an Axios error (Node.js).
		{`{"level":50,"time":1794994348391,"reqId":"req-2a320a65","route":"/api/cart/summary","err":{"type":"AxiosError","message":"Request failed with status code 500","code":"ERR_BAD_RESPONSE","config":{"url":"http://loyalty-service.shop.svc.cluster.local:8080/v1/members/874737/points"}},"statusCode":500,"msg":"GET /api/cart/summary failed"}`, "loyalty-service"},
		// Spring RestTemplate.
		{`2026-11-18 09:32:01.113 ERROR 1 --- [nio-8080-exec-3] c.n.c.CartClient : I/O error: 503 Service Unavailable on GET request for "http://inventory.shop:8080/v1/stock": status code 503`, "inventory"},
		// Go: an upstream's answer.
		{`level=error msg="call failed" url=https://tax-service.commerce.svc.cluster.local/v2/quote status=502`, "tax-service"},
		{`ERROR httpx.HTTPStatusError: Server error '504 Gateway Timeout' for url 'http://kyc-service:8000/v1/check' HTTP 504`, "kyc-service"},
		// A structured field names the upstream (NestJS JSON, logfmt).
		{`{"level":"error","context":"SignupController","message":"identity verification failed","upstream":"kyc-service","status":503,"error":"provider_unavailable","durationMs":10041}`, "kyc-service"},
		{`level=error msg="reserve failed" peer.service=inventory-reservation status=500`, "inventory-reservation"},
		// Not a callee's server error: a client error, no URL, an address,
		// a database URL, the service's own response status with no URL.
		{`Request failed with status code 404 url=http://catalog:8080/v1/items/9`, ""},
		{`GET /api/cart/summary 500 12ms`, ""},
		{`request to http://10.0.4.17:8080/v1/x failed: status code 500`, ""},
		{`{"level":"error","msg":"handler failed","statusCode":500,"route":"/api/checkout"}`, ""},
		{`connection to postgres://app@orders-db:5432/orders failed, status 500`, ""},
		{`dial tcp: lookup http://payments: no such host`, ""},
		{`{"level":"error","upstream":"kyc-service","status":429}`, ""},
	}
	for _, c := range cases {
		if got := calleeFailure(c.line); got != c.want {
			t.Errorf("calleeFailure(%.70q) = %q, want %q", c.line, got, c.want)
		}
	}
}

// TestClientSeriesNameTheirCallee checks that an OpenTelemetry client
// duration series is read as the caller's view of the server it names: the
// caller's latency finding relates to the callee and, with no series of the
// caller's own, no change to the caller explains it.
func TestClientSeriesNameTheirCallee(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"service": "quote-api", "server_address": "rate-card.pricing.svc.cluster.local", "http_request_method": "GET"}, "rate-card"},
		{map[string]string{"service_name": "checkout", "peer_service": "payments"}, "payments"},
		{map[string]string{"service": "quote-api", "server_address": "10.0.3.7:8080"}, ""},
		{map[string]string{"service": "rate-card", "http_route": "/v1/rates/{product}"}, ""},
	}
	for _, c := range cases {
		if got := calleeOfLabels(c.labels); got != c.want {
			t.Errorf("calleeOfLabels(%v) = %q, want %q", c.labels, got, c.want)
		}
	}
	t0 := time.Date(2026, 11, 12, 10, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	var pts []evidence.Point
	for m := -60; m < 60; m++ {
		v := 0.011 + 0.0005*float64(m%3)
		if m >= 20 {
			v = 0.268
		}
		pts = append(pts, evidence.Point{T: t0.Add(time.Duration(m) * time.Minute), V: v})
	}
	client := evidence.Series{Labels: evidence.Labels{"service": "quote-api", "server_address": "rate-card.pricing.svc.cluster.local"}, Points: pts}
	fs := DetectMetrics([]MetricSet{{Name: "http_client_request_duration_seconds", Class: MetricLatency, Unit: "s", Origin: SrcMetrics, Series: []evidence.Series{client}}}, w)
	if len(fs) != 1 || fs[0].Subject != "quote-api" || !fs[0].relates("rate-card") || !calleeAnswered(&fs[0]) {
		t.Fatalf("findings = %+v, want quote-api's latency related to rate-card, the callee's only", fs)
	}
	deploy := &Finding{Kind: KindDeploy, Subject: "quote-api", Time: t0.Add(15 * time.Minute), Weight: 0.9, Source: SrcChanges}
	if h := changeHypothesis(deploy, []*Finding{&fs[0]}, Scope{Service: "quote-api"}); h != nil {
		t.Errorf("a deploy of the caller is blamed for its calls to rate-card slowing: %+v", h)
	}
}

// TestRelateNamedServices checks that a caller's errors naming what a known
// service deals with relate to that service, and that its own name, a
// service with no role suffix and a word inside another word do not.
func TestRelateNamedServices(t *testing.T) {
	stems := map[string]string{"tax-service": "tax", "inventory-reservation-api": "inventory reservation", "payment-orchestrator": "", "ui-app": "", "order_worker": "order"}
	for name, want := range stems {
		if got := serviceStem(name); got != want {
			t.Errorf("serviceStem(%q) = %q, want %q", name, got, want)
		}
	}
	sc := Scope{Service: "order-service", Known: map[string]bool{"tax-service": true, "order-service": true, "payment-orchestrator": true, "inventory-reservation-api": true, "basket-service": true}}
	mk := func(subject, line string) *Finding {
		return &Finding{Kind: KindLogErrors, Subject: subject, Facts: map[string]string{"line": line}}
	}
	fs := []*Finding{
		mk("order-service", `{"time":"2026-11-16T18:33:05.398024Z","level":"ERROR","msg":"place order failed","order_ref":"ORD-6CBEF34F","country":"UK","err":"validate tax quote: quote q_ba9ca50dad has 0 lines for 4 taxable items"}`),
		mk("order-service", `level=error msg="inventory reservation failed" sku=KB-1182 err="409 conflict"`),
		mk("order-service", `level=error msg="payment declined" psp=checkout.com code=20051`),
		mk("order-service", `level=error msg="syntax error in taxonomy file" file=/etc/order/basket-rules.yaml`),
	}
	relateNamedServices(fs, sc)
	want := [][]string{{"tax-service"}, {"inventory-reservation-api"}, nil, nil}
	for i, f := range fs {
		if !slices.Equal(f.Related, want[i]) {
			t.Errorf("%q: related %v, want %v", f.fact("line"), f.Related, want[i])
		}
	}
}

// TestCalleeAnswersBadly checks that a caller's errors rejecting what a
// named callee answered ("quote has 0 lines") are the callee's failure
// when the callee logged something new or was changed at or before their
// onset: the callee is the root and the caller's earlier deploy is not.
// Without such a sign from the callee, or with a line that does not
// describe the callee's answer, the caller's deploy stays the suspect.
func TestCalleeAnswersBadly(t *testing.T) {
	at := func(hm string) time.Time {
		t, _ := time.Parse("2006-01-02T15:04:05Z", "2026-11-16T"+hm+"Z")
		return t
	}
	const (
		emptyQuote = `2026-11-16T18:33:05.398024559Z {"time":"2026-11-16T18:33:05.398024Z","level":"ERROR","source":{"function":"github.com/vendra/order-service/internal/orders.(*Service).Place","file":"/src/internal/orders/place.go","line":142},"msg":"place order failed","order_ref":"ORD-6CBEF34F","country":"UK","err":"validate tax quote: quote q_ba9ca50dad has 0 lines for 4 taxable items"}`
		emptyCart  = `2026-11-16T18:33:05Z ERROR [checkout] c.v.o.OrderService : order ORD-1 rejected: pricing returned an empty basket total for 3 items`
		ownBug     = `2026-11-16T18:33:05.398024559Z {"time":"2026-11-16T18:33:05.398024Z","level":"ERROR","msg":"place order failed","err":"validate tax quote: runtime error: invalid memory address or nil pointer dereference"}`
		notAnswer  = `2026-11-16T18:33:05Z level=error msg="place order failed" err="tax rounding rule EU-5 not configured for order ORD-1"`
		newWarn    = `2026-11-16T18:32:45.000000000Z {"ts":"2026-11-16T18:32:45.000Z","level":"warning","logger":"tax.quote","msg":"no jurisdiction for destination, returning quote without lines","country":"UK","postcode_prefix":"SW1A","suppressed":26}`
	)
	deploy := func(svc string) Finding {
		return Finding{Kind: KindDeploy, Subject: svc, Object: "change", Time: at("18:20:15"), Weight: 0.9, Source: SrcChanges,
			Summary: "deploy of " + svc, Facts: map[string]string{"description": svc + " v9.14.0: stricter order validation (tax, shipping, totals)"}}
	}
	flag := func(svc, when string) Finding {
		return Finding{Kind: KindFeatureFlag, Subject: svc, Object: "change", Time: at(when), Weight: 0.9, Source: SrcChanges,
			Summary: "feature flag change of " + svc, Facts: map[string]string{"description": "unleash: jurisdictions.v2 enabled 100%"}}
	}
	callerErrors := func(svc, line string) Finding {
		return Finding{Kind: KindLogErrors, Subject: svc, Object: "logs " + svc, Time: at("18:34:00"), Weight: 0.8, Severity: SevCritical, Source: SrcLogs,
			Summary: svc + " logs: 40 error lines new or surging since 18:34 UTC", Facts: map[string]string{"line": line, "lines": "40", "caller": svc, "own": "true"}}
	}
	callerRate := Finding{Kind: KindLatency, Subject: "order-service", Object: "service order-service", Time: at("18:33:00"), Weight: 0.8, Source: SrcMetrics,
		Summary: "http_server_request_duration_seconds_count (500) of order-service rose from 0/s to 2.44/s at 18:33"}
	calleeNew := Finding{Kind: KindLocalized, Subject: "tax-service", Object: "service tax-service", Time: at("18:32:00"), Weight: 0.58, Severity: SevWarning, Source: SrcLogs,
		Related: []string{"order-service"}, Summary: "tax-service logged 19 lines of a template new since 18:32 (none before): " + newWarn,
		Facts: map[string]string{"caller": "order-service", "signal": "logs"}}
	known := map[string]bool{"order-service": true, "tax-service": true, "pricing-api": true, "checkout-service": true, "payment-orchestrator": true}
	cases := []struct {
		name     string
		findings []Finding
		want     string // the leading hypothesis's subject and kind
	}{
		{"empty quote after the callee's flag and new template", []Finding{deploy("order-service"), flag("tax-service", "18:32:40"), callerErrors("order-service", emptyQuote), calleeNew, callerRate}, "tax-service localized_fault"},
		{"empty answer after the callee's flag only", []Finding{deploy("checkout-service"), flag("pricing-api", "18:31:00"), callerErrors("checkout-service", emptyCart)}, "pricing-api feature_flag"},
		{"empty quote, the callee silent", []Finding{deploy("order-service"), callerErrors("order-service", emptyQuote), callerRate}, "order-service deploy"},
		{"empty quote, the callee changed after the errors began", []Finding{deploy("order-service"), flag("tax-service", "18:40:00"), callerErrors("order-service", emptyQuote), callerRate}, "order-service deploy"},
		{"the caller's own bug naming the callee", []Finding{deploy("order-service"), flag("tax-service", "18:32:40"), callerErrors("order-service", ownBug), callerRate}, "order-service deploy"},
		{"the caller's own settings naming the callee", []Finding{deploy("order-service"), flag("tax-service", "18:32:40"), callerErrors("order-service", notAnswer), callerRate}, "order-service deploy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := Scope{Service: c.findings[0].Subject, Known: known, Window: Window{BaselineStart: at("17:10:00"), Start: at("18:10:00"), End: at("19:10:00")}}
			a := Reason(c.findings, sc)
			if len(a.Hypotheses) == 0 {
				t.Fatalf("no hypothesis, want %s", c.want)
			}
			if got := a.Hypotheses[0].Subject + " " + string(a.Hypotheses[0].Kind); got != c.want {
				for _, h := range a.Hypotheses {
					t.Logf("%s %s %.3f", h.Subject, h.Kind, h.Score)
				}
				t.Errorf("leading hypothesis %s, want %s", got, c.want)
			}
		})
	}
}
