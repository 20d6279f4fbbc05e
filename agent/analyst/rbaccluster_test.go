package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestRBACClusterBindings: a ServiceAccount refused with no RoleBinding is
// followed to the cluster's ClusterRoleBindings, from a kubectl get -o
// wide table or a describe page: one that names the ServiceAccount of that
// name in another namespace (the workload moved, the binding did not) is
// named with the fix (add the subject); one that binds it cluster-wide
// says its ClusterRole lacks the permission refused.
func TestRBACClusterBindings(t *testing.T) {
	now := time.Date(2026, 10, 14, 9, 30, 0, 0, time.UTC)
	pods := `$ kubectl get pods -n platform-v2
NAME                            READY   STATUS    RESTARTS   AGE
node-labeler-6d9f8c7b5-x2k4p    1/1     Running   0          3h
$ kubectl logs -n platform-v2 node-labeler-6d9f8c7b5-x2k4p --tail=2
E1014 09:20:41.220311       1 reflector.go:138] pkg/labeler/informer.go:88: Failed to watch *v1.Node: failed to list *v1.Node: nodes is forbidden: User "system:serviceaccount:platform-v2:node-labeler" cannot list resource "nodes" in API group "" at the cluster scope
E1014 09:21:12.004117       1 reflector.go:138] pkg/labeler/informer.go:88: Failed to watch *v1.Node: failed to list *v1.Node: nodes is forbidden: User "system:serviceaccount:platform-v2:node-labeler" cannot list resource "nodes" in API group "" at the cluster scope
`
	cases := []struct {
		name, bindings string
		says           []string
		action         string
	}{
		{"a table naming the ServiceAccount of the old namespace", `$ kubectl get clusterrolebinding node-labeler -o wide
NAME           ROLE                       AGE    USERS   GROUPS   SERVICEACCOUNTS
node-labeler   ClusterRole/node-labeler   210d                    platform/node-labeler
`, []string{"ClusterRoleBinding node-labeler binds ClusterRole/node-labeler to ServiceAccount platform/node-labeler, of another namespace, not to platform-v2/node-labeler"},
			"Add ServiceAccount platform-v2/node-labeler to the subjects of ClusterRoleBinding node-labeler"},
		{"a describe page binding it cluster-wide", `$ kubectl describe clusterrolebinding node-labeler
Name:         node-labeler
Labels:       <none>
Annotations:  <none>
Role:
  Kind:  ClusterRole
  Name:  node-reader
Subjects:
  Kind            Name          Namespace
  ----            ----          ---------
  ServiceAccount  node-labeler  platform-v2
`, []string{"ClusterRoleBinding node-labeler binds ClusterRole/node-reader to it cluster-wide, so ClusterRole/node-reader does not grant list nodes"},
			"Add the rule to ClusterRole/node-reader"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, pods+c.bindings, "node-labeler stopped labelling nodes", "node-labeler", "platform-v2")
			d := res.RootCause.Description
			if !strings.Contains(res.Summary, "RBAC") {
				t.Fatalf("root is not the RBAC refusal: %s\n%s", res.Summary, d)
			}
			for _, w := range c.says {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if len(res.Recommendations) == 0 || !strings.Contains(res.Recommendations[0].Action, c.action) {
				t.Errorf("first action: %+v", res.Recommendations)
			}
		})
	}
}
