package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestComponentNames names the component a release-prefixed workload
// runs, from its pods' or its Deployment's app.kubernetes.io/name.
func TestComponentNames(t *testing.T) {
	pod := func(name, owner, label string) corev1.Pod {
		p := corev1.Pod{}
		p.Name = name
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner}}
		p.Labels = map[string]string{"app.kubernetes.io/name": label}
		return p
	}
	dep := appsv1.Deployment{}
	dep.Name = "prom-stack-grafana"
	dep.Labels = map[string]string{"app.kubernetes.io/name": "grafana"}
	got := componentNames([]corev1.Pod{
		pod("kube-prometheus-stack-kube-state-metrics-7c4b9d6f8-9mxzk", "kube-prometheus-stack-kube-state-metrics-7c4b9d6f8", "kube-state-metrics"),
		pod("ingress-nginx-controller-5d8f7c9b6-x2k4p", "ingress-nginx-controller-5d8f7c9b6", "ingress-nginx"),
		pod("checkout-7d9f8b6c5-abcde", "checkout-7d9f8b6c5", "checkout"),
	}, []appsv1.Deployment{dep})
	want := map[string]string{"kube-prometheus-stack-kube-state-metrics": "kube-state-metrics", "prom-stack-grafana": "grafana"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}

// TestReleaseNames maps a workload named after its Helm release to that
// release, from its pods' or its Deployment's app.kubernetes.io/instance.
func TestReleaseNames(t *testing.T) {
	pod := func(name, owner, instance string) corev1.Pod {
		p := corev1.Pod{}
		p.Name = name
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: owner}}
		p.Labels = map[string]string{"app.kubernetes.io/instance": instance}
		return p
	}
	dep := appsv1.Deployment{}
	dep.Name = "superset-worker"
	dep.Labels = map[string]string{"app.kubernetes.io/instance": "superset"}
	got := releaseNames([]corev1.Pod{
		pod("superset-postgresql-0", "superset-postgresql", "superset"),
		pod("checkout-0", "checkout", "checkout"),
		pod("orders-db-0", "orders-db", "payments"),
	}, []appsv1.Deployment{dep})
	want := map[string]string{"superset-postgresql": "superset", "superset-worker": "superset"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
