package analyst

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestHPATargetMissing reads an autoscaler whose scale target is not
// found, from its AbleToScale condition (kubectl describe hpa, -o yaml) or
// its FailedGetScale events, names the workload that carries the target's
// name now and the change that renamed it, and leaves an HPA whose target
// exists (a transient failure) alone.
func TestHPATargetMissing(t *testing.T) {
	w := testWindow()
	hpa := autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}
	hpa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionFalse, Reason: "FailedGetScale",
		Message: `the HPA controller was unable to get the target's current scale: deployments/scale.apps "web" not found`, LastTransitionTime: metav1.NewTime(w.Start)}}
	stsEvent := corev1.Event{Reason: "FailedGetScale", Message: `statefulsets.apps "queue" not found`, Count: 120,
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: "queue", Namespace: "shop"}, FirstTimestamp: metav1.NewTime(w.Start), LastTimestamp: metav1.NewTime(w.End)}
	dep := func(name string, labels map[string]string) appsv1.Deployment {
		return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels}}
	}
	rename := evidence.Change{Service: "web", Kind: "deploy", Timestamp: w.Start.Add(-20 * 60 * 1e9), Description: "chart 2.0.0: fullnameOverride removed, Deployment now named web-app"}
	cases := []struct {
		name string
		k    K8sEvidence
		want int
		says []string
	}{
		{"condition, renamed Deployment", K8sEvidence{Autoscalers: []autoscalingv2.HorizontalPodAutoscaler{hpa}, Deployments: []appsv1.Deployment{dep("web-app", nil)}}, 1,
			[]string{"HorizontalPodAutoscaler web cannot scale web", "Deployment/web does not exist", "run as web-app now", "fullnameOverride removed"}},
		{"event, StatefulSet gone, new one by its name label", K8sEvidence{Events: []corev1.Event{stsEvent},
			Deployments: []appsv1.Deployment{dep("broker", map[string]string{"app.kubernetes.io/name": "queue", "app.kubernetes.io/instance": "queue"})}}, 1,
			[]string{"StatefulSet/queue does not exist", "run as broker now"}},
		{"the target exists", K8sEvidence{Autoscalers: []autoscalingv2.HorizontalPodAutoscaler{hpa}, Deployments: []appsv1.Deployment{dep("web", nil)}}, 0, nil},
	}
	for _, c := range cases {
		fs := detectHPATargetMissing(&Gathered{K8s: c.k, Earlier: []evidence.Change{rename}, Window: w})
		if len(fs) != c.want {
			t.Errorf("%s: %d findings", c.name, len(fs))
			continue
		}
		if c.want == 0 {
			continue
		}
		h := &Hypothesis{Kind: KindHPATargetMissing, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		d := hpaTargetMissing.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
}
