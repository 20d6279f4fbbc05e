package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectorMismatchMechanism(t *testing.T) {
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "cart", "tier": "backend"}}}
	pod := func(name string, labels map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "cart", Ready: true}}}}
	}
	cases := []struct {
		name string
		pods []corev1.Pod
		want []string // nil: no finding
	}{
		{"label renamed on the pods", []corev1.Pod{pod("cart-7f9c6d5b8-2xk4p", map[string]string{"app": "cart", "app.kubernetes.io/component": "backend"}),
			pod("cart-7f9c6d5b8-9qw7z", map[string]string{"app": "cart", "app.kubernetes.io/component": "backend"})}, []string{"cart", "tier"}},
		{"value changed on the pods", []corev1.Pod{pod("cart-7f9c6d5b8-2xk4p", map[string]string{"app": "cart", "tier": "api"})}, []string{"cart", "tier=backend"}},
		// Pods read from a get -o wide table carry no labels: unknown, not
		// missing.
		{"pods read from a table, labels unknown", []corev1.Pod{pod("cart-7f9c6d5b8-2xk4p", nil), pod("cart-7f9c6d5b8-9qw7z", nil)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := selectorMismatch(svc, c.pods)
			if c.want == nil {
				if ok {
					t.Fatalf("finding %v", f)
				}
				return
			}
			if !ok || f.Kind != KindSelector {
				t.Fatalf("no selector finding: %v %v", ok, f)
			}
			h := &Hypothesis{Kind: KindSelector, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Make service cart select its pods again") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}

// A Service whose selector no pod of its namespace carries, every pod's
// labels read (get pods --show-labels): the workload that serves in its
// place under a chart's labels is named, with the pods that wait for it;
// with the pods' labels unknown, or nothing that looks like a successor
// (the workload scaled away), there is no mismatch to name.
func TestSelectsNoPod(t *testing.T) {
	const withChart = `$ kubectl get pods -n shipping --show-labels
NAME                            READY   STATUS     RESTARTS   AGE   LABELS
label-service-5d9f8c7b6-7tkq9   1/1     Running    0          9d    app=label-service,pod-template-hash=5d9f8c7b6
rate-shopper-7c8d9b6f5-2lkpx    1/1     Running    0          9d    app=rate-shopper,pod-template-hash=7c8d9b6f5
shipping-postgresql-0           1/1     Running    0          58m   app.kubernetes.io/component=primary,app.kubernetes.io/instance=shipping,app.kubernetes.io/name=postgresql,statefulset.kubernetes.io/pod-name=shipping-postgresql-0
`
	const scaledAway = `$ kubectl get pods -n shop --show-labels
NAME                       READY   STATUS    RESTARTS   AGE   LABELS
web-6d5f7c8b9-2xk4p        1/1     Running   0          9d    app=web,pod-template-hash=6d5f7c8b9
`
	const sharesWord = `$ kubectl get pods -n shop --show-labels
NAME                          READY   STATUS    RESTARTS   AGE   LABELS
orders-api-6d5f7c8b9-2xk4p    1/1     Running   0          9d    app.kubernetes.io/instance=orders,app.kubernetes.io/name=orders-api,pod-template-hash=6d5f7c8b9
`
	const noLabels = `$ kubectl get pods -n shipping
NAME                            READY   STATUS     RESTARTS   AGE
shipping-postgresql-0           1/1     Running    0          58m
`
	waiter := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "label-service-5d9f8c7b6-wq7xn", Namespace: "shipping", Labels: map[string]string{"app": "label-service"}},
		Spec:   corev1.PodSpec{InitContainers: []corev1.Container{{Name: "wait-for-db", Command: []string{"sh", "-c", `until pg_isready -h shipping-pg -p 5432 -t 2; do sleep 5; done`}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	cases := []struct {
		name, ns, text string
		sel            map[string]string
		extra          []corev1.Pod
		want           []string // nil: no finding
	}{
		{"hand-written StatefulSet replaced by a chart", "shipping", withChart, map[string]string{"app": "shipping-pg", "role": "primary"}, []corev1.Pod{waiter},
			[]string{"selects no pods", "no pod of namespace shipping carries", "shipping-postgresql-0", "app.kubernetes.io/component=primary", "init container wait-for-db"}},
		{"workload scaled away, nothing alike", "shop", scaledAway, map[string]string{"app": "orders-db"}, nil, nil},
		{"labels unknown", "shipping", noLabels, map[string]string{"app": "shipping-pg"}, nil, nil},
		// A release that only shares a word of the name is no successor.
		{"a client's chart shares a word only", "shop", sharesWord, map[string]string{"app": "orders-db"}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, o := range kubetext.Parse([]byte(c.text), time.Date(2026, 8, 25, 13, 32, 0, 0, time.UTC)).Objects {
				if p, ok := o.(*corev1.Pod); ok {
					pods = append(pods, *p)
				}
			}
			pods = append(pods, c.extra...)
			name := c.sel["app"]
			svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: corev1.ServiceSpec{Selector: c.sel}}
			f, ok := selectorMismatch(svc, pods)
			if c.want == nil {
				if ok {
					t.Fatalf("finding %+v", f)
				}
				return
			}
			if !ok {
				t.Fatal("no finding")
			}
			h := &Hypothesis{Kind: KindSelector, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describe(h, Scope{}) + " " + strings.Join(f.Evidence, " ")
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description and evidence %q lack %q", d, s)
				}
			}
		})
	}
}

// TestSelectorRejected: an apply refused because it changes a workload's
// immutable selector, as kubectl, Argo CD (app get and its controller's
// log), Helm and Flux print it, tells why the Service's selector and the
// pods' labels diverged; another workload's refusal, or another field's,
// does not.
func TestSelectorRejected(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	at := now.Add(-30 * time.Minute)
	cmd := func(c string, lines ...string) []evidence.CommandOutput {
		return []evidence.CommandOutput{{Command: c, Run: c, Lines: lines}}
	}
	logOf := func(src, line string) []LogSet {
		return []LogSet{{Source: src, Subject: src, Host: true, Templates: []analysis.LogTemplate{{Example: line, Incident: 3, FirstIncident: at, FirstSeen: at}}}}
	}
	cases := []struct {
		name     string
		ev       Gathered
		kind     string // "": not read
		timeRead bool
	}{
		{"kubectl apply", Gathered{Commands: cmd("kubectl apply -f cart.yaml", `service/cart configured`,
			`The Deployment "cart" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app.kubernetes.io/name":"cart"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable`)}, "Deployment", false},
		{"argocd app get", Gathered{Commands: cmd("argocd app get cart",
			`apps        Deployment      shop  cart      OutOfSync  Healthy        Deployment.apps "cart" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"tier":"web"}}: field is immutable`)}, "Deployment", false},
		{"argocd controller log", Gathered{Logs: logOf("argocd-application-controller",
			`time="2026-03-02T11:30:00Z" level=info msg="Adding resource result, status: 'SyncFailed', phase: 'Failed', message: 'Deployment.apps \"cart\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"tier\":\"web\"}}: field is immutable'" application=argocd/cart`)}, "Deployment", true},
		{"helm upgrade", Gathered{Commands: cmd("helm upgrade cart ./chart -n shop",
			`Error: UPGRADE FAILED: cannot patch "cart" with kind Deployment: Deployment.apps "cart" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"cart-v2"}}: field is immutable`)}, "Deployment", false},
		{"flux kustomize-controller", Gathered{Logs: logOf("kustomize-controller",
			`{"level":"error","ts":"2026-03-02T11:30:00.000Z","msg":"Reconciliation failed","error":"Deployment/shop/cart dry-run failed, reason: Invalid, error: Deployment.apps \"cart\" is invalid: spec.selector: Invalid value: v1.LabelSelector{}: field is immutable"}`)}, "Deployment", true},
		{"statefulset spec forbidden", Gathered{Commands: cmd("kubectl apply -f cart.yaml",
			`The StatefulSet "cart" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden`)}, "StatefulSet", false},
		{"another workload's selector", Gathered{Commands: cmd("kubectl apply -f all.yaml",
			`The Deployment "cart-worker" is invalid: spec.selector: Invalid value: v1.LabelSelector{}: field is immutable`)}, "", false},
		{"another field immutable", Gathered{Commands: cmd("kubectl apply -f job.yaml",
			`The Job "cart" is invalid: spec.template: Invalid value: core.PodTemplateSpec{}: field is immutable`)}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ev.Window = w
			f := Finding{Kind: KindSelector, Subject: "cart", Time: now.Add(-72 * time.Hour), Summary: "service shop/cart selector matches no pods"}
			f.setFact("workload", "cart")
			f.setFact("mismatch", "Service cart selects app.kubernetes.io/name=cart but the pods of cart are labelled app=cart")
			found := []Finding{f}
			selectorM.detect(&c.ev, found)
			g := found[0]
			if c.kind == "" {
				if g.fact("rejected") != "" {
					t.Fatalf("read %q", g.fact("rejected"))
				}
				return
			}
			if g.fact("rejected_kind") != c.kind || g.fact("why") == "" {
				t.Fatalf("kind %q why %q", g.fact("rejected_kind"), g.fact("why"))
			}
			if c.timeRead != g.Time.Equal(at) {
				t.Errorf("onset %s", g.Time)
			}
			h := &Hypothesis{Kind: KindSelector, Subject: "cart", Onset: g.Time, Primary: []*Finding{&g}}
			wantDescribed(t, h, Scope{}, "immutable", "spec.selector", "took the new selector", "selects no pods")
		})
	}
}
