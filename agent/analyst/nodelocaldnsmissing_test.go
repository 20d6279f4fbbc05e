package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNodeLocalDNSMissing: pods pointed at the node-local cache on nodes
// where no node-local-dns pod runs are why their lookups time out; the
// address is read from resolv.conf, a dig timeout or a Go resolver error,
// the nodes' shared zone from their labels and the DaemonSet's affinity
// from its YAML. Pods on nodes with the cache, or a resolver that is not
// node-local, are not this.
func TestNodeLocalDNSMissing(t *testing.T) {
	node := func(name, zone string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/zone": zone}}}
	}
	pod := func(name, node string, ready bool, restarts int32) corev1.Pod {
		st := corev1.ConditionTrue
		if !ready {
			st = corev1.ConditionFalse
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "search"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: st}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: restarts}}}}
	}
	cachePod := func(name, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": "node-local-dns"}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	nodes := []corev1.Node{node("gke-a-1", "us-east1-b"), node("gke-a-2", "us-east1-c"), node("gke-b-1", "us-east1-d"), node("gke-b-2", "us-east1-d")}
	pods := []corev1.Pod{pod("search-5d8f9c7b6-aaaaa", "gke-a-1", true, 0), pod("search-5d8f9c7b6-bbbbb", "gke-b-1", false, 4), pod("search-5d8f9c7b6-ccccc", "gke-b-2", false, 3)}
	cache := []corev1.Pod{cachePod("node-local-dns-x1", "gke-a-1"), cachePod("node-local-dns-x2", "gke-a-2")}
	resolv := evidence.CommandOutput{Command: "kubectl -n shop exec search-5d8f9c7b6-bbbbb -- cat /etc/resolv.conf", Exec: true, Pod: "search-5d8f9c7b6-bbbbb", Run: "cat /etc/resolv.conf",
		Lines: []string{"search shop.svc.cluster.local svc.cluster.local cluster.local", "nameserver 169.254.20.10", "options ndots:5"}}
	dig := evidence.CommandOutput{Command: "kubectl -n shop exec search-5d8f9c7b6-bbbbb -- dig +time=2 +tries=1 es.shop.svc.cluster.local", Exec: true, Pod: "search-5d8f9c7b6-bbbbb", Run: "dig +time=2 +tries=1 es.shop.svc.cluster.local", ExitCode: 9,
		Lines: []string{";; communications error to 169.254.20.10#53: timed out", ";; no servers could be reached"}}
	goErr := evidence.CommandOutput{Command: "kubectl -n shop exec search-5d8f9c7b6-bbbbb -- wget -qO- http://es:9200", Exec: true, Pod: "search-5d8f9c7b6-bbbbb", Run: "wget -qO- http://es:9200",
		Lines: []string{"wget: bad address 'es'", `dial tcp: lookup es.shop.svc.cluster.local on 169.254.25.10:53: read udp 10.8.2.4:40211->169.254.25.10:53: i/o timeout`}}
	direct := evidence.CommandOutput{Command: "kubectl -n shop exec search-5d8f9c7b6-bbbbb -- dig +short @10.96.0.10 es.shop.svc.cluster.local", Exec: true, Pod: "search-5d8f9c7b6-bbbbb", Run: "dig +short @10.96.0.10 es.shop.svc.cluster.local", ExitCode: -1, Lines: []string{"10.96.41.7"}}
	affinity := evidence.CommandOutput{Command: "kubectl -n kube-system get ds node-local-dns -o yaml", Lines: []string{
		"      affinity:", "        nodeAffinity:", "          requiredDuringSchedulingIgnoredDuringExecution:", "            nodeSelectorTerms:", "            - matchExpressions:",
		"              - key: topology.kubernetes.io/zone", "                operator: In", "                values:", "                - us-east1-b", "                - us-east1-c", "      containers:"}}
	dnsFailed := []Finding{{Kind: KindDNS, Subject: "search", Namespace: "shop", Time: win.Start.Add(5 * time.Minute)}}
	for _, c := range []struct {
		name  string
		g     Gathered
		found []Finding
		want  []string
	}{
		{"resolv.conf, dig, the affinity and the cluster DNS answering", Gathered{K8s: K8sEvidence{Pods: pods, NodeDNS: cache, Nodes: nodes}, Commands: []evidence.CommandOutput{resolv, dig, direct, affinity}},
			dnsFailed, []string{"169.254.20.10", "us-east1-d nodes", "affinity lists only us-east1-b, us-east1-c, not us-east1-d", "10.96.0.10 answers", "search-5d8f9c7b6-aaaaa"}},
		{"a Go resolver's timeout names the address", Gathered{K8s: K8sEvidence{Pods: pods, NodeDNS: cache, Nodes: nodes}, Commands: []evidence.CommandOutput{goErr}},
			dnsFailed, []string{"169.254.25.10", "no node-local-dns pod runs on the us-east1-d nodes"}},
		{"the cache runs on every node of the pods", Gathered{K8s: K8sEvidence{Pods: pods, NodeDNS: append(cache, cachePod("node-local-dns-x3", "gke-b-1"), cachePod("node-local-dns-x4", "gke-b-2")), Nodes: nodes}, Commands: []evidence.CommandOutput{resolv, dig}},
			dnsFailed, nil},
		{"the pods use the cluster DNS Service", Gathered{K8s: K8sEvidence{Pods: pods, NodeDNS: cache, Nodes: nodes}, Commands: []evidence.CommandOutput{{Pod: "search-5d8f9c7b6-bbbbb", Exec: true, Lines: []string{"nameserver 10.96.0.10"}}}},
			dnsFailed, nil},
		{"no failed lookups", Gathered{K8s: K8sEvidence{Pods: pods, NodeDNS: cache, Nodes: nodes}, Commands: []evidence.CommandOutput{resolv, dig}}, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.g.Window = win
			fs := detectNodeLocalDNSMissing(&c.g, c.found)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("found %+v", fs[0].Facts)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "search" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindNodeLocalDNSMissing, Subject: "search", Primary: []*Finding{&fs[0]}}
			d := nodeLocalDNSMissing.describe(h, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	h := &Hypothesis{Kind: KindNodeLocalDNSMissing, Subject: "search"}
	for _, c := range []struct {
		f    Finding
		want bool
	}{
		{Finding{Kind: KindInfraChange, Facts: map[string]string{"description": "node group general-c launch template v12 -> v14"}}, true},
		{Finding{Kind: KindInfraChange, Facts: map[string]string{"description": "GKE node pool pool-d added in us-east1-d"}}, true},
		{Finding{Kind: KindDeploy, Facts: map[string]string{"description": "search 4.7.0: new ranking model"}}, false},
	} {
		if got := nodeLocalDNSMissing.fitsChange(h, &c.f); got != c.want {
			t.Errorf("%q fits: %v", c.f.fact("description"), got)
		}
	}
}
