package analyst

import (
	"strings"
	"testing"
)

func TestRBACDenied(t *testing.T) {
	cases := []struct {
		name, line                      string
		user, verb, resource, namespace string // user "" for no finding
		want                            []string
	}{
		{"leader election lease (klog)",
			`E1109 10:41:18.907796       1 leaderelection.go:332] error retrieving resource lock warehouse/stock-reconciler-leader: leases.coordination.k8s.io "stock-reconciler-leader" is forbidden: User "system:serviceaccount:warehouse:stock-reconciler" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "warehouse"`,
			"warehouse/stock-reconciler", "get", "leases", "warehouse",
			[]string{"forbidden by RBAC to get leases.coordination.k8s.io in the namespace warehouse", "cannot take its leader lease"}},
		{"a watch at the cluster scope (client-go reflector)",
			`W0312 08:01:02.123456       1 reflector.go:547] k8s.io/client-go/informers/factory.go:160: failed to list *v1.Pod: pods is forbidden: User "system:serviceaccount:ops:kube-janitor" cannot list resource "pods" in API group "" at the cluster scope`,
			"ops/kube-janitor", "list", "pods", "",
			[]string{"forbidden by RBAC to list pods at the cluster scope"}},
		{"Python kubernetes client: the JSON body below ApiException: (403)",
			`HTTP response body: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets \"warehouse-readonly\" is forbidden: User \"system:serviceaccount:data:usage-export\" cannot get resource \"secrets\" in API group \"\" in the namespace \"data\"","reason":"Forbidden","details":{"name":"warehouse-readonly","kind":"secrets"},"code":403}`,
			"data/usage-export", "get", "secrets", "data",
			[]string{"forbidden by RBAC to get secrets in the namespace data", `"secrets \"warehouse-readonly\" is forbidden: User`}},
		{"Java fabric8 client: Failure executing ... Message",
			`io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: GET at: https://10.96.0.1:443/api/v1/namespaces/billing/configmaps/rates. Message: configmaps "rates" is forbidden: User "system:serviceaccount:billing:rate-sync" cannot get resource "configmaps" in API group "" in the namespace "billing". Received status: Status(apiVersion=v1, code=403, reason=Forbidden).`,
			"billing/rate-sync", "get", "configmaps", "billing",
			[]string{"forbidden by RBAC to get configmaps in the namespace billing"}},
		{"an application's own 403 is no RBAC denial",
			`2026-03-12T08:01:02Z ERROR payout failed: POST https://api.paystream.io/v2/payouts: 403 Forbidden`,
			"", "", "", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := minedSet("stock-reconciler", false, 0, c.line, c.line, c.line)
			fs := detectRBACDenied(&Gathered{Logs: []LogSet{set}, Window: win}, nil)
			f, ok := oneFinding(t, fs, c.user != "")
			if !ok {
				return
			}
			if f.fact("user") != c.user || f.fact("verb") != c.verb || f.fact("resource") != c.resource || f.fact("namespace") != c.namespace || f.Subject != "stock-reconciler" {
				t.Errorf("facts %v subject %q", f.Facts, f.Subject)
			}
			d := rbacDenied.describe(&Hypothesis{Kind: KindRBACDenied, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}
