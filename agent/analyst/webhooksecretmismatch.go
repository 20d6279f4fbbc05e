package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A webhook receiver verifying the sender's signatures with a signing
// secret that is no longer the sender's. A provider signs each delivery
// with the secret of the webhook endpoint (Stripe's whsec_…, GitHub's
// and Shopify's HMAC key, Svix's whsec_); when the endpoint is recreated
// (a Terraform resource replaced because its URL forces a new one, an
// endpoint deleted and added again, the secret rolled in the provider's
// dashboard) it gets a new secret, while the receiver keeps verifying with
// the old one from its Secret. From then every delivery fails the check
// ("No signatures found matching the expected signature for payload",
// StripeSignatureVerificationError, octokit's "signature does not match
// event payload and secret"), the receiver answers 400, the provider
// marks the deliveries failed and retries them, and whatever waits on the
// events (orders paid, subscriptions renewed) is stuck. The provider is
// not down and its deliveries arrive; the fix is the receiver's secret.

// KindWebhookSecret is a webhook receiver rejecting every delivery on
// its signature: the signing secret it verifies with is not the one the
// sender signs with.
const KindWebhookSecret Kind = "webhook_secret_mismatch"

var (
	// webhookSigRE is a receiver rejecting a delivery on its signature:
	// a provider library's own error, or a failed check a line says of a
	// webhook.
	webhookSigRE = regexp.MustCompile(`(?i)StripeSignatureVerificationError|No signatures found matching the expected signature|webhook had invalid signature|signature does not match event payload and secret|No matching signature found|WebhookVerificationError|(?:webhook|hook)\b.{0,80}(?:signature|hmac)\b.{0,40}(?:mismatch|invalid|did not match|does not match|verification failed|validation failed|failed verification)|(?:invalid|bad|mismatched) (?:webhook )?(?:signature|hmac)\b.{0,80}\bwebhook`)
	// webhookChangeRE is a change that gives a webhook endpoint a new
	// signing secret: the endpoint replaced or recreated, its secret
	// rolled.
	webhookChangeRE = regexp.MustCompile(`(?i)webhook.{0,120}(?:replace|recreat|forces? (?:a )?new|new resource|destroy|delet|roll|rotat|new (?:signing )?secret)|(?:replace|recreat|rotat|roll).{0,80}webhook|signing secret`)
	// webhookSenders are the providers whose deliveries a line may name.
	webhookSenders = []string{"stripe", "github", "gitlab", "shopify", "svix", "twilio", "slack", "paypal", "adyen", "braintree", "sendgrid", "mailgun", "postmark", "hubspot", "zendesk", "intercom", "clerk", "square", "mollie", "checkout.com", "bitbucket"}
)

var webhookSecret = &mechanism{
	kind:   KindWebhookSecret,
	class:  classCause,
	label:  "webhook signing secret not the sender's",
	detect: detectWebhookSecret,
	// The receiver's own rejections and the sender named as the suspect
	// are what the mismatch produces.
	related: func(h *Hypothesis, f *Finding) bool {
		return strings.EqualFold(f.Subject, h.Subject) || h.fact("sender") != "" && strings.EqualFold(f.Subject, h.fact("sender"))
	},
	strictTriggers: true,
	fitsChange:     changeSays(webhookChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		s := orWord(h.fact("sender"), "the sender")
		d := fmt.Sprintf("%s rejects every %s webhook delivery on its signature (signature verification fails, %s answers 400) since %s: the signing secret it verifies with is not the one %s now signs with",
			h.Subject, s, h.Subject, h.fact("onset"), s)
		d += h.quoteClause(" — ", "line", 220)
		if t := h.Trigger; t != nil {
			d += fmt.Sprintf(". The webhook endpoint got a new signing secret when it was replaced or recreated (the change of %s at %s), while %s still holds the old one (its webhook secret, whsec_…)", orWord(t.Subject, "the endpoint"), t.Time.UTC().Format("15:04 UTC"), h.Subject)
		} else {
			d += fmt.Sprintf(". The endpoint's signing secret changed (the endpoint replaced or recreated, or its secret rolled) while %s still holds the old one", h.Subject)
		}
		d += fmt.Sprintf("; %s is not down: its deliveries arrive and are refused, and it retries them", s)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := orWord(h.fact("sender"), "the sender")
		r.high("Put the endpoint's current signing secret (from %s's dashboard or API for the endpoint) into %s's Secret and restart or reload %s", s, h.Subject, h.Subject)
		r.high("Resend the failed deliveries from %s (its retries, or a resend of the events since %s) so that the stuck work completes", s, h.fact("onset"))
		r.med("Write the endpoint's secret from the same change that creates the endpoint (the Terraform resource's secret into the secret store), so that a replaced endpoint updates the receiver")
		r.low("Alert on the receiver's signature failures and on the provider's failed deliveries")
	},
}

// detectWebhookSecret reads, per workload, lines that reject webhook
// deliveries on their signature, new in the incident.
func detectWebhookSecret(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for si := range ev.Logs {
		set := &ev.Logs[si]
		if set.Host || set.Subject == "" || seen[set.Subject] {
			continue
		}
		var line string
		var first time.Time
		n := 0
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(webhookSigRE, t.Example) {
				continue
			}
			n += t.Incident
			at := orTime(t.FirstIncident, t.FirstSeen)
			if line == "" || at.Before(first) {
				line, first = t.Example, at
			}
		}
		// A stray bad signature is a forged or replayed call; every
		// delivery rejected is the secret.
		if line == "" || n < 3 {
			continue
		}
		seen[set.Subject] = true
		sender := ""
		low := strings.ToLower(line)
		for _, s := range webhookSenders {
			if strings.Contains(low, s) {
				sender = s
				break
			}
		}
		f := Finding{Kind: KindWebhookSecret, Subject: set.Subject, Namespace: orWord(set.Namespace, ev.Scope.Namespace), Source: SrcLogs, Time: first, Severity: SevCritical,
			Weight: 0.9, Object: "webhook receiver " + set.Subject,
			Summary: fmt.Sprintf("%s rejects %d webhook deliveries on their signature since %s", set.Subject, n, first.UTC().Format("15:04 UTC"))}
		if sender != "" {
			f.Related = []string{sender}
		}
		f.setFact("sender", sender)
		f.setFact("line", line)
		f.setFact("onset", first.UTC().Format("15:04 UTC"))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s rejects webhook deliveries on their signature (%d lines since %s): %s", set.Subject, n, first.UTC().Format(time.RFC3339), quote(ReadableLine(line), 220)))
		out = append(out, f)
	}
	return out
}
