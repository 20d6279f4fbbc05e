package kubetext_test

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// The network policy forms kubectl prints that the golden does not hold:
// any source or port, an empty namespace selector (every namespace), named
// ports and port ranges, a direction the policy does not affect.
func TestNetworkPolicyForms(t *testing.T) {
	text := `$ kubectl describe networkpolicy api-allow -n shop
Name:         api-allow
Namespace:    shop
Created on:   2026-03-14 09:00:00 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     app=api,tier in (backend,edge)
  Allowing ingress traffic:
    To Port: http/TCP
    To Port: 9090/TCP
    From:
      NamespaceSelector: <none>
    ----------
    To Port: <any> (traffic allowed to all ports)
    From: <any> (traffic not restricted by source)
  Allowing egress traffic:
    To Port: 32000-32768/UDP
    To: <any> (traffic not restricted by destination)
  Policy Types: Ingress, Egress
$ kubectl describe netpol deny-egress -n shop
Name:         deny-egress
Namespace:    shop
Created on:   2026-03-14 09:00:00 +0000 UTC
Labels:       <none>
Annotations:  <none>
Spec:
  PodSelector:     app=worker
  Not affecting ingress traffic
  Allowing egress traffic:
    <none> (Selected pods are isolated for egress connectivity)
  Policy Types: Egress
`
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	np := object[*networkingv1.NetworkPolicy](t, res, "shop", "api-allow")
	sel := np.Spec.PodSelector
	if sel.MatchLabels["app"] != "api" || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "tier" || len(sel.MatchExpressions[0].Values) != 2 {
		t.Errorf("pod selector %+v", sel)
	}
	in := np.Spec.Ingress
	if len(in) != 2 || len(in[0].Ports) != 2 || in[0].Ports[0].Port.StrVal != "http" || in[0].Ports[1].Port.IntValue() != 9090 ||
		len(in[0].From) != 1 || in[0].From[0].NamespaceSelector == nil || len(in[0].From[0].NamespaceSelector.MatchLabels) != 0 || in[0].From[0].PodSelector != nil ||
		len(in[1].Ports) != 0 || len(in[1].From) != 0 {
		t.Errorf("ingress %+v", in)
	}
	eg := np.Spec.Egress
	if len(eg) != 1 || len(eg[0].Ports) != 1 || eg[0].Ports[0].Port.IntValue() != 32000 || eg[0].Ports[0].EndPort == nil || *eg[0].Ports[0].EndPort != 32768 ||
		string(*eg[0].Ports[0].Protocol) != "UDP" || len(eg[0].To) != 0 {
		t.Errorf("egress %+v", eg)
	}
	if len(np.Spec.PolicyTypes) != 2 || np.CreationTimestamp.IsZero() {
		t.Errorf("types %v created %v", np.Spec.PolicyTypes, np.CreationTimestamp)
	}
	deny := object[*networkingv1.NetworkPolicy](t, res, "shop", "deny-egress")
	if deny.Spec.Ingress != nil || deny.Spec.Egress == nil || len(deny.Spec.Egress) != 0 || len(deny.Spec.PolicyTypes) != 1 {
		t.Errorf("deny-egress: ingress %#v egress %#v types %v", deny.Spec.Ingress, deny.Spec.Egress, deny.Spec.PolicyTypes)
	}
}

// Tables of the access kinds, as kube-apiserver prints them.
func TestAccessTables(t *testing.T) {
	ref := time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC)
	text := `$ kubectl get pdb -A
NAMESPACE   NAME     MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE
pay         ledger   N/A             25%               0                     13d
$ kubectl get clusterrolebinding ops-view -o wide
NAME       ROLE               AGE   USERS         GROUPS       SERVICEACCOUNTS
ops-view   ClusterRole/view   40d   alice, bob    sre          monitoring/prometheus
$ kubectl get netpol -n pay
NAME            POD-SELECTOR   AGE
default-deny    <none>         41d
`
	res := kubetext.Parse([]byte(text), ref)
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped %+v", res.Skipped)
	}
	pdb := object[*policyv1.PodDisruptionBudget](t, res, "pay", "ledger")
	if pdb.Spec.MinAvailable != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.StrVal != "25%" || pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("pdb %+v", pdb.Spec)
	}
	crb := object[*rbacv1.ClusterRoleBinding](t, res, "", "ops-view")
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != "view" || len(crb.Subjects) != 4 || crb.Subjects[3].Namespace != "monitoring" ||
		crb.Subjects[3].Name != "prometheus" || crb.Subjects[1].Name != "bob" {
		t.Errorf("binding %+v", crb)
	}
	np := object[*networkingv1.NetworkPolicy](t, res, "pay", "default-deny")
	if len(np.Spec.PodSelector.MatchLabels) != 0 || np.Spec.Ingress != nil {
		t.Errorf("netpol row %+v", np.Spec)
	}
}
