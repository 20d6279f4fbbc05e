package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An HPA the controller disabled because its target has 0 replicas while
// the app's pods run under another owner: the condition as the HPA object
// carries it and as kubectl describe hpa prints only the message, with the
// Rollout's workloadRef in YAML (kubectl get rollout -o yaml) and JSON.
// An HPA whose target is at 0 with no pod running (a workload scaled to 0)
// and an active HPA are none.
func TestHPATargetZero(t *testing.T) {
	min := int32(3)
	hpa := func(reason, msg string, status corev1.ConditionStatus) autoscalingv2.HorizontalPodAutoscaler {
		return autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: "shop"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "catalog", APIVersion: "apps/v1"},
				MinReplicas: &min, MaxReplicas: 12},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale"},
				{Type: autoscalingv2.ScalingActive, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(win.Start.Add(-20 * 3600e9))},
			}},
		}
	}
	disabled := hpa("ScalingDisabled", "scaling is disabled since the replica count of the target is zero", corev1.ConditionFalse)
	msgOnly := hpa("", "scaling is disabled since the replica count of the target is zero", corev1.ConditionFalse)
	active := hpa("ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", corev1.ConditionTrue)
	pod := func(name string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "catalog-5d8f7c6b9"}}}, Status: corev1.PodStatus{Phase: phase}}
	}
	running := []corev1.Pod{pod("catalog-5d8f7c6b9-k2x7q", corev1.PodRunning), pod("catalog-5d8f7c6b9-p9w4z", corev1.PodRunning)}
	none := []corev1.Pod{pod("catalog-5d8f7c6b9-k2x7q", corev1.PodSucceeded)}
	yamlRef := evidence.CommandOutput{Command: "kubectl get rollout catalog -n shop -o yaml", Lines: []string{
		"spec:", "  replicas: 2", "  workloadRef:", "    apiVersion: apps/v1", "    kind: Deployment", "    name: catalog", "    scaleDown: progressively", "  strategy:", "    blueGreen: {}"}}
	jsonRef := evidence.CommandOutput{Command: "kubectl get rollouts.argoproj.io catalog -n shop -o json | jq .spec", Lines: []string{
		"{", `  "replicas": 2,`, `  "workloadRef": {`, `    "apiVersion": "apps/v1",`, `    "kind": "Deployment",`, `    "name": "catalog"`, "  }", "}"}}
	otherRef := evidence.CommandOutput{Command: "kubectl get rollout search -n shop -o yaml", Lines: []string{
		"  workloadRef:", "    kind: Deployment", "    name: search"}}
	migrate := evidence.Change{Timestamp: win.Start.Add(-21 * 3600e9), Service: "catalog", Kind: "deploy", Description: "catalog: canary releases with Argo Rollouts (workloadRef)"}
	cases := []struct {
		name    string
		hpas    []autoscalingv2.HorizontalPodAutoscaler
		pods    []corev1.Pod
		cmds    []evidence.CommandOutput
		earlier []evidence.Change
		subject string
		want    []string
	}{
		{"object condition, rollout yaml", []autoscalingv2.HorizontalPodAutoscaler{disabled}, running, []evidence.CommandOutput{yamlRef}, nil, "catalog",
			[]string{"ScalingDisabled", "Deployment/catalog", "workloadRef", "2 replicas", "up to 12"}},
		{"message only, rollout json, the migration named", []autoscalingv2.HorizontalPodAutoscaler{msgOnly}, running, []evidence.CommandOutput{jsonRef}, []evidence.Change{migrate}, "catalog",
			[]string{"workloadRef", "canary releases with Argo Rollouts"}},
		{"no rollout handed over", []autoscalingv2.HorizontalPodAutoscaler{disabled}, running, []evidence.CommandOutput{otherRef}, nil, "catalog",
			[]string{"another owner"}},
		{"nothing runs: none", []autoscalingv2.HorizontalPodAutoscaler{disabled}, none, nil, nil, "", nil},
		{"active: none", []autoscalingv2.HorizontalPodAutoscaler{active}, running, nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Autoscalers: c.hpas, Pods: c.pods, Deployments: []appsv1.Deployment{}}, Commands: c.cmds, Earlier: c.earlier, Window: win, Scope: Scope{Service: "catalog", Namespace: "shop"}}
			f := onlyFinding(t, detectHPATargetZero(g), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindHPATargetZero, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
