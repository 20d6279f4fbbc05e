package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestRetryLines(t *testing.T) {
	for _, c := range []struct {
		line           string
		attempt        string
		dup, exhausted bool
	}{
		{`time=2026-10-21T11:04:01.285Z level=WARN msg="request aborted by client" method=POST path=/v1/entries status=499 dur=1051ms idempotency_key=7f16e45282ff attempt=9 err="context canceled"`, "9", false, false},
		{`time=2026-10-21T11:04:01.385Z level=WARN msg="duplicate idempotency key, entry already in progress" idempotency_key=7f16e45282ff attempt=6`, "6", true, false},
		{`{"level":"warn","msg":"retrying call","retry":3,"of":5}`, "3", false, false},
		{`x-envoy-attempt-count: 4`, "4", false, false},
		{`[2026-10-21T11:02:14.568Z] "POST /v1/entries HTTP/1.1" 504 UT,URX response_timeout - "-" 412 24 5014 - "-" "okhttp/4.12.0" "4e099aff-aab6-1798-f8d5-fd4100ea1493" "ledger-service.ledger.svc:8080" "10.244.9.43:8080" outbound|8080||ledger-service.ledger.svc.cluster.local 10.244.3.17:44554 10.0.141.22:8080 10.244.3.17:59200 - default`, "", false, true},
		{`botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation (reached max retries: 4)`, "", false, true},
		{`[2026-10-21T10:05:00.843Z] "POST /v1/entries HTTP/1.1" 201 - via_upstream - "-" 412 96 11 10 "-" "okhttp/4.12.0" "2cba8675" "ledger-service.ledger.svc:8080" "10.244.7.28:8080" outbound|8080||ledger-service.ledger.svc.cluster.local`, "", false, false},
		{`INFO entry posted idempotency_key=7f16e45282ff`, "", false, false},
	} {
		a := ""
		if m := attemptRE.FindStringSubmatch(c.line); m != nil {
			a = m[1]
		}
		if a != c.attempt || duplicateReqRE.MatchString(c.line) != c.dup || retryExhaustedRE.MatchString(c.line) != c.exhausted {
			t.Errorf("%q: attempt %q dup %v exhausted %v", c.line, a, duplicateReqRE.MatchString(c.line), retryExhaustedRE.MatchString(c.line))
		}
	}
}

// TestDetectRetryAmplification names a callee overloaded by retries when
// two signs agree (its own attempt numbers and duplicates, a caller's
// proxy out of retries, a retry setting), and not on one alone.
func TestDetectRetryAmplification(t *testing.T) {
	callee := minedSet("ledger-service", true, 0,
		`2026-10-21T11:04:01.285Z time=2026-10-21T11:04:01.285Z level=WARN msg="request aborted by client" method=POST path=/v1/entries status=499 dur=1051ms idempotency_key=7f16e45282ff attempt=9 err="context canceled"`,
		`2026-10-21T11:04:01.385Z time=2026-10-21T11:04:01.385Z level=WARN msg="duplicate idempotency key, entry already in progress" idempotency_key=7f16e45282ff attempt=6`)
	proxy := minedSet("wallet-api-istio-proxy", true, 0,
		`[2026-10-21T11:02:14.568Z] "POST /v1/entries HTTP/1.1" 504 UT,URX response_timeout - "-" 412 24 5014 - "-" "okhttp/4.12.0" "4e099aff-aab6-1798-f8d5-fd4100ea1493" "ledger-service.ledger.svc:8080" "10.244.9.43:8080" outbound|8080||ledger-service.ledger.svc.cluster.local 10.244.3.17:44554 10.0.141.22:8080 10.244.3.17:59200 - default`)
	setting := evidence.Change{Timestamp: win.Start.Add(-48 * time.Hour), Service: "ledger-service", Kind: "config",
		Description: "VirtualService ledger-service: retries attempts 2 -> 10, perTryTimeout 500ms, retryOn 5xx,reset,connect-failure"}
	unrelated := evidence.Change{Timestamp: win.Start.Add(-48 * time.Hour), Service: "fx-rates", Kind: "config", Description: "fx-rates: retries attempts 1 -> 3"}
	sc := Scope{Service: "payments-gateway"}
	for _, c := range []struct {
		name    string
		sets    []LogSet
		earlier []evidence.Change
		want    bool
	}{
		{"callee's attempts, a caller's proxy out of retries and the mesh setting", []LogSet{callee, proxy}, []evidence.Change{setting}, true},
		{"callee's attempts and the proxy", []LogSet{callee, proxy}, nil, true},
		{"callee's attempts alone", []LogSet{callee}, []evidence.Change{unrelated}, false},
		{"a proxy out of retries alone", []LogSet{proxy}, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectRetryAmplification(&Gathered{Logs: c.sets, Earlier: c.earlier, Window: win, Scope: sc}, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != "ledger-service" || f.fact("max_attempt") != "9" || !strings.Contains(f.fact("callers"), "wallet-api") || !strings.Contains(f.fact("callers"), "payments-gateway") {
				t.Errorf("finding %s: %v", f.Subject, f.Facts)
			}
			h := &Hypothesis{Kind: KindRetryStorm, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describe(h, sc)
			for _, w := range []string{"retry amplification", "ledger-service", "wallet-api", "up to 9 times"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if len(c.earlier) > 0 && !strings.Contains(d, "retries attempts 2 -> 10") {
				t.Errorf("description lacks the setting: %s", d)
			}
			if !retryAmplification.related(h, &Finding{Subject: "payments-gateway", Kind: KindErrorRate}) {
				t.Error("the caller's error rate is not related")
			}
		})
	}
}

// TestRetryChangeSaturation names retry amplification from a change that
// made a caller retry a service more (more attempts, a per-try timeout
// cut) followed by the service saturating, in the mesh's and the clients'
// wordings; seeing the caller's proxy number its attempts makes it direct
// evidence, and a change that retries less, or no saturation after it,
// names nothing.
func TestRetryChangeSaturation(t *testing.T) {
	at := win.Start.Add(5 * time.Minute)
	hpa := Finding{Kind: KindHPAMax, Subject: "scoring", Time: at.Add(4 * time.Minute), Summary: "HPA scoring at its maximum of 3 replicas"}
	proxy := LogSet{Source: "checkout-7c5b9d6f4-8kq2n", Subject: "checkout", Lines: []evidence.LogLine{
		{Time: at.Add(time.Minute), Text: `[2026-10-21T11:06:21.284Z] "POST /v1/score HTTP/1.1" 200 - via_upstream - "-" 468 139 640 238 "-" "checkout/3.4.0" "42b6f8b0" "scoring.risk.svc.cluster.local:8080" "10.30.2.77:8080" outbound|8080||scoring.risk.svc.cluster.local 10.30.1.15:47529 172.20.9.14:8080 10.30.1.15:42395 - default attempts=4`},
		{Time: at.Add(2 * time.Minute), Text: `[2026-10-21T11:07:01.000Z] "POST /v1/score HTTP/1.1" 200 - via_upstream - "-" 468 139 90 88 "-" "checkout/3.4.0" "52b6f8b0" "scoring.risk.svc.cluster.local:8080" "10.30.2.77:8080" outbound|8080||scoring.risk.svc.cluster.local 10.30.1.15:47529 172.20.9.14:8080 10.30.1.15:42395 - default attempts=1`},
	}}
	cases := []struct {
		name   string
		change string
		found  []Finding
		sets   []LogSet
		want   bool
		direct bool
		perTry string
	}{
		{"Istio VirtualService: attempts up, perTryTimeout cut", "VirtualService scoring (checkout): timeout 2s -> 1500ms, retries attempts 2 -> 4, perTryTimeout 1s -> 300ms", []Finding{hpa}, nil, true, false, "300ms"},
		{"the same, the caller's proxy numbering its attempts", "VirtualService scoring (checkout): retries attempts 2 -> 4, perTryTimeout 1s -> 300ms", []Finding{hpa}, []LogSet{proxy}, true, true, "300ms"},
		{"a client's retry library", "checkout: resilience4j retry for scoring maxAttempts 3 -> 6", []Finding{hpa}, nil, true, false, ""},
		{"Linkerd/Envoy per-try timeout alone", "checkout -> scoring: per_try_timeout 2s to 250ms (retry on 5xx)", []Finding{hpa}, nil, true, false, "250ms"},
		{"retries cut back", "VirtualService scoring (checkout): retries attempts 4 -> 2, perTryTimeout 300ms -> 1s", []Finding{hpa}, nil, false, false, ""},
		{"no saturation after it", "VirtualService scoring (checkout): retries attempts 2 -> 4, perTryTimeout 1s -> 300ms", nil, nil, false, false, ""},
	}
	for _, c := range cases {
		ev := &Gathered{Logs: c.sets, Window: win, Scope: Scope{Service: "scoring"},
			Changes: []evidence.Change{{Timestamp: at, Service: "checkout", Kind: "config", Description: c.change}}}
		fs := detectRetryAmplification(ev, c.found)
		if (len(fs) == 1) != c.want {
			t.Errorf("%s: %d findings", c.name, len(fs))
			continue
		}
		if !c.want {
			continue
		}
		f := fs[0]
		if f.Subject != "scoring" || !f.relates("checkout") {
			t.Errorf("%s: subject %q related %v", c.name, f.Subject, f.Related)
		}
		if (f.fact("state_only") == "") != c.direct {
			t.Errorf("%s: state_only %q, want direct %v", c.name, f.fact("state_only"), c.direct)
		}
		h := &Hypothesis{Kind: KindRetryStorm, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
		d := retryAmplification.describe(h, Scope{})
		for _, s := range []string{"retr", "scoring", c.perTry} {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
}
