package analyst

import (
	"strings"
	"testing"
)

// Callers carrying on without a dependency, in the forms real services
// log it (a Node BFF rendering without a section, Resilience4j's and
// Hystrix's fallbacks, a Go client serving its cache, a Python client
// falling back to defaults) against a failed call with nothing to fall
// back to, and a fallback that itself failed.
func TestFallbackLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`2026-11-26T19:19:03.907Z WARN  [cart] recommendations unavailable for cart c_771b0d (GET http://recs-bff:3000/v1/similar: ECONNREFUSED), rendering without recs`, true},
		{`2026-11-26 19:19:03.907  WARN 1 --- [nio-8080-exec-3] c.a.c.RecsClient : CircuitBreaker 'recs' call failed: Connection refused: recs-bff/10.0.3.4:3000; using fallback response`, true},
		{`time=2026-11-26T19:19:03Z level=warn msg="pricing call failed, serving cached price" err="dial tcp 10.0.3.4:8080: connect: connection refused" sku=SKU-1`, true},
		{`2026-11-26 19:19:03,907 WARNING [reviews.client] reviews-api unreachable (ConnectionRefusedError: [Errno 111] Connection refused), falling back to empty reviews`, true},
		{`WARN HystrixCommand getRecommendations timed-out and fallback used; upstream http://recs:8080 Read timed out`, true},
		{`2026-11-26T19:19:03.907Z ERROR [cart] GET http://recs-bff:3000/v1/similar failed: ECONNREFUSED`, false},
		{`ERROR fallback failed: GET http://recs-bff:3000/v1/similar: ECONNREFUSED`, false},
		{`ERROR call to payments-api failed with no fallback available: connection refused`, false},
		{`ERROR request failed without retry: dial tcp 10.0.3.4:5432: connect: connection refused`, false},
	} {
		if got := fallbackLine(tc.line); got != tc.want {
			t.Errorf("fallbackLine(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// A caller's log line saying it carries on without its dependency makes a
// finding about the dependency that does not bear on the caller; the same
// failure logged without a fallback does.
func TestDetectLogsFallbackNotCallers(t *testing.T) {
	fallback := `2026-11-26T19:19:03.907Z WARN  [cart] recommendations unavailable for cart c_771b0d (GET http://recs-bff:3000/v1/similar: ECONNREFUSED), rendering without recs`
	failed := `2026-11-26T19:19:03.907Z ERROR [cart] GET http://recs-bff:3000/v1/similar failed: ECONNREFUSED`
	for _, tc := range []struct {
		name     string
		line     string
		fallback bool
	}{
		{"carries on without it", fallback, true},
		{"fails with it", failed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dep *Finding
			fs := DetectLogs([]LogSet{minedSet("cart-api", false, 0, tc.line, tc.line)}, win)
			for i := range fs {
				if fs[i].Subject == "recs-bff" {
					dep = &fs[i]
				}
			}
			if dep == nil {
				t.Fatalf("no finding on recs-bff: %+v", fs)
			}
			h := &Hypothesis{Kind: dep.Kind, Subject: dep.Subject, Primary: []*Finding{dep}}
			if bears := bearsOn(h, []string{"cart-api"}); bears == tc.fallback {
				t.Errorf("bears on cart-api: %v (facts %v)", bears, dep.Facts)
			}
			if tc.fallback && (dep.fact("fallback_of") != "cart-api" || !strings.Contains(dep.Summary, "carries on without it")) {
				t.Errorf("fallback not said: %q %v", dep.Summary, dep.Facts)
			}
			note, _ := fallbackNote(&Analysis{Hypotheses: []*Hypothesis{h}}, []string{"cart-api"})
			if (note != "") != tc.fallback || tc.fallback && !strings.Contains(note, "cart-api carries on without recs-bff") {
				t.Errorf("healthy answer's note: %q", note)
			}
		})
	}
}
