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

// TestDrainBlockedFromLogs reads refused evictions from logs, with no
// drain output: an API server's audit event (EKS's audit log in
// CloudWatch, one JSON object a line, with and without a leading time), a
// node manager's or autoscaler's line naming the pod as namespace/name,
// and the node group update that failed on them (aws eks describe-update's
// PodEvictionFailure with the node in its resourceIds). An eviction the
// audit log shows allowed (201) is none.
func TestDrainBlockedFromLogs(t *testing.T) {
	audit := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"5c1e","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ledger/pods/etcd-2/eviction","verb":"create","user":{"username":"eks:node-manager","groups":["system:authenticated"]},"objectRef":{"resource":"pods","namespace":"ledger","name":"etcd-2","apiVersion":"v1","subresource":"eviction"},"responseStatus":{"metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429}}`
	objectOnly := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"create","objectRef":{"resource":"pods","namespace":"ledger","name":"etcd-2","subresource":"eviction"},"responseStatus":{"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","code":429}}`
	allowed := `2026-03-14T10:05:02Z {"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"create","requestURI":"/api/v1/namespaces/ledger/pods/web-1/eviction","responseStatus":{"metadata":{},"code":201}}`
	karpenter := `{"level":"ERROR","time":"2026-03-14T10:04:11.207Z","logger":"controller","message":"failed to evict pod","controller":"node.termination","pod":"ledger/etcd-2","error":"Cannot evict pod as it would violate the pod's disruption budget."}`
	update := evidence.CommandOutput{Command: "aws eks describe-update --name prod --nodegroup-name core-v2 --update-id 9f1c", Lines: []string{
		`{`, `    "update": {`, `        "status": "Failed",`, `        "errors": [`, `            {`,
		`                "errorCode": "PodEvictionFailure",`,
		`                "errorMessage": "Reached max retries while trying to evict pods from nodes in node group core-v2",`,
		`                "resourceIds": [`, `                    "ip-10-4-7-19.eu-west-1.compute.internal"`, `                ]`,
	}}
	three := intstr.FromInt32(3)
	budget := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ledger"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &three},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 3, DesiredHealthy: 3, ExpectedPods: 3}}
	raised := evidence.Change{Service: "etcd", Kind: "config", Description: "etcd PDB minAvailable 2 -> 3"}
	onNode := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-2", Namespace: "ledger"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	logs := func(lines ...string) []LogSet {
		var ls []evidence.LogLine
		for _, l := range lines {
			ls = append(ls, evidence.LogLine{Source: "audit", Text: l})
		}
		return []LogSet{{Source: "audit", Lines: ls}}
	}
	cases := []struct {
		name     string
		logs     []LogSet
		commands []evidence.CommandOutput
		want     []string
	}{
		{"audit event with its time, the failed update", logs("2026-03-14T10:04:09.118Z "+audit, allowed), []evidence.CommandOutput{update},
			[]string{"cannot evict pod ledger/etcd-2 of etcd", "(minAvailable 3) allows no disruption while etcd runs 3 pods",
				"update of node group core-v2 cannot drain ip-10-4-7-19.eu-west-1.compute.internal", "PodEvictionFailure",
				"eviction of pod ledger/etcd-2 by eks:node-manager refused (429)", `etcd PDB minAvailable 2 -> 3`}},
		{"audit objectRef only", logs(objectOnly), nil, []string{"cannot evict pod ledger/etcd-2 of etcd"}},
		{"karpenter's termination controller", logs(karpenter), nil, []string{"cannot evict pod ledger/etcd-2 of etcd", "failed to evict pod"}},
		{"an allowed eviction", logs(allowed), []evidence.CommandOutput{update}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectDrainBlocked(&Gathered{Logs: c.logs, Commands: c.commands, Window: win, Earlier: []evidence.Change{raised},
				K8s: K8sEvidence{Pods: []corev1.Pod{onNode}, PodDisruptionBudgets: []policyv1.PodDisruptionBudget{budget}}}, nil)
			if c.want == nil {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "etcd")
			for _, e := range f.Evidence {
				if strings.Contains(e, "etcd runs 1 pod") {
					t.Errorf("the pods listed on one node read as the workload's: %q", e)
				}
			}
			wantDescribed(t, &Hypothesis{Kind: KindDrainBlocked, Subject: f.Subject, Primary: []*Finding{f}}, Scope{}, c.want...)
		})
	}
}
