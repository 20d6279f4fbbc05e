package analyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Pods evicted by the kubelet from a node low on a resource (memory,
// ephemeral storage): they restart elsewhere or stay Pending.
var evictionM = &mechanism{
	kind:  KindEviction,
	class: classCause,
	label: "pod evictions",
	pod:   evictedPod,
	event: func(e *corev1.Event) (float64, bool) {
		_, _, _, own := ephemeralLimitOf(e.Message)
		return 0.8, e.Reason == "Evicted" && !own
	},
	eventOutlivesPod: true,
	eventFacts:       pressureFacts,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		res := h.fact("resource")
		d = fmt.Sprintf("%s pods are evicted by the kubelet", s)
		d += h.clause(" on node ", "node")
		if res != "" {
			d += fmt.Sprintf(" because the node is low on %s (%s)", res, pressureCondition(res))
		}
		if m := h.fact("message"); m != "" {
			d += ": " + truncate(m, 160)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		nodePressure.recommend(h, sc, r)
	},
}

// pressureFacts names the resource under pressure and the node of an
// eviction or node-pressure event.
func pressureFacts(f *Finding, e *corev1.Event) {
	f.setFact("resource", pressureResource(e.Message+" "+e.Reason))
	f.setFact("node", e.Source.Host)
}

// evictedPod judges a pod the kubelet evicted: the eviction is all there
// is to say about it.
func evictedPod(p *corev1.Pod, base Finding) ([]Finding, bool) {
	if p.Status.Reason != "Evicted" {
		return nil, false
	}
	if _, _, _, own := ephemeralLimitOf(p.Status.Message); own {
		return nil, false // ephemerallimit.go
	}
	obj := base.Object
	f := base
	f.Kind, f.Severity, f.Weight = KindEviction, SevWarning, 0.8
	if p.Status.StartTime != nil {
		f.Time = p.Status.StartTime.Time
	}
	for _, c := range p.Status.Conditions {
		if !c.LastTransitionTime.IsZero() {
			f.Time = earliest(f.Time, c.LastTransitionTime.Time)
		}
	}
	f.Summary = fmt.Sprintf("%s evicted: %s", obj, p.Status.Message)
	f.Evidence = []string{fmt.Sprintf("%s was evicted from node %s: %s", obj, p.Spec.NodeName, quote(p.Status.Message, 200))}
	f.setFact("node", p.Spec.NodeName)
	f.setFact("message", p.Status.Message)
	f.setFact("resource", pressureResource(p.Status.Message))
	return []Finding{f}, true
}
