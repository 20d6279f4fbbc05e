package analyst

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A DaemonSet runs one pod per node it may schedule on. Nodes carrying a
// taint its pod template does not tolerate (a new GPU node pool's
// nvidia.com/gpu:NoSchedule) get no pod: nothing fails, the agent simply
// is not there (no logs shipped, no metrics scraped from those nodes).
// Asked why a DaemonSet's work is missing on some nodes, the untolerated
// taint is the answer, and the change that brought the tainted nodes is
// when it began.

// KindDaemonSetTaint is a DaemonSet whose pods are kept off tainted nodes.
const KindDaemonSetTaint Kind = "daemonset_taint"

var daemonSetTaint = &mechanism{
	kind:   KindDaemonSetTaint,
	class:  classCause,
	label:  "DaemonSet does not tolerate some nodes' taints",
	detect: detectDaemonSetTaints,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "taint") || strings.Contains(t, "node") || strings.Contains(t, "toleration")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the DaemonSet %s does not tolerate the taint %s of %s, so no %s pod is scheduled there: its work (log shipping, node metrics) is missing on those nodes while its other pods are healthy",
			h.Subject, h.fact("taint"), h.fact("nodes"), h.Subject)
		if n := h.fact("uncovered"); n != "" {
			d += fmt.Sprintf(" (%s)", n)
		}
		d += h.clause("; the tainted nodes came with the ", "node_change")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Add a toleration for %s to the DaemonSet %s's pod template (or operator: Exists for a node agent that must run everywhere)", h.fact("taint"), h.Subject)
		r.med("Check every node agent (logging, monitoring, CNI, CSI) against the taints of new node pools before they take workloads")
		r.low("Alert when a DaemonSet's desired pods fall short of the nodes it should cover (kube_daemonset_status_desired_number_scheduled against kube_node_info)")
	},
}

// detectDaemonSetTaints finds DaemonSets that tolerate neither the
// NoSchedule nor NoExecute taints of some nodes their selector admits.
func detectDaemonSetTaints(ev *Gathered, _ []Finding) []Finding {
	subjects := ev.Scope.Subjects()
	var out []Finding
	for i := range ev.K8s.DaemonSets {
		ds := &ev.K8s.DaemonSets[i]
		spec := &ds.Spec.Template.Spec
		var nodes []string
		var taint string
		for j := range ev.K8s.Nodes {
			n := &ev.K8s.Nodes[j]
			if len(spec.NodeSelector) > 0 && !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(n.Labels)) {
				continue // not meant for this node
			}
			for _, t := range n.Spec.Taints {
				if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
					continue
				}
				if slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, t) }) {
					continue
				}
				if isControlPlaneTaint(t) {
					continue
				}
				if taint == "" {
					taint = taintString(t)
				}
				if taintString(t) == taint {
					nodes = append(nodes, n.Name)
				}
				break
			}
		}
		if len(nodes) == 0 {
			continue
		}
		asked := containsFold(subjects, ds.Name)
		f := Finding{Kind: KindDaemonSetTaint, Subject: ds.Name, Object: "daemonset " + ds.Namespace + "/" + ds.Name, Namespace: ds.Namespace,
			Source: SrcKubernetes, Severity: SevWarning, Weight: 0.4, Time: ev.Window.Start, Related: nodes}
		if asked {
			f.Severity, f.Weight = SevCritical, 0.9
		}
		f.setFact("taint", taint)
		f.setFact("nodes", plural(len(nodes), "node", "nodes")+" ("+strings.Join(firstN(nodes, 3), ", ")+")")
		var tols []string
		for _, t := range spec.Tolerations {
			tols = append(tols, strings.TrimSpace(t.Key+" "+string(t.Operator)+" "+t.Value+" "+string(t.Effect)))
		}
		f.Evidence = []string{
			fmt.Sprintf("%s %s the taint %s", f.fact("nodes"), map[bool]string{true: "carries", false: "carry"}[len(nodes) == 1], taint),
			fmt.Sprintf("DaemonSet %s/%s tolerates only: %s", ds.Namespace, ds.Name, orWord(strings.Join(tols, "; "), "nothing")),
		}
		if len(ev.K8s.Nodes) > 0 {
			f.setFact("uncovered", fmt.Sprintf("it schedules %d pods for %d nodes", ds.Status.DesiredNumberScheduled, len(ev.K8s.Nodes)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("DaemonSet %s/%s desires %d pods for %d nodes", ds.Namespace, ds.Name, ds.Status.DesiredNumberScheduled, len(ev.K8s.Nodes)))
		}
		// The change that brought the tainted nodes (a node pool with
		// the taint), else when the first of them joined.
		key := strings.ToLower(strings.SplitN(taint, "=", 2)[0])
		key = strings.SplitN(key, ":", 2)[0]
		for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
			if key != "" && strings.Contains(strings.ToLower(c.Description), key) && !c.Timestamp.After(ev.Window.End) &&
				(f.fact("node_change") == "" || c.Timestamp.Before(f.Time)) {
				f.setFact("node_change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), c.Description))
				f.Time = c.Timestamp
				break
			}
		}
		if f.fact("node_change") != "" {
			f.Evidence = append(f.Evidence, "the tainted nodes came with the "+f.fact("node_change"))
		} else {
			for _, name := range nodes {
				for j := range ev.K8s.Nodes {
					if n := &ev.K8s.Nodes[j]; n.Name == name && !n.CreationTimestamp.IsZero() && (f.Time.Equal(ev.Window.Start) || n.CreationTimestamp.Time.Before(f.Time)) {
						f.Time = n.CreationTimestamp.Time
					}
				}
			}
		}
		f.Summary = fmt.Sprintf("DaemonSet %s/%s does not tolerate %s: no pod on %s", ds.Namespace, ds.Name, taint, f.fact("nodes"))
		out = append(out, f)
	}
	return out
}

// tolerates reports whether a toleration matches a taint, as the
// scheduler reads it: an empty key with Exists matches every taint, an
// empty effect every effect, Exists any value and Equal (the default) the
// same value.
func tolerates(tol corev1.Toleration, t corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key == "" {
		return tol.Operator == corev1.TolerationOpExists
	}
	if tol.Key != t.Key {
		return false
	}
	return tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value
}

// isControlPlaneTaint reports whether a taint keeps workloads off control
// plane nodes, where node agents are often meant not to run.
func isControlPlaneTaint(t corev1.Taint) bool {
	return t.Key == "node-role.kubernetes.io/control-plane" || t.Key == "node-role.kubernetes.io/master"
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return append(slices.Clone(xs[:n]), "…")
	}
	return xs
}
