package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The asker's own kubectl command refused by RBAC, as kubectl prints it
// for an exec, a kubectl logs and a port-forward, with kubectl auth
// whoami's groups and the namespace's RoleBindings: a binding of edit to a
// group the user lacks is named. A question about something else (the pod
// cannot reach a database), an impersonation refused and a
// ServiceAccount's refusal are not it.
func TestAskerForbidden(t *testing.T) {
	end := time.Date(2026, 11, 24, 8, 35, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "billing-api-6d8f7c9b5-k2m4p", Namespace: "billing",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "billing-api-6d8f7c9b5"}}}}
	whoami := evidence.CommandOutput{Command: "kubectl auth whoami", Run: "kubectl auth whoami", Lines: []string{
		"ATTRIBUTE   VALUE",
		"Username    jo@example.com",
		"Groups      [oidc:eng-billing system:authenticated]",
	}}
	canI := evidence.CommandOutput{Command: "kubectl auth can-i create pods/exec -n billing", Run: "kubectl auth can-i create pods/exec -n billing", Lines: []string{"no"}}
	diff := evidence.CommandOutput{Command: "git show HEAD -- rbac/billing.yaml", Run: "git show HEAD -- rbac/billing.yaml", Lines: []string{
		" - apiGroup: rbac.authorization.k8s.io", "   kind: Group", "-  name: oidc:eng-billing", "+  name: oidc:billing-developers",
	}}
	bindings := []rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "billing-dev", Namespace: "billing", CreationTimestamp: metav1.Time{Time: end.Add(-49 * time.Hour)}},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "oidc:billing-developers"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "billing-view", Namespace: "billing"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "oidc:eng-billing"}}},
	}
	exec := `Error from server (Forbidden): pods "billing-api-6d8f7c9b5-k2m4p" is forbidden: User "jo@example.com" cannot create resource "pods/exec" in API group "" in the namespace "billing"`
	logs := `Error from server (Forbidden): pods "billing-api-6d8f7c9b5-k2m4p" is forbidden: User "jo@example.com" cannot get resource "pods/log" in API group "" in the namespace "billing"`
	pf := `error: error upgrading connection: pods "billing-api-6d8f7c9b5-k2m4p" is forbidden: User "jo@example.com" cannot create resource "pods/portforward" in API group "" in the namespace "billing"`
	imp := `Error from server (Forbidden): users "jo@example.com" is forbidden: User "jo@example.com" cannot impersonate resource "users" in API group "" at the cluster scope`
	sa := `Error from server (Forbidden): pods "billing-api-6d8f7c9b5-k2m4p" is forbidden: User "system:serviceaccount:ci:deployer" cannot create resource "pods/exec" in API group "" in the namespace "billing"`
	for _, tc := range []struct {
		name, question, cmd, line string
		extra                     []evidence.CommandOutput
		want                      []string // nil: no finding
	}{
		{"exec refused, binding to another group", "can't exec into billing-api, worked last week", "kubectl exec -it billing-api-6d8f7c9b5-k2m4p -n billing -- sh", exec,
			[]evidence.CommandOutput{whoami, canI, diff},
			[]string{"may not create pods/exec in namespace billing", "RoleBinding billing-dev (ClusterRole/edit) binds group oidc:billing-developers", "oidc:eng-billing", "can-i create pods/exec: no", "before it was regenerated", "only billing-view (ClusterRole/view) applies"}},
		{"kubectl logs forbidden", "kubectl logs on billing-api says forbidden since this morning", "kubectl logs -n billing billing-api-6d8f7c9b5-k2m4p", logs,
			[]evidence.CommandOutput{whoami},
			[]string{"may not get pods/log in namespace billing", "binds group oidc:billing-developers"}},
		{"port-forward refused, no whoami", "port-forward to billing-api stopped working", "kubectl port-forward -n billing pod/billing-api-6d8f7c9b5-k2m4p 8080:8080", pf,
			[]evidence.CommandOutput{canI},
			[]string{"may not create pods/portforward in namespace billing", "can-i create pods/exec: no"}},
		{"a question about something else", "why can't billing-api reach postgres?", "kubectl exec -n billing billing-api-6d8f7c9b5-k2m4p -- nc -zv db 5432", exec, nil, nil},
		{"impersonation refused", "can't exec into billing-api", "kubectl auth can-i create pods/exec --as jo@example.com --as-group x", imp, nil, nil},
		{"a ServiceAccount's refusal", "can't exec into billing-api from CI", "kubectl exec -n billing billing-api-6d8f7c9b5-k2m4p -- true", sa, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Gathered{Window: Window{Start: end.Add(-time.Hour), End: end}, Scope: Scope{Message: tc.question}}
			g.K8s.Pods = []corev1.Pod{pod}
			g.K8s.RoleBindings = bindings
			g.Commands = append([]evidence.CommandOutput{{Command: tc.cmd, Run: tc.cmd, Namespace: "billing", Lines: []string{tc.line}, Source: "t.txt:1"}}, tc.extra...)
			fs := detectAskerForbidden(g)
			if tc.want == nil {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "billing-api")
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{f}}
			d := askerForbidden.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
			if len(f.Evidence) < 2 {
				t.Errorf("evidence %v", f.Evidence)
			}
		})
	}
}
