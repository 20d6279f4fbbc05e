package analyst

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A node that is NotReady: the kubelet stopped reporting, so the pods it
// runs fail or are evicted.
var nodeNotReady = &mechanism{
	kind:  KindNodeNotReady,
	class: classCause,
	label: "node NotReady",
	nodeCondition: func(n *corev1.Node, c corev1.NodeCondition) *Finding {
		obj := "node " + n.Name
		switch {
		case c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue:
			f := &Finding{Kind: KindNodeNotReady, Severity: SevCritical, Weight: 0.9}
			f.Summary = fmt.Sprintf("%s is NotReady (%s)", obj, orDash(c.Reason))
			f.Evidence = []string{fmt.Sprintf("%s condition Ready=%s since %s, reason %s: %s", obj, c.Status, ts(c.LastTransitionTime.Time), orDash(c.Reason), quote(c.Message, 200))}
			return f
		case c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue:
			f := &Finding{Kind: KindNodeNotReady, Severity: SevCritical, Weight: 0.8}
			f.Summary = fmt.Sprintf("%s network unavailable", obj)
			f.Evidence = []string{fmt.Sprintf("%s condition NetworkUnavailable=True since %s: %s", obj, ts(c.LastTransitionTime.Time), quote(c.Message, 200))}
			return f
		}
		return nil
	},
	event: func(e *corev1.Event) (float64, bool) {
		return 0.8, e.Reason == "NodeNotReady"
	},
	eventCritical:    true,
	eventOutlivesPod: true,
	// "Node is not ready" on a pod is about the pod's node: the node is
	// the subject, the workload what it affects.
	eventTarget: func(e *corev1.Event, t *eventTarget) {
		if e.InvolvedObject.Kind != "Pod" {
			return
		}
		node := e.Source.Host
		if t.Pod != nil && t.Pod.Spec.NodeName != "" {
			node = t.Pod.Spec.NodeName
		}
		if node != "" {
			t.Related = []string{t.Subject}
			t.Subject = node
		}
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		if n := h.fact("node"); n != "" {
			s = n
		}
		d = fmt.Sprintf("node %s is NotReady, so the pods it runs fail or are evicted", s)
		if m := h.fact("message"); m != "" {
			d += ": " + truncate(m, 160)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Cordon and drain node %s so its pods reschedule on healthy nodes; replace the node if it does not recover", s))
		r.add(finding.PriorityMedium, fmt.Sprintf("Check kubelet, container runtime and network on %s (journalctl -u kubelet)", s))
		r.add(finding.PriorityLow, "Spread replicas across nodes (pod anti-affinity, PodDisruptionBudgets) so one node cannot take a service down")
	},
}
