package analyst

import (
	"strings"
	"testing"

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
