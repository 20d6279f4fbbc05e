package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestWebhookSecret: a receiver rejecting webhook deliveries on their
// signature (Stripe's Node, Python and Go libraries, octokit, Svix, a
// hand-written HMAC check) is the signing secret; a JWT's invalid
// signature, a stray rejection or a rejection older than the incident is
// not.
func TestWebhookSecret(t *testing.T) {
	cases := []struct {
		name, line, sender string
		n                  int
		want               bool
	}{
		{"stripe node", `1795615974033 WARN webhook rejected err={"type":"StripeSignatureVerificationError","message":"No signatures found matching the expected signature for payload. Are you passing the raw request body you received from Stripe?"} status=400 path=/stripe`, "stripe", 40, true},
		{"stripe python", `stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload`, "stripe", 12, true},
		{"stripe go", `2026/04/02 10:11:12 stripe webhook: error verifying webhook signature: webhook had invalid signature`, "stripe", 9, true},
		{"octokit", `[@octokit/webhooks] signature does not match event payload and secret (delivery 7a1c0e20-a3f1-11ef-8f4b-2d7b5c1e9a11, event push)`, "", 20, true},
		{"svix", `ERROR handling webhook: WebhookVerificationError: No matching signature found`, "", 30, true},
		{"hand-written hmac", `level=warn msg="shopify webhook HMAC validation failed" topic=orders/paid shop=acme.myshopify.com`, "shopify", 8, true},
		{"jwt signature", `level=error msg="token rejected" err="token signature is invalid: crypto/rsa: verification error"`, "", 50, false},
		{"a stray rejection", `stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload`, "", 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := time.Date(2026, 4, 2, 10, 11, 12, 0, time.UTC)
			ev := &Gathered{Logs: []LogSet{{Source: "hooks-7c6b5d9f8-h4kqz", Subject: "hooks", Namespace: "billing",
				Templates: []analysis.LogTemplate{{Template: c.line, Example: c.line, Count: c.n, Incident: c.n, FirstSeen: at}}}}}
			out := detectWebhookSecret(ev, nil)
			if (len(out) > 0) != c.want {
				t.Fatalf("found %d, want %v", len(out), c.want)
			}
			if !c.want {
				return
			}
			f := out[0]
			if f.Subject != "hooks" || f.fact("sender") != c.sender || !f.Time.Equal(at) {
				t.Errorf("finding %s sender %q at %s", f.Subject, f.fact("sender"), f.Time)
			}
			d := webhookSecret.describe(&Hypothesis{Kind: KindWebhookSecret, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, "signing secret") || !strings.Contains(d, "signature") {
				t.Errorf("described %q", d)
			}
		})
	}
	// Rejections that began before the incident are not new.
	l := cases[1].line
	ev := &Gathered{Logs: []LogSet{{Subject: "hooks", Templates: []analysis.LogTemplate{{Template: l, Example: l, Count: 20}}}}}
	if out := detectWebhookSecret(ev, nil); len(out) > 0 {
		t.Errorf("old rejections: found %s", out[0].Summary)
	}
}
