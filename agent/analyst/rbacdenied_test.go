package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
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

// TestRBACDeniedChain follows a refusal a Job's or a crashed container's
// last log lines show (too rare to be mined as a template) to the
// ServiceAccount's bindings, from a kubectl transcript: the auth can-i
// answers (denied here, allowed elsewhere), the RoleBinding that names it
// in another namespace, the denied namespace's bindings without its like,
// and the moment they were all recreated. The cause is the RBAC refusal,
// not the Job's failure; the timeline holds the bindings' loss and the
// failure.
func TestRBACDeniedChain(t *testing.T) {
	now := time.Date(2026, 10, 14, 9, 30, 0, 0, time.UTC)
	jobSession := func(logs string) string {
		return `$ kubectl get jobs -n finops
NAME                        STATUS   COMPLETIONS   DURATION   AGE
cost-report-29345760        Complete 1/1           2m10s      2d3h
cost-report-29347200        Failed   0/1           3h30m      3h30m
$ kubectl get pods -n finops
NAME                              READY   STATUS   RESTARTS   AGE
cost-report-29347200-q7w2d        0/1     Error    0          3h30m
cost-report-29347200-zr5kx        0/1     Error    0          3h28m
$ kubectl logs job/cost-report-29347200 -n finops
Found 2 pods, using pod/cost-report-29347200-zr5kx
` + logs + `
$ kubectl get rolebindings -n warehouse
NAME                  ROLE                   AGE
warehouse-admins      ClusterRole/admin      5d2h
warehouse-view        ClusterRole/view       5d2h
$ kubectl get rolebindings -n retail -o wide
NAME               ROLE                      AGE    USERS   GROUPS   SERVICEACCOUNTS
cost-report-read   ClusterRole/cost-reader   400d                    finops/cost-report
$ kubectl auth can-i list deployments.apps -n warehouse --as=system:serviceaccount:finops:cost-report
no
$ kubectl auth can-i list deployments.apps -n retail --as system:serviceaccount:finops:cost-report
yes
`
	}
	cases := []struct {
		name, logs string
		says       []string
	}{
		{"Go client-go error line",
			`time="2026-10-14T06:00:41Z" level=fatal msg="collect warehouse: deployments.apps is forbidden: User \"system:serviceaccount:finops:cost-report\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"warehouse\""`,
			[]string{"ServiceAccount finops/cost-report is forbidden by RBAC to list deployments.apps in the namespace warehouse", "can-i list deployments.apps -n warehouse answers no (yes in retail)",
				"RoleBinding retail/cost-report-read binds ClusterRole/cost-reader to it", "namespace warehouse has no such RoleBinding", "recreated without it"}},
		{"Java fabric8 exception",
			`2026-10-14 06:00:41.220 ERROR 1 --- [main] c.a.f.Collector : io.fabric8.kubernetes.client.KubernetesClientException: Failure executing: GET at: https://10.96.0.1/apis/apps/v1/namespaces/warehouse/deployments. Message: deployments.apps is forbidden: User "system:serviceaccount:finops:cost-report" cannot list resource "deployments" in API group "apps" in the namespace "warehouse". Received status: Status(apiVersion=v1, code=403, reason=Forbidden).`,
			[]string{"forbidden by RBAC to list deployments.apps in the namespace warehouse", "ClusterRole/cost-reader", "recreated without it"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, jobSession(c.logs), "did the cost-report job run last night?", "cost-report", "finops")
			d := res.RootCause.Description
			if !strings.Contains(res.Summary, "RBAC") {
				t.Fatalf("root is not the RBAC refusal: %s\n%s", res.Summary, d)
			}
			for _, w := range c.says {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if len(res.Timeline) < 2 || !strings.Contains(res.Timeline[0].Event, "RoleBindings of namespace warehouse are recreated") {
				t.Errorf("timeline does not start with the bindings' loss: %+v", res.Timeline)
			}
			if len(res.Recommendations) == 0 || !strings.Contains(res.Recommendations[0].Action, "kubectl create rolebinding cost-report-read -n warehouse --clusterrole=cost-reader --serviceaccount=finops:cost-report") {
				t.Errorf("first action: %+v", res.Recommendations)
			}
		})
	}
}

// TestCanIAnswers reads kubectl auth can-i answers in their spellings.
func TestCanIAnswers(t *testing.T) {
	cmds := []evidence.CommandOutput{
		{Run: "kubectl auth can-i get secrets --namespace=data --as=system:serviceaccount:data:usage-export", Lines: []string{"no"}},
		{Run: "kubectl -n data auth can-i list pods --as system:serviceaccount:data:usage-export", Lines: []string{"yes"}},
		{Run: "kubectl auth can-i create leases.coordination.k8s.io -n ops --as=system:serviceaccount:ops:ctl", Lines: []string{"no - RBAC: role.rbac.authorization.k8s.io \"x\" not found"}},
		{Run: "kubectl auth can-i --list -n data", Lines: []string{"Resources   Non-Resource URLs   Resource Names   Verbs"}},
	}
	got := canIAnswers(cmds)
	want := []canIAnswer{
		{verb: "get", resource: "secrets", namespace: "data", as: "system:serviceaccount:data:usage-export", allowed: false},
		{verb: "list", resource: "pods", namespace: "data", as: "system:serviceaccount:data:usage-export", allowed: true},
		{verb: "create", resource: "leases.coordination.k8s.io", namespace: "ops", as: "system:serviceaccount:ops:ctl", allowed: false},
	}
	if len(got) != len(want) {
		t.Fatalf("answers %+v", got)
	}
	for i := range want {
		got[i].command = ""
		if got[i] != want[i] {
			t.Errorf("answer %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if !sameResource("deployments.apps", "deployments") || !sameResource("pod", "pods") || sameResource("secrets", "pods") {
		t.Error("sameResource")
	}
}
