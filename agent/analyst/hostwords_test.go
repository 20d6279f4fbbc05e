package analyst

import "testing"

func TestDependencyTargetSkipsErrorWords(t *testing.T) {
	cases := []struct{ line, want string }{
		// An application's own "lookup" is not a DNS lookup: the peer is named further on.
		{`2026-09-15T15:01:22.611Z warn: [auth-web] POST /login 503 user=u695543 err="session lookup timed out" upstream=session-service status=504 509ms`, "session-service"},
		{`{"time":"2026-09-15T15:01:22.605Z","level":"ERROR","msg":"session lookup failed","op":"GET","key":"session:user:u695543","redis":"sessions-redis-01.internal:6379","err":"redis: i/o timeout","read_timeout":"500ms"}`, "sessions-redis-01.internal:6379"},
		{`2026-08-04T10:42:57.882Z ERROR 1 --- [tax-calculator] [nio-8080-exec-9] c.a.f.tax.TaxRateClient                  : taxrates lookup failed for DE/10115: I/O error on GET request for "https://api.taxrates-vendor.example/v3/rates": Read timed out`, "api.taxrates-vendor.example"},
		{`2026-08-04T10:43:10.001Z ERROR 1 --- [tax-calculator] [nio-8080-exec-5] c.a.f.tax.TaxRateClient                  : taxrates lookup failed for DE/10115: 503 Service Unavailable: "{"error":"maintenance","retry_after":600}"`, ""},
		// Go's resolver errors still name the host looked up.
		{`dial tcp: lookup payments.shop.svc.cluster.local on 10.96.0.10:53: no such host`, "payments"},
		{`level=error msg="publish failed" err="dial tcp: lookup kafka-0.kafka-headless: i/o timeout"`, "kafka-0"},
	}
	for _, c := range cases {
		if got := DependencyTarget(c.line); got != c.want {
			t.Errorf("DependencyTarget(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}
