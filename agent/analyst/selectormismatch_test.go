package analyst

import (
	"strings"
	"testing"
	"time"

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
			d := describe(h, Scope{})
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description %q lacks %q", d, s)
				}
			}
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
