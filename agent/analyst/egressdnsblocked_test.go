package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestEgressDNSBlocked: lookups timing out (Go's resolver, Node's
// EAI_AGAIN) from pods that an egress NetworkPolicy selects with no rule
// for port 53 are the policy's; a rule for UDP 53, a named dns port, a
// port range over 53 or a rule with no ports lets DNS out, an
// ingress-only policy or one that selects other pods says nothing, and
// lookups that do not time out are not read.
func TestEgressDNSBlocked(t *testing.T) {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	eg := egressOnly
	pol := func(name string, sel map[string]string, types []networkingv1.PolicyType, egress ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
		return npPolicy("billing", name, sel, types, egress...)
	}
	deny := pol("default-deny-egress", nil, eg)
	appPorts := pol("allow-app-egress", nil, eg, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(tcp, 443), npPort(tcp, 5432)}})
	goLine := `2026-03-02T09:20:11.004Z ERROR charge failed {"error": "dial tcp: lookup ledger-db.billing.svc.cluster.local on 10.96.0.10:53: read udp 10.244.3.17:40122->10.96.0.10:53: i/o timeout"}`
	goLine2 := `2026-03-02T09:20:14.551Z ERROR sync failed {"error": "Get \"https://api.stripe.com/v1/charges\": dial tcp: lookup api.stripe.com on 10.96.0.10:53: read udp 10.244.3.17:51011->10.96.0.10:53: i/o timeout"}`
	nodeLine := `{"level":50,"time":1772443211000,"msg":"request failed","err":"getaddrinfo EAI_AGAIN ledger-db.billing.svc.cluster.local"}`
	nxLine := `2026-03-02T09:20:11.004Z ERROR dial tcp: lookup ledger-db on 10.96.0.10:53: no such host`
	cases := []struct {
		name  string
		lines []string
		pols  []networkingv1.NetworkPolicy
		want  bool
	}{
		{"go resolver, deny + app ports", []string{goLine, goLine2}, []networkingv1.NetworkPolicy{deny, appPorts}, true},
		{"node EAI_AGAIN, deny only", []string{nodeLine}, []networkingv1.NetworkPolicy{deny}, true},
		{"udp 53 allowed", []string{goLine}, []networkingv1.NetworkPolicy{deny, pol("allow-dns", nil, eg, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(udp, 53)}})}, false},
		{"named dns port", []string{goLine}, []networkingv1.NetworkPolicy{deny, pol("allow-dns", nil, eg, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npNamedPort(udp, "dns")}})}, false},
		{"rule with no ports", []string{goLine}, []networkingv1.NetworkPolicy{deny, pol("allow-all-internal", nil, eg, networkingv1.NetworkPolicyEgressRule{})}, false},
		{"ingress only", []string{goLine}, []networkingv1.NetworkPolicy{pol("ingress", nil, ingressOnly)}, false},
		{"selects other pods", []string{goLine}, []networkingv1.NetworkPolicy{pol("deny-batch", map[string]string{"app": "batch-export"}, eg)}, false},
		{"not a timeout", []string{nxLine}, []networkingv1.NetworkPolicy{deny}, false},
	}
	p := npPod("billing", "payments-worker-6c9f7-x2x9q", "payments-worker")
	for _, c := range cases {
		ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{p}, NetworkPolicies: c.pols},
			Logs: []LogSet{podLogs(p, "payments-worker", 3, time.Date(2026, 3, 2, 9, 20, 11, 0, time.UTC), c.lines...)}}
		out := detectEgressDNSBlocked(ev, nil)
		if (len(out) > 0) != c.want {
			t.Errorf("%s: found %v, want %v", c.name, len(out) > 0, c.want)
			continue
		}
		if c.want {
			d := egressDNSBlocked.describe(&Hypothesis{Kind: KindEgressDNSBlocked, Subject: out[0].Subject, Primary: []*Finding{&out[0]}}, Scope{})
			if !strings.Contains(d, "default-deny-egress") || !strings.Contains(d, "port 53") || !out[0].Time.Before(time.Date(2026, 3, 2, 9, 20, 0, 0, time.UTC)) {
				t.Errorf("%s: described %q (onset %s)", c.name, d, out[0].Time)
			}
		}
	}
}
