package analyst

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A VPA that rewrote the memory of OOMKilled pods, read from the pods'
// vpaUpdates annotation or the updater's EvictedByVPA events, the pod's
// limit against the template's (a Deployment read, jsonpath output) and
// the VPA as describe or YAML prints it; an annotation about CPU only,
// evictions that left the limit at the template's, or no OOM kill is none.
func TestVPAMemoryCut(t *testing.T) {
	pod := func(annotation, limit string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "basket-7c9d8f6b5-q2w3e", Namespace: "shop",
			Labels: map[string]string{"app": "basket"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "basket",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}}}}}
		if annotation != "" {
			p.Annotations = map[string]string{"vpaObservedContainers": "basket", "vpaUpdates": annotation}
		}
		return p
	}
	oom := func(limit string) Finding {
		return Finding{Kind: KindOOMKilled, Subject: "basket", Namespace: "shop", Time: win.Start.Add(20 * 60e9),
			Facts: map[string]string{"memory_limit": limit, "memory_request": "150Mi"}, Evidence: []string{"OOMKilled, exit code 137"}}
	}
	evicted := func(pod string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod, Namespace: "shop"}, Reason: "EvictedByVPA",
			Message: "Pod was evicted by VPA Updater to apply resource recommendation.", FirstTimestamp: metav1.NewTime(win.Start.Add(5 * 60e9)), Count: 1}
	}
	describeVPA := evidence.CommandOutput{Command: "kubectl describe vpa basket -n shop", Lines: []string{
		"Kind:         VerticalPodAutoscaler", "Spec:", "  Update Policy:", "    Update Mode:  Auto", "Status:", "  Recommendation:",
		"    Container Recommendations:", "      Container Name:  basket", "      Target:", "        Cpu:     60m", "        Memory:  157286400"}}
	yamlVPA := evidence.CommandOutput{Command: "kubectl get verticalpodautoscaler basket -n shop -o yaml", Lines: []string{
		"spec:", "  updatePolicy:", "    updateMode: \"Recreate\"", "status:", "  recommendation:", "    containerRecommendations:",
		"    - containerName: basket", "      lowerBound:", "        memory: 100Mi", "      target:", "        cpu: 60m", "        memory: 150Mi"}}
	jsonpath := evidence.CommandOutput{Command: "kubectl get deploy basket -n shop -o jsonpath='{.spec.template.spec.containers[0].resources}'", Lines: []string{
		`{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"200m","memory":"768Mi"}}`}}
	deploy := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "basket", Namespace: "shop"}}
	deploy.Spec.Template.Spec.Containers = []corev1.Container{{Name: "basket",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	const ann = "Pod resources updated by basket-vpa: container 0: cpu request, memory request, memory limit"
	cases := []struct {
		name    string
		pods    []corev1.Pod
		events  []corev1.Event
		deploys []appsv1.Deployment
		cmds    []evidence.CommandOutput
		found   []Finding
		subject string
		want    []string
	}{
		{"annotation, describe vpa, template by jsonpath", []corev1.Pod{pod(ann, "192Mi")}, nil, nil,
			[]evidence.CommandOutput{describeVPA, jsonpath}, []Finding{oom("192Mi")},
			"basket", []string{"VerticalPodAutoscaler basket-vpa (update mode Auto)", "192Mi (192 MiB) from the 1Gi", "memory target 150 MiB", "OOMKilled"}},
		{"evictions and a Deployment read, VPA as YAML, no annotation", []corev1.Pod{pod("", "192Mi")},
			[]corev1.Event{evicted("basket-7c9d8f6b5-a1b2c"), evicted("basket-7c9d8f6b5-d3e4f")}, []appsv1.Deployment{deploy},
			[]evidence.CommandOutput{yamlVPA}, []Finding{oom("192Mi")},
			"basket", []string{"update mode Recreate", "evicting them", "from the 1Gi", "memory target 150 MiB"}},
		{"annotation alone", []corev1.Pod{pod(ann, "192Mi")}, nil, nil, nil, []Finding{oom("192Mi")},
			"basket", []string{"VerticalPodAutoscaler basket-vpa", "cut their memory limit to 192Mi"}},
		{"annotation of CPU only, no eviction: none", []corev1.Pod{pod("Pod resources updated by basket: container 0: cpu request", "1Gi")}, nil, nil,
			nil, []Finding{oom("1Gi")}, "", nil},
		{"evictions that left the template's limit: none", []corev1.Pod{pod("", "1Gi")}, []corev1.Event{evicted("basket-7c9d8f6b5-a1b2c")},
			[]appsv1.Deployment{deploy}, nil, []Finding{oom("1Gi")}, "", nil},
		{"no OOM kill: none", []corev1.Pod{pod(ann, "192Mi")}, nil, nil, []evidence.CommandOutput{describeVPA}, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "basket", Namespace: "shop"}}
			ev.K8s.Pods, ev.K8s.Events, ev.K8s.Deployments = c.pods, c.events, c.deploys
			f := onlyFinding(t, detectVPAMemoryCut(ev, c.found), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindVPAMemoryCut, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
	h := &Hypothesis{Kind: KindVPAMemoryCut, Subject: "basket", Primary: []*Finding{{Kind: KindVPAMemoryCut}}}
	if !vpaMemoryCut.fitsChange(h, &Finding{Kind: KindConfigChange, Summary: "config change: add VerticalPodAutoscaler objects for shop"}) ||
		vpaMemoryCut.fitsChange(h, &Finding{Kind: KindDeploy, Summary: "deploy of basket 2.3.1"}) {
		t.Error("only a change that adds or sets a VPA triggers it")
	}
}
