package analyst

import (
	"testing"
)

// A breaker opened in a service's log, in the words of Resilience4j,
// Hystrix, Polly, gobreaker and opossum, is a finding on the dependency it
// guards, with the guarding service as its caller; the calls to the
// dependency the breaker is named for give its host and how slow they are.
func TestDetectBreakerOpen(t *testing.T) {
	cases := []struct {
		name, caller string
		lines        []string
		subject      string
		facts        map[string]string
		wants        []string
	}{
		{"Resilience4j on slow calls", "shipping",
			[]string{
				`2026-03-02T10:54:40.833Z  WARN 1 --- [shipping] [io-8080-exec-54] c.a.shipping.config.ResilienceConfig     : CircuitBreaker 'rates' changed state from CLOSED to OPEN (slow call rate 80.0% >= 50.0%)`,
				`2026-03-02T10:55:27.447Z  WARN 1 --- [shipping] [nio-8080-exec-6] c.a.shipping.web.QuoteController         : quote unavailable: io.github.resilience4j.circuitbreaker.CallNotPermittedException: CircuitBreaker 'rates' is OPEN and does not permit further calls`,
				`2026-03-02T10:52:16.085Z  WARN 1 --- [shipping] [nio-8080-exec-6] c.a.shipping.carrier.RatesClient         : slow rates response: POST https://api.rates-provider.example/v2/quote took=6263ms`,
			},
			"rates", map[string]string{"caller": "shipping", "breaker": "rates", "host": "api.rates-provider.example", "slow": "true", "external": "true", "longest": "6.3 s"},
			[]string{`shipping's circuit breaker "rates" opened`, "answers slowly", "third-party", "slow call rate 80.0% >= 50.0%", "up to 6.3 s", "not a change to shipping"}},
		{"Hystrix short-circuited", "orders",
			[]string{`2026-03-02 10:55:01.112 ERROR 1 --- [hystrix-inventory-3] c.a.orders.InventoryGateway : com.netflix.hystrix.exception.HystrixRuntimeException: inventoryLookup short-circuited and no fallback available.`},
			"inventoryLookup", map[string]string{"caller": "orders", "breaker": "inventoryLookup"},
			[]string{`orders's circuit breaker "inventoryLookup" opened`, "fails", "rejects the calls at once"}},
		{"Polly broken circuit", "basket-api",
			[]string{`fail: Basket.Api.PricingClient[0] Polly.CircuitBreaker.BrokenCircuitException: The circuit is now open and is not allowing calls. breaker=pricing-api`},
			"pricing-api", map[string]string{"caller": "basket-api", "breaker": "pricing-api"},
			[]string{`basket-api's circuit breaker "pricing-api" opened`}},
		{"gobreaker state change", "checkout",
			[]string{
				`time=2026-03-02T10:54:40Z level=warn msg="breaker payments-gw: state changed from closed to open"`,
				`time=2026-03-02T10:55:02Z level=error msg="charge failed" err="circuit breaker is open" breaker=payments-gw`,
			},
			"payments-gw", map[string]string{"caller": "checkout", "breaker": "payments-gw"},
			[]string{`checkout's circuit breaker "payments-gw" opened`}},
		// Opened on the dependency's client errors: Spring WebClient's
		// 404, a Go client's status= field, a Node client's 409.
		{"Resilience4j on WebClient 404s", "pdp-bff",
			[]string{
				`2026-03-02T10:52:16.085Z  WARN 1 --- [pdp-bff] [or-http-epoll-4] c.a.pdp.catalog.CatalogClient     : reviews lookup failed for product 2571456: org.springframework.web.reactive.function.client.WebClientResponseException$NotFound: 404 Not Found from GET http://catalog-svc.shop.svc.cluster.local:8080/v1/products/2571456/reviews`,
				`2026-03-02T10:54:40.833Z  WARN 1 --- [pdp-bff] [or-http-epoll-4] c.a.pdp.config.ResilienceEventLogger       : CircuitBreaker 'catalogSvc' changed state from CLOSED to OPEN (failureRate=61.0%, slowCallRate=0.0%, bufferedCalls=100)`,
				`2026-03-02T10:55:27.447Z  WARN 1 --- [pdp-bff] [or-http-epoll-1] c.a.pdp.ProductPageHandler    : page degraded: io.github.resilience4j.circuitbreaker.CallNotPermittedException: CircuitBreaker 'catalogSvc' is OPEN and does not permit further calls`,
			},
			"catalog-svc", map[string]string{"caller": "pdp-bff", "breaker": "catalogSvc", "client_errors": "404 Not Found", "client_calls": "GET /v1/products/{id}/reviews"},
			[]string{"opened on client errors", "404 Not Found", "catalog-svc itself is healthy"}},
		{"gobreaker on status=409", "checkout",
			[]string{
				`time=2026-03-02T10:52:00Z level=warn msg="reserve failed" url=http://stock-api.shop.svc:8080/v1/reservations/9921 status=409 err="reservation exists"`,
				`time=2026-03-02T10:54:40Z level=warn msg="breaker stock-api: state changed from closed to open"`,
			},
			"stock-api", map[string]string{"caller": "checkout", "breaker": "stock-api", "client_errors": "status 409"},
			[]string{"opened on client errors", "status 409"}},
		{"client errors beside server errors are the dependency's failure", "checkout",
			[]string{
				`time=2026-03-02T10:52:00Z level=warn msg="reserve failed" url=http://stock-api.shop.svc:8080/v1/reservations/9921 status=409`,
				`time=2026-03-02T10:52:30Z level=error msg="reserve failed" url=http://stock-api.shop.svc:8080/v1/reservations/9922 status=503`,
				`time=2026-03-02T10:54:40Z level=warn msg="breaker stock-api: state changed from closed to open"`,
			},
			"stock-api", map[string]string{"caller": "checkout", "breaker": "stock-api", "client_errors": ""},
			[]string{"because the dependency it guards, stock-api", "fails"}},
	}
	for _, c := range cases {
		fs := detectBreakerOpen(&Gathered{Logs: []LogSet{logSet(c.caller, false, c.lines...)}})
		if len(fs) != 1 {
			t.Errorf("%s: got %d findings, want 1: %+v", c.name, len(fs), fs)
			continue
		}
		f := &fs[0]
		if f.Subject != c.subject || f.Kind != KindBreakerOpen {
			t.Errorf("%s: subject %q kind %s, want %q", c.name, f.Subject, f.Kind, c.subject)
		}
		for k, v := range c.facts {
			if got := f.fact(k); got != v {
				t.Errorf("%s: fact %s = %q, want %q", c.name, k, got, v)
			}
		}
		checkWritten(t, breakerOpen, f, "", c.wants...)
	}
	// A breaker's configuration at start-up, and a breaker closing, are
	// not a breaker open.
	quiet := logSet("shipping", false,
		`2026-03-02T10:40:11.458Z  INFO 1 --- [shipping] [main] c.a.shipping.config.ResilienceConfig : CircuitBreaker 'rates': slidingWindowSize=20, failureRateThreshold=50, slowCallRateThreshold=50`,
		`2026-03-02T11:40:11.458Z  INFO 1 --- [shipping] [io-8080-exec-4] c.a.shipping.config.ResilienceConfig : CircuitBreaker 'rates' changed state from HALF_OPEN to CLOSED`)
	if fs := detectBreakerOpen(&Gathered{Logs: []LogSet{quiet}}); len(fs) != 0 {
		t.Errorf("configuration and closing lines: got %+v", fs)
	}
}
