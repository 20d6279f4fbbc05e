package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestEgressCallBlocked: a caller's connections to a cluster Service that
// time out (undici's ConnectTimeoutError, Go's dial i/o timeout, curl's
// error 28, urllib3's ConnectTimeout) while the egress NetworkPolicies of
// its namespace select its pods and let nothing out to the Service's
// namespace and port are the policies'; a rule to that namespace and
// port, a rule with no ports, an address block, pods whose labels were
// not read, an ingress-only policy or a policy of other pods lets them
// out (or cannot tell), and a refused connection is not read.
func TestEgressCallBlocked(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port, nsSel, eg := npPort, npNamespace, egressOnly
	pol := func(name string, sel map[string]string, types []networkingv1.PolicyType, egress ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
		return npPolicy("shop", name, sel, types, egress...)
	}
	deny := pol("default-deny-all", nil, ingressAndEgress)
	dns := pol("allow-dns-egress", nil, eg, networkingv1.NetworkPolicyEgressRule{
		Ports: []networkingv1.NetworkPolicyPort{port(udp, 53), port(tcp, 53)},
		To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel("kube-system"), PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}}})
	allowTo := func(name, ns string, p int32) networkingv1.NetworkPolicy {
		return pol(name, nil, eg, networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(tcp, p)}, To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel(ns)}}})
	}
	undici := `  [cause]: ConnectTimeoutError: Connect Timeout Error (attempted address: inventory-api.stock.svc.cluster.local:8080, timeout: 10000ms)`
	goLine := `2026-03-02T09:20:11.004Z ERROR load failed {"error": "Get \"http://inventory-api.stock.svc.cluster.local:8080/v1/items\": dial tcp 10.96.14.2:8080: i/o timeout"}`
	curlLine := `curl: (28) Failed to connect to inventory-api.stock.svc.cluster.local port 8080 after 5002 ms: Timeout was reached`
	pyLine := `requests.exceptions.ConnectTimeout: HTTPConnectionPool(host='inventory-api.stock.svc.cluster.local', port=8080): Max retries exceeded with url: /v1/items (Caused by ConnectTimeoutError(<urllib3.connection.HTTPConnection object at 0x7f3c2a1b5e50>, 'Connection to inventory-api.stock.svc.cluster.local timed out. (connect timeout=5)'))`
	refused := `2026-03-02T09:20:11.004Z ERROR load failed {"error": "dial tcp 10.96.14.2:8080: connect: connection refused (inventory-api.stock.svc.cluster.local:8080)"}`
	cases := []struct {
		name string
		line string
		pols []networkingv1.NetworkPolicy
		want bool
	}{
		{"undici, deny + dns", undici, []networkingv1.NetworkPolicy{deny, dns}, true},
		{"go dial timeout, deny only", goLine, []networkingv1.NetworkPolicy{deny}, true},
		{"curl 28", curlLine, []networkingv1.NetworkPolicy{deny, dns}, true},
		{"urllib3 connect timeout", pyLine, []networkingv1.NetworkPolicy{deny, dns}, true},
		{"allowed to another namespace only", goLine, []networkingv1.NetworkPolicy{deny, dns, allowTo("allow-search", "search", 8080)}, true},
		{"allowed to the namespace on the port", goLine, []networkingv1.NetworkPolicy{deny, dns, allowTo("allow-stock", "stock", 8080)}, false},
		{"allowed to the namespace on another port", goLine, []networkingv1.NetworkPolicy{deny, allowTo("allow-stock", "stock", 5432)}, true},
		{"rule with no ports", goLine, []networkingv1.NetworkPolicy{deny, pol("allow-stock", nil, eg, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel("stock")}}})}, false},
		{"address block", goLine, []networkingv1.NetworkPolicy{deny, pol("allow-cidr", nil, eg, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}})}, false},
		{"pods of unread labels", goLine, []networkingv1.NetworkPolicy{deny, pol("allow-inv", nil, eg, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: nsSel("stock"), PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inventory-api"}}}}})}, false},
		{"ingress only", goLine, []networkingv1.NetworkPolicy{pol("deny-ingress", nil, ingressOnly)}, false},
		{"selects other pods", goLine, []networkingv1.NetworkPolicy{pol("deny-batch", map[string]string{"app": "batch-export"}, eg)}, false},
		{"refused, not dropped", refused, []networkingv1.NetworkPolicy{deny, dns}, false},
	}
	p := npPod("shop", "storefront-6c9f7-x2x9q", "storefront")
	svc := ServiceState{}
	svc.Service.Name, svc.Service.Namespace = "inventory-api", "stock"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{p}, NetworkPolicies: c.pols, CalledServices: []ServiceState{svc}},
				Logs: []LogSet{podLogs(p, "storefront", 3, time.Date(2026, 3, 2, 9, 20, 11, 0, time.UTC), c.line)}}
			out := detectEgressCallBlocked(ev, nil)
			if (len(out) > 0) != c.want {
				t.Fatalf("found %d, want %v", len(out), c.want)
			}
			if !c.want {
				return
			}
			f := out[0]
			if f.Subject != "storefront" || f.fact("callee") != "inventory-api" || f.fact("callee_namespace") != "stock" || f.fact("port") != "8080" {
				t.Errorf("finding %s -> %s.%s:%s", f.Subject, f.fact("callee"), f.fact("callee_namespace"), f.fact("port"))
			}
			d := egressCallBlocked.describe(&Hypothesis{Kind: KindEgressCallBlocked, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, "egress NetworkPolicy") || !strings.Contains(d, "default-deny-all") || !strings.Contains(d, "port 8080") {
				t.Errorf("described %q", d)
			}
		})
	}
	// Without the Service or its pods known, a host in a timed-out line
	// is not taken for a Service of the cluster.
	ts := []analysis.LogTemplate{{Template: goLine, Example: goLine, Count: 3, Incident: 3}}
	ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{p}, NetworkPolicies: []networkingv1.NetworkPolicy{deny}},
		Logs: []LogSet{{Source: p.Name, Subject: "storefront", Namespace: "shop", Templates: ts}}}
	if out := detectEgressCallBlocked(ev, nil); len(out) > 0 {
		t.Errorf("unknown callee: found %v", out[0].Summary)
	}
}
