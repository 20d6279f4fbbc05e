package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// PeerAuthentications as kubectl prints them: the table across
// namespaces, the table of one namespace (-n, no NAMESPACE column) and
// the YAML.
func TestStrictPolicies(t *testing.T) {
	outs := []evidence.CommandOutput{
		{Run: "kubectl get peerauthentication -A", Lines: []string{
			"NAMESPACE      NAME      MODE         AGE",
			"istio-system   default   PERMISSIVE   402d",
			"orders         default   STRICT       11h"}},
		{Run: "kubectl get pa -n payments", Lines: []string{
			"NAME            MODE     AGE",
			"ledger-strict   STRICT   3d"}},
		{Run: "kubectl get peerauthentications.security.istio.io -n billing -o yaml", Lines: []string{
			"apiVersion: v1",
			"items:",
			"- apiVersion: security.istio.io/v1",
			"  kind: PeerAuthentication",
			"  metadata:",
			"    name: default",
			"    namespace: billing",
			"  spec:",
			"    mtls:",
			"      mode: STRICT"}},
		{Run: "kubectl get pods -n orders", Lines: []string{"NAME READY STATUS", "orders-api-1 1/1 Running STRICT"}},
	}
	got := strictPolicies(outs)
	want := []string{"orders/default", "payments/ledger-strict", "billing/default"}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %v", got, want)
	}
	for i, p := range got {
		if p.namespace+"/"+p.name != want[i] {
			t.Errorf("policy %d = %s/%s, want %s", i, p.namespace, p.name, want[i])
		}
	}
	cs := strictFromChanges([]evidence.Change{
		{Description: "mesh-hardening phase 3: PeerAuthentication orders/default mode STRICT"},
		{Description: "PeerAuthentication orders/default mode PERMISSIVE (rollback)"},
		{Description: "enable STRICT mode for the rate limiter"},
	})
	if len(cs) != 1 || cs[0].namespace != "orders" || cs[0].name != "default" {
		t.Fatalf("from changes: %+v", cs)
	}
}
