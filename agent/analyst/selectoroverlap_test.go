package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A Service refused to its callers whose selector also matches another
// workload's pods: pods as a kubectl get --show-labels row gives them (no
// owner, a pod-template-hash label) that started just before the refusals,
// and pods read whole (an owner, container ports) that declare another
// port. A second workload serving the target port, one started long before
// the refusals with unknown ports, and a Service nobody is refused by are
// none.
func TestSelectorOverlap(t *testing.T) {
	onset := win.Start.Add(20 * time.Minute)
	svc := ServiceState{Service: corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "billing-api", Namespace: "pay"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "billing"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}}
	row := func(name, hash string, started time.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pay", CreationTimestamp: metav1.NewTime(started),
			Labels: map[string]string{"app": "billing", "pod-template-hash": hash}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	whole := func(name, rs string, port int32) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pay", CreationTimestamp: metav1.NewTime(win.Start.Add(-48 * time.Hour)),
			Labels: map[string]string{"app": "billing"}, OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		p.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: port}}}}
		return p
	}
	own := []corev1.Pod{row("billing-api-6d9f7c8b5-a1b2c", "6d9f7c8b5", win.Start.Add(-72*time.Hour)), row("billing-api-6d9f7c8b5-d3e4f", "6d9f7c8b5", win.Start.Add(-72*time.Hour))}
	refused := Finding{Kind: KindConnRefused, Subject: "billing-api", Time: onset}
	cases := []struct {
		name    string
		pods    []corev1.Pod
		found   []Finding
		subject string
		want    []string
	}{
		{"table rows, started at the onset", append(own, row("billing-worker-5c8f7b6d9-x9y8z", "5c8f7b6d9", onset.Add(-time.Minute))), []Finding{refused}, "billing-api",
			[]string{"app=billing", "billing-worker", "1 of its 3 endpoints"}},
		{"whole pods, another port", []corev1.Pod{whole("billing-api-6d9f7c8b5-a1b2c", "billing-api-6d9f7c8b5", 8080), whole("billing-cron-7f6d5c4b3-q1w2e", "billing-cron-7f6d5c4b3", 9102)}, []Finding{refused}, "billing-api",
			[]string{"billing-cron", "target port 8080", "9102"}},
		{"the other serves the port: none", []corev1.Pod{whole("billing-api-6d9f7c8b5-a1b2c", "billing-api-6d9f7c8b5", 8080), whole("billing-canary-7f6d5c4b3-q1w2e", "billing-canary-7f6d5c4b3", 8080)}, []Finding{refused}, "", nil},
		{"old pods, ports unknown: none", append(own, row("billing-worker-5c8f7b6d9-x9y8z", "5c8f7b6d9", onset.Add(-30*24*time.Hour))), []Finding{refused}, "", nil},
		{"nobody refused: none", append(own, row("billing-worker-5c8f7b6d9-x9y8z", "5c8f7b6d9", onset.Add(-time.Minute))), nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Services: []ServiceState{svc}, Pods: c.pods}, Window: win, Scope: Scope{Namespace: "pay"}}
			f := onlyFinding(t, detectSelectorOverlap(g, c.found), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindSelectorOverlap, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
