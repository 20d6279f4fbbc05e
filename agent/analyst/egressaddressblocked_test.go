package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestEgressAddressBlocked: a caller's connections to a public address
// that time out (Java's WebClient, Go's dial i/o timeout, Node's connect
// ETIMEDOUT, curl's error 28) while its egress NetworkPolicies let the
// port out only to address blocks that do not hold the address (or hold
// it under except) are the policies'; a block that holds it, a rule with
// no destinations, a private address, a refused connection, a policy of
// other pods or a second timed-out address the policy lets out is not.
func TestEgressAddressBlocked(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	block := func(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
		return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
	}
	pol := func(sel map[string]string, https ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicy {
		return npPolicy("freight", "quotes-egress", sel, egressOnly,
			networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(udp, 53), npPort(tcp, 53)}, To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: npNamespace("kube-system")}}},
			networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{npPort(tcp, 443)}, To: https})
	}
	app := map[string]string{"app": "quote-api"}
	javaLine := `2026-05-04T03:12:09.101Z ERROR 1 --- [quote-api] [or-http-epoll-2] c.e.freight.CarrierClient : quote failed after 5003ms: org.springframework.web.reactive.function.client.WebClientRequestException: connection timed out after 5000 ms: api.carrier.example/203.0.113.72:443`
	goLine := `2026-05-04T03:12:09.101Z ERROR quote failed {"error": "Post \"https://api.carrier.example/v2/rates\": dial tcp 203.0.113.72:443: i/o timeout"}`
	nodeLine := `Error: connect ETIMEDOUT 203.0.113.72:443 at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)`
	curlLine := `curl: (28) Failed to connect to 203.0.113.72 port 443 after 5001 ms: Timeout was reached`
	privLine := `2026-05-04T03:12:09.101Z ERROR quote failed {"error": "dial tcp 10.40.3.7:443: i/o timeout"}`
	refused := `2026-05-04T03:12:09.101Z ERROR quote failed {"error": "dial tcp 203.0.113.72:443: connect: connection refused"}`
	otherLine := `2026-05-04T03:12:19.101Z ERROR quote failed {"error": "Post \"https://api.other.example/v1/rates\": dial tcp 198.51.100.20:443: i/o timeout"}`
	old := block("198.51.100.16/28")
	cases := []struct {
		name  string
		lines []string
		pols  []networkingv1.NetworkPolicy
		want  bool
		host  string
	}{
		{"java webclient, old block", []string{javaLine}, []networkingv1.NetworkPolicy{pol(app, old)}, true, "api.carrier.example"},
		{"go dial timeout", []string{goLine}, []networkingv1.NetworkPolicy{pol(app, old, block("153.2.224.0/20"))}, true, "api.carrier.example"},
		{"node ETIMEDOUT", []string{nodeLine}, []networkingv1.NetworkPolicy{pol(nil, old)}, true, ""},
		{"curl 28", []string{curlLine}, []networkingv1.NetworkPolicy{pol(app, old)}, true, ""},
		{"address under except", []string{goLine}, []networkingv1.NetworkPolicy{pol(app, block("203.0.113.0/24", "203.0.113.64/27"))}, true, "api.carrier.example"},
		{"block holds the address", []string{goLine}, []networkingv1.NetworkPolicy{pol(app, old, block("203.0.113.64/27"))}, false, ""},
		{"rule with no destinations", []string{goLine}, []networkingv1.NetworkPolicy{pol(app)}, false, ""},
		{"private address", []string{privLine}, []networkingv1.NetworkPolicy{pol(app, old)}, false, ""},
		{"refused, not dropped", []string{refused}, []networkingv1.NetworkPolicy{pol(app, old)}, false, ""},
		{"policy of other pods", []string{goLine}, []networkingv1.NetworkPolicy{pol(map[string]string{"app": "label-printer"}, old)}, false, ""},
		{"an allowed address times out too", []string{goLine, otherLine}, []networkingv1.NetworkPolicy{pol(app, old)}, false, ""},
	}
	p := npPod("freight", "quote-api-6cf9b8d7d4-8kzvp", "quote-api")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{p}, NetworkPolicies: c.pols},
				Logs: []LogSet{podLogs(p, "quote-api", 5, time.Date(2026, 5, 4, 3, 12, 9, 0, time.UTC), c.lines...)}}
			out := detectEgressAddressBlocked(ev, nil)
			if (len(out) > 0) != c.want {
				t.Fatalf("found %d, want %v", len(out), c.want)
			}
			if !c.want {
				return
			}
			f := out[0]
			if f.Subject != "quote-api" || f.fact("addresses") != "203.0.113.72" || f.fact("port") != "443" || f.fact("host") != c.host || len(f.Evidence) < 2 {
				t.Errorf("finding %s -> %s %s:%s, %d evidence", f.Subject, f.fact("host"), f.fact("addresses"), f.fact("port"), len(f.Evidence))
			}
			d := egressAddressBlocked.describe(&Hypothesis{Kind: KindEgressAddressBlocked, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, "NetworkPolicy quotes-egress") || !strings.Contains(d, "203.0.113.72") || !strings.Contains(d, "ipBlock") {
				t.Errorf("described %q", d)
			}
		})
	}
}
