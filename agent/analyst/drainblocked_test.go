package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDrainBlocked(t *testing.T) {
	drain := evidence.CommandOutput{Command: "kubectl drain ip-10-20-7-41.ec2.internal --ignore-daemonsets --delete-emptydir-data --timeout=0s", Lines: []string{
		"node/ip-10-20-7-41.ec2.internal cordoned",
		"evicting pod search/es-data-1",
		"evicting pod search/search-api-6b9f7c5d8-k2z7m",
		`error when evicting pods/"es-data-1" -n "search" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
		"pod/search-api-6b9f7c5d8-k2z7m evicted",
		`error when evicting pods/"es-data-1" -n "search" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
	}}
	pdbTable := evidence.CommandOutput{Command: "kubectl get pdb -A", Lines: []string{
		"NAMESPACE     NAME                 MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE",
		"kube-system   coredns              N/A             1                 1                     62d",
		"search        es-data              3               N/A               0                     12d",
	}}
	pdbYAML := evidence.CommandOutput{Command: "kubectl get pdb es-data -n search -o yaml", Lines: []string{
		"apiVersion: policy/v1", "kind: PodDisruptionBudget", "spec:", "  minAvailable: 3", "status:",
		"  currentHealthy: 3", "  desiredHealthy: 3", "  disruptionsAllowed: 0", "  expectedPods: 3",
	}}
	var pods []corev1.Pod
	for _, n := range []string{"es-data-0", "es-data-1", "es-data-2"} {
		pods = append(pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "search"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		want     []string // nil for no finding
	}{
		{"drain output only", []evidence.CommandOutput{drain},
			[]string{"cannot evict pod search/es-data-1 of es-data", "its PodDisruptionBudget allows no disruption", "drain of ip-10-20-7-41.ec2.internal"}},
		{"with the budget listed and printed", []evidence.CommandOutput{drain, pdbTable, pdbYAML},
			[]string{"the PodDisruptionBudget es-data (minAvailable 3) allows no disruption while es-data runs 3 pods"}},
		{"a drain that finished", []evidence.CommandOutput{{Command: "kubectl drain node-1 --ignore-daemonsets", Lines: []string{"node/node-1 cordoned", "pod/web-1 evicted", "node/node-1 drained"}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectDrainBlocked(&Gathered{Commands: c.commands, K8s: K8sEvidence{Pods: pods}, Window: win}, nil)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("want no finding: %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "es-data" || !containsStr(fs[0].Related, "ip-10-20-7-41.ec2.internal") {
				t.Fatalf("findings: %+v", fs)
			}
			d := drainBlocked.describe(&Hypothesis{Kind: KindDrainBlocked, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if len(fs[0].Evidence) < 2 {
				t.Errorf("evidence: %v", fs[0].Evidence)
			}
		})
	}
}

// TestDrainBlockedBudgetObject reads the budget that holds the drain from
// its object (kubectl describe pdb, read into a PodDisruptionBudget) of
// another namespace than the one asked about, and the change that created
// the workload with it days before.
func TestDrainBlockedBudgetObject(t *testing.T) {
	drain := evidence.CommandOutput{Command: "kubectl drain gke-pool-a-1234 --ignore-daemonsets", Lines: []string{
		"evicting pod ml/model-7d9f8b6c5-x2k4p",
		`error when evicting pods/"model-7d9f8b6c5-x2k4p" -n "ml" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
	}}
	one := intstr.FromInt32(1)
	budget := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "model-pdb", Namespace: "ml"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "model"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}}
	created := evidence.Change{Service: "model", Kind: "deploy", Description: "new Deployment model (replicas: 1) with a PDB minAvailable: 1"}
	fs := detectDrainBlocked(&Gathered{Commands: []evidence.CommandOutput{drain}, K8s: K8sEvidence{OtherBudgets: []policyv1.PodDisruptionBudget{budget}}, Earlier: []evidence.Change{created}, Window: win}, nil)
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	d := drainBlocked.describe(&Hypothesis{Kind: KindDrainBlocked, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
	for _, w := range []string{"the PodDisruptionBudget model-pdb (minAvailable 1) allows no disruption while model runs 1 pod,"} {
		if !strings.Contains(d, w) {
			t.Errorf("description lacks %q: %s", w, d)
		}
	}
	if ev := strings.Join(fs[0].Evidence, "\n"); !strings.Contains(ev, "0 disruptions allowed") || !strings.Contains(ev, "with a PDB minAvailable") {
		t.Errorf("evidence: %s", ev)
	}
}
