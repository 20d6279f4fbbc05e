package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTestModeKey reads a service refused by its payment provider because
// its key is of the other mode: Stripe's resource_missing in a JSON log,
// in a Python SDK's exception and in the live-key direction; the key's
// prefix a command prints, the ExternalSecret that syncs it (as -o yaml
// or as an object read) and the secret manager's description of its
// source. A PaymentMethod simply missing is not it.
func TestTestModeKey(t *testing.T) {
	at := win.Start.Add(5 * time.Minute)
	client := func(line string) LogSet {
		return LogSet{Source: "billing-api-7d9c-k2", Subject: "billing-api", Namespace: "billing",
			Templates: []analysis.LogTemplate{{Example: line, Incident: 50, FirstIncident: at, FirstSeen: at}}}
	}
	jsonLine := `{"level":"error","msg":"charge failed","error":"{\"code\":\"resource_missing\",\"message\":\"No such customer: 'cus_Q1x'; a similar object exists in live mode, but a test mode key was used to make this request.\"}"}`
	pyLine := `stripe.error.InvalidRequestError: Request req_9f2: No such PaymentMethod: 'pm_1Q'; a similar object exists in live mode, but a test mode key was used to make this request.`
	liveLine := `Stripe\Exception\InvalidRequestException: No such payment_intent: 'pi_3Q'; a similar object exists in test mode, but a live mode key was used to make this request.`
	prefix := evidence.CommandOutput{Command: "kubectl exec deploy/billing-api -- printenv STRIPE_KEY | cut -c1-8", Lines: []string{"sk_test_"}}
	esYAML := evidence.CommandOutput{Command: "kubectl -n billing get externalsecret stripe-keys -o yaml", Lines: []string{
		"apiVersion: external-secrets.io/v1beta1", "kind: ExternalSecret", "metadata:", "  name: stripe-keys", "  namespace: billing",
		"spec:", "  data:", "  - remoteRef:", "      key: nonprod/billing/stripe", "      property: secret_key", "    secretKey: STRIPE_KEY"}}
	describe := evidence.CommandOutput{Command: "aws secretsmanager describe-secret --secret-id nonprod/billing/stripe", Lines: []string{
		`{`, `  "Name": "nonprod/billing/stripe",`, `  "Description": "Stripe test keys for staging",`, `  "Tags": [{"Key": "env", "Value": "staging"}]`, `}`}}
	cases := []struct {
		name   string
		line   string
		cmds   []evidence.CommandOutput
		custom []evidence.GenericObject
		want   bool
		mode   string
		says   []string
	}{
		{"a JSON log, the key's prefix, the ExternalSecret's yaml and its source", jsonLine, []evidence.CommandOutput{prefix, esYAML, describe}, nil, true, "test",
			[]string{"test mode key in production", "begins sk_test_", "ExternalSecret stripe-keys, which syncs it from nonprod/billing/stripe", "Stripe test keys for staging", "tagged env staging"}},
		{"the Python SDK, the ExternalSecret read as an object", pyLine, nil, []evidence.GenericObject{{Kind: "ExternalSecret", Namespace: "billing", Name: "stripe-keys"}}, true, "test",
			[]string{"ExternalSecret stripe-keys"}},
		{"a live key against test objects", liveLine, nil, nil, true, "live", []string{"live mode key", "on test objects"}},
		{"an object that does not exist", `No such PaymentMethod: 'pm_1Q'`, nil, nil, false, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Logs: []LogSet{client(c.line)}, Commands: c.cmds, K8s: K8sEvidence{Custom: c.custom}}
			f, ok := oneFinding(t, detectTestModeKey(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.Subject != "billing-api" || f.fact("key_mode") != c.mode {
				t.Errorf("subject %q mode %q, want billing-api %q", f.Subject, f.fact("key_mode"), c.mode)
			}
			checkWritten(t, testModeKey, &f, "Point the key", append([]string{"rolling back a release does not help"}, c.says...)...)
		})
	}
}
