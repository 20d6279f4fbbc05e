package analyst

import (
	"regexp"
	"strings"
)

// policyDenial is what an admission webhook's denial says of the policy
// that refused an object: the webhook, the policy (a Kyverno ClusterPolicy,
// a Gatekeeper constraint), its rule and the reason in the policy's words.
type policyDenial struct {
	Webhook, Policy, Rule, Reason string
}

var (
	denialWebhookRE = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)
	// Kyverno: "resource Pod/ns/name was blocked due to the following
	// policies\n\nPOLICY:\n  RULE: 'validation error: ...'".
	kyvernoDenialRE = regexp.MustCompile(`(?s)blocked due to the following polic(?:y|ies)\s+([\w.-]+):\s+([\w.-]+):\s*(.*)`)
	// Gatekeeper: "denied the request: [CONSTRAINT] message".
	gatekeeperDenialRE = regexp.MustCompile(`(?s)denied the request:\s*\[([\w.-]+)\]\s*(.*)`)
	denialRestRE       = regexp.MustCompile(`(?s)denied the request:\s*(.*)`)
	spacesRE           = regexp.MustCompile(`\s+`)
)

// readPolicyDenial reads an admission webhook's denial message; ok is false
// when the message is not one or names no policy nor reason.
func readPolicyDenial(msg string) (d policyDenial, ok bool) {
	m := findSubmatch(denialWebhookRE, msg)
	if m == nil {
		return d, false
	}
	d.Webhook = m[1]
	switch {
	case matchLine(kyvernoDenialRE, msg):
		k := findSubmatch(kyvernoDenialRE, msg)
		d.Policy, d.Rule, d.Reason = k[1], k[2], k[3]
	case matchLine(gatekeeperDenialRE, msg):
		g := findSubmatch(gatekeeperDenialRE, msg)
		d.Policy, d.Reason = g[1], g[2]
	default:
		d.Reason = findSubmatch(denialRestRE, msg)[1]
	}
	d.Reason = strings.TrimSpace(spacesRE.ReplaceAllString(d.Reason, " "))
	d.Reason = strings.Trim(strings.TrimPrefix(d.Reason, "'"), "' ")
	d.Reason = strings.ReplaceAll(d.Reason, "''", "'")
	return d, d.Policy != "" || d.Reason != ""
}

// words describes the denial for a root cause: the policy, its rule and
// its reason.
func (d policyDenial) words() string {
	s := "an admission webhook"
	if d.Webhook != "" {
		s += " (" + d.Webhook + ")"
	}
	s += " denies the pods"
	if d.Policy != "" {
		s += ": policy " + d.Policy
		if d.Rule != "" {
			s += ", rule " + d.Rule
		}
	}
	if d.Reason != "" {
		s += ": " + truncate(d.Reason, 200)
	}
	return s
}

var policyChangeRE = regexp.MustCompile(`(?i)kyverno|gatekeeper|opa\b|admission|webhook|clusterpolicy|\bpolic(y|ies)\b|constraint|validationfailureaction|enforcementaction|\benforce\b`)

// policyChangeFits reports whether a change alters an admission policy:
// it names the policy the denial names, or speaks of admission policies.
func policyChangeFits(policy string, c *Finding) bool {
	t := changeText(c)
	if policy != "" && strings.Contains(t, strings.ToLower(policy)) {
		return true
	}
	return matchLine(policyChangeRE, t)
}
