package analyst

import (
	"strings"
	"testing"
)

// TestHandlerPanicLines reads a request handler's crash that the server
// survives as each server logs it, and leaves a process's own fatal panic
// and a caller's reset to their rules.
func TestHandlerPanicLines(t *testing.T) {
	testLines(t, handlerPanic, []lineCase{
		// Go net/http
		{`2026/11/26 10:04:03 http: panic serving 10.42.3.88:40312: assignment to entry in nil map`, KindHandlerPanic},
		{`2026/11/26 10:04:03 http: panic serving [::1]:51234: runtime error: invalid memory address or nil pointer dereference`, KindHandlerPanic},
		// Gin's recovery middleware
		{`[GIN] 2026/11/26 - 10:04:03 [Recovery] 2026/11/26 - 10:04:03 panic recovered: runtime error: index out of range [3] with length 3`, KindHandlerPanic},
		// gRPC-Go recovery interceptor
		{`{"level":"error","msg":"grpc: recovered from panic","method":"/pricing.v1.Pricing/Quote","panic":"runtime error: index out of range [3] with length 3"}`, KindHandlerPanic},
		// Near misses: a servlet container's or a framework's wrapper of
		// any failure (here a database out of connections), a process
		// that dies of its panic, a caller's reset.
		{`2026-11-24T09:42:23.295Z ERROR 1 --- [http-nio-8080-exec-38] o.a.c.c.C.[.[.[/].[dispatcherServlet] : Servlet.service() for servlet [dispatcherServlet] in context with path [] threw exception [Request processing failed: org.springframework.transaction.CannotCreateTransactionException: Could not open JPA EntityManager for transaction] with root cause`, ""},
		{`[2026-11-26 10:04:03,118] ERROR in app: Exception on /v2/quote [POST]`, ""},
		{`panic: assignment to entry in nil map`, KindAppCrash},
		{`request to http://pricing-svc.shop.svc.cluster.local:8080/v2/quote failed, reason: socket hang up ECONNRESET`, KindConnReset},
	})
}

// TestHandlerPanicStack reads the application's own frame from a Go and
// a Java stack, skipping the runtime, the standard library and the
// frameworks.
func TestHandlerPanicStack(t *testing.T) {
	cases := []struct {
		name, stack, frame, at string
	}{
		{"Go net/http recovery", `2026/11/26 10:04:03 http: panic serving 10.42.3.88:40312: assignment to entry in nil map
goroutine 2291 [running]:
net/http.(*conn).serve.func1()
	/usr/local/go/src/net/http/server.go:1947 +0xbe
panic({0x9b2f60?, 0xbe1c30?})
	/usr/local/go/src/runtime/panic.go:785 +0x132
github.com/acme-shop/pricing-svc/internal/discount.(*Engine).applyTier(0xc0001c6a80, 0xc000e1a3c0, {0xc0004d2b40, 0x2, 0x2})
	/src/internal/discount/tier.go:88 +0x2b4
github.com/acme-shop/pricing-svc/internal/api.(*Server).quote(0xc000136000, {0xb8c6d0, 0xc0002fe1c0}, 0xc000e10480)
	/src/internal/api/quote.go:47 +0x2f8`, "github.com/acme-shop/pricing-svc/internal/discount.(*Engine).applyTier", "/src/internal/discount/tier.go:88"},
		{"Spring MVC", `java.lang.NullPointerException: Cannot invoke "java.util.Map.get(Object)" because "this.tiers" is null
	at java.base/java.util.Objects.requireNonNull(Objects.java:233)
	at org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:885)
	at com.acme.pricing.discount.TierEngine.apply(TierEngine.java:88)
	at com.acme.pricing.api.QuoteController.quote(QuoteController.java:47)`, "com.acme.pricing.discount.TierEngine.apply", "TierEngine.java:88"},
		{"only the standard library", `net/http.(*conn).serve.func1()
	/usr/local/go/src/net/http/server.go:1947 +0xbe`, "", ""},
	}
	for _, c := range cases {
		frame, at := appFrame(strings.Split(c.stack, "\n"))
		if frame != c.frame || at != c.at {
			t.Errorf("%s: appFrame = %q, %q; want %q, %q", c.name, frame, at, c.frame, c.at)
		}
	}
}

// TestHandlerPanicExplained follows the panic of a mined log to its
// message and the application's frames, and describes the callers' resets
// as its consequence.
func TestHandlerPanicExplained(t *testing.T) {
	set := minedSet("pricing-svc", false, 0,
		`2026/11/26 10:04:03 http: panic serving 10.42.3.88:40312: assignment to entry in nil map`,
		`goroutine 2291 [running]:`,
		`github.com/acme-shop/pricing-svc/internal/discount.(*Engine).applyTier(0xc0001c6a80, 0xc000e1a3c0, {0xc0004d2b40, 0x2, 0x2})`,
		`	/src/internal/discount/tier.go:88 +0x2b4`,
		`net/http.HandlerFunc.ServeHTTP(0xc000e10360?, {0xb8c6d0?, 0xc0002fe1c0?}, 0x0?)`,
	)
	found := DetectLogs([]LogSet{set}, win)
	handlerPanic.detect(&Gathered{Logs: []LogSet{set}, Window: win}, found)
	var f *Finding
	for i := range found {
		if found[i].Kind == KindHandlerPanic {
			f = &found[i]
		}
	}
	if f == nil {
		t.Fatalf("no handler panic in %v", found)
	}
	if f.fact("panic_message") != "assignment to entry in nil map" || !strings.Contains(f.fact("panic_stack"), "applyTier") || f.fact("why") == "" {
		t.Errorf("message %q stack %q why %q", f.fact("panic_message"), f.fact("panic_stack"), f.fact("why"))
	}
	caller := &Finding{Kind: KindConnReset, Subject: "pricing-svc", Facts: map[string]string{"caller": "orders-web"}}
	h := &Hypothesis{Kind: KindHandlerPanic, Subject: "pricing-svc", Primary: []*Finding{f}, Support: []*Finding{caller}}
	wantDescribed(t, h, Scope{}, "pricing-svc panics on some requests", "nil map", "applyTier", "closes the connection", "orders-web")
	own := &Finding{Kind: KindDeploy, Subject: "pricing-svc"}
	other := &Finding{Kind: KindConfigChange, Subject: "promo-banner-sync"}
	if !handlerPanic.fitsChange(h, own) || handlerPanic.fitsChange(h, other) {
		t.Errorf("its own release fits, another service's change does not")
	}
}
