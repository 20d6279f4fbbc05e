package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A workload's PodDisruptionBudget is named with what it requires and
// allows, read from every form kubectl prints it in (a get pdb row, a
// describe page, YAML and JSON with their status), matched to the workload
// by its selector over the pods' labels, or by name for a table row; a
// budget of another workload is not its, and a budget row kept as text
// still counts.
func TestBudgetOf(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 40, 0, 0, time.UTC)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "search-api", Namespace: "search"}}
	pods := []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "search-api-7c4d9b8f6-q9z4d", Namespace: "search",
		Labels:          map[string]string{"app": "search-api", "pod-template-hash": "7c4d9b8f6"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "search-api-7c4d9b8f6"}}}}}
	for _, tc := range []struct {
		name, text string
		want, held string
	}{
		{"get pdb row", `$ kubectl get pdb -n search
NAME         MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE
search-api   3               N/A               1                     402d
`, "search-api: minAvailable 3, 1 disruption allowed", "at least 3 stayed available"},
		{"describe", `$ kubectl describe pdb search-api-pdb -n search
Name:             search-api-pdb
Namespace:        search
Max unavailable:  1
Selector:         app=search-api
Status:
    Allowed disruptions:  1
    Current:              4
    Desired:              3
    Total:                4
Events:                   <none>
`, "search-api-pdb: maxUnavailable 1, 1 disruption allowed, 4 pods healthy (3 required)", "no more than 1 were unavailable"},
		{"yaml", `$ kubectl get pdb api-budget -n search -o yaml
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  creationTimestamp: "2025-10-18T08:00:00Z"
  name: api-budget
  namespace: search
spec:
  maxUnavailable: 25%
  selector:
    matchLabels:
      app: search-api
status:
  currentHealthy: 3
  desiredHealthy: 3
  disruptionsAllowed: 0
  expectedPods: 4
  observedGeneration: 1
`, "api-budget: maxUnavailable 25%, 0 disruptions allowed, 3 pods healthy (3 required)", "no more than 25% were unavailable"},
		{"json", `$ kubectl get poddisruptionbudget api-budget -n search -o json
{
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "api-budget", "namespace": "search", "creationTimestamp": "2025-10-18T08:00:00Z"},
    "spec": {"minAvailable": 2, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["search-api", "search-web"]}]}},
    "status": {"currentHealthy": 4, "desiredHealthy": 2, "disruptionsAllowed": 2, "expectedPods": 4, "observedGeneration": 3}
}
`, "api-budget: minAvailable 2, 2 disruptions allowed, 4 pods healthy (2 required)", "at least 2 stayed available"},
		{"another workload's budget", `$ kubectl get pdb -n search
NAME             MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE
search-indexer   1               N/A               0                     40d
$ kubectl describe pdb web -n search
Name:           web
Namespace:      search
Min available:  1
Selector:       app=search-web
Status:
    Allowed disruptions:  1
    Current:              2
    Desired:              1
    Total:                2
Events:                   <none>
`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := K8sEvidence{Pods: pods}
			for _, o := range kubetext.Parse([]byte(tc.text), now).Objects {
				if b, ok := o.(*policyv1.PodDisruptionBudget); ok {
					k.PodDisruptionBudgets = append(k.PodDisruptionBudgets, *b)
				}
			}
			got, held := budgetOf(&k, nil, dep)
			if got != tc.want || !strings.Contains(held, tc.held) {
				t.Errorf("budgetOf = %q, %q; want %q, %q", got, held, tc.want, tc.held)
			}
		})
	}
	// a row kubetext did not read (kept as text) still names it
	cmds := []evidence.CommandOutput{{Command: "kubectl get pdb -n search -o wide | grep search", Lines: []string{"search-api   3               N/A               1                     402d"}}}
	if got, held := budgetOf(&K8sEvidence{}, cmds, dep); got != "search-api: minAvailable 3, 1 disruption allowed" || !strings.Contains(held, "at least 3") {
		t.Errorf("from text: %q, %q", got, held)
	}
	if w := noActionWords("search-api", "search-api: minAvailable 3, 1 disruption allowed"); strings.Contains(w, "give it a PodDisruptionBudget") {
		t.Errorf("a workload with a budget is told to get one: %s", w)
	}
}
