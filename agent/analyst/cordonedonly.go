package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// KindCordonedOnly is a workload whose pods stay Pending because the only
// nodes they may run on are cordoned.
const KindCordonedOnly Kind = "cordoned_only"

// Pods Pending on a cordon: a node cordoned (kubectl cordon, or drain,
// sets spec.unschedulable; `kubectl get nodes` shows Ready,SchedulingDisabled)
// takes no new pods. When it is the only node a workload may use (the
// others do not match its node selector or affinity, or carry taints it
// does not tolerate: the scheduler's "1 node(s) were unschedulable, 6
// node(s) didn't match Pod's node affinity/selector"), the pods wait for
// it however healthy it is, and a cluster autoscaler whose node group is
// at its maximum size adds no other. The cordon is the root, not the
// autoscaler or the node: the node is Ready and has room. Cordons are
// often left behind by an investigation or a maintenance that meant to
// undo them; the change or logged command that cordoned the node says
// when and why, and whether an uncordon was promised.
var cordonedOnly = &mechanism{
	kind:   KindCordonedOnly,
	class:  classCause,
	label:  "pods Pending: the only nodes they may use are cordoned",
	detect: detectCordonedOnly,
	// The pods' FailedScheduling and the autoscaler's refusal to add a
	// node to a group at its maximum are the same Pending pods explained
	// one hop further.
	refines: []Kind{KindUnschedulable, KindNodeLimit},
	related: func(h *Hypothesis, f *Finding) bool {
		return (f.Kind == KindUnschedulable || f.Kind == KindNodeLimit) && strings.EqualFold(f.Subject, h.Subject)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(cordonActionRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		nodes := h.fact("nodes")
		d := fmt.Sprintf("%s pods stay Pending because the only %s they may run on, %s, %s cordoned (spec.unschedulable: true, shown as Ready,SchedulingDisabled), so the scheduler places nothing there",
			h.Subject, pluralWord(h.fact("count"), "node", "nodes"), nodes, isAre(h.fact("count")))
		d += h.wrapped(": ", "scheduler", "")
		d += h.wrapped("; the other nodes ", "others", "")
		d += h.clause("; it was cordoned by the ", "cordoned_by")
		d += h.wrapped(", which meant to undo it (", "promised", ")")
		if h.fact("not_undone") != "" {
			d += ", and nothing uncordoned it since"
		}
		if h.fact("ready") != "" {
			d += ". The node is Ready: the cordon alone keeps the pods off it"
		}
		if l := h.fact("autoscaler"); l != "" {
			d += fmt.Sprintf("; the cluster autoscaler cannot add another node for them either (%s), working as configured", quote(truncate(l, 160), 170))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		for _, n := range strings.Split(h.fact("nodes"), ", ") {
			r.high("Uncordon %s once whatever it was cordoned for is done: kubectl uncordon %s; the Pending %s pods then schedule", n, n, h.Subject)
		}
		r.med("Give %s more than one node it may run on (a node group max size above 1, or a second pool its selector matches), so one cordoned node cannot hold it", h.Subject)
		r.low("Alert on nodes cordoned longer than a maintenance lasts (kube_node_spec_unschedulable == 1 for hours), and make runbooks that cordon a node uncordon it as their last step")
	},
}

var (
	// cordonReasonRE is the scheduler's reason for cordoned nodes.
	cordonReasonRE = regexp.MustCompile(`(?i)were unschedulable|untolerated taint\(?s?\)?\s*\{?node\.kubernetes\.io/unschedulable`)
	// staticReasonRE is a reason a node is ruled out that no waiting
	// changes: its labels or its taints.
	staticReasonRE = regexp.MustCompile(`(?i)didn't match (?:pod's )?node (?:affinity|selector)|untolerated taint|had taints? that the pod didn't tolerate`)
	// transientTaintRE are the taints of a node failing or being cordoned,
	// not of its pool.
	transientTaintRE = regexp.MustCompile(`(?i)node\.kubernetes\.io/(?:unschedulable|not-ready|unreachable)`)
	// cordonActionRE is a change or command that cordons or drains a node.
	cordonActionRE = regexp.MustCompile(`(?i)\bcordon(?:ed|ing)?\b|\bkubectl\s+drain\b|\bdrain(?:ed|ing)?\s+(?:the\s+)?node|\bunschedulable\b`)
	// uncordonRE is a change or command that uncordons a node.
	uncordonRE = regexp.MustCompile(`(?i)\buncordon(?:ed|ing)?\b`)
	// promiseRE is what a cordon's note says will undo it.
	promiseRE = regexp.MustCompile(`(?i)\b(?:uncordon|re-?enable|put (?:it )?back)\b[^.;]*`)
)

// detectCordonedOnly finds Pending pods whose latest FailedScheduling rules
// out every node by its labels or taints except cordoned ones, and names
// those nodes (cordoned now, matching the pod's selector when it was read).
func detectCordonedOnly(ev *Gathered, found []Finding) []Finding {
	var cordoned []*corev1.Node
	for i := range ev.K8s.Nodes {
		if n := &ev.K8s.Nodes[i]; nodeCordoned(n) {
			cordoned = append(cordoned, n)
		}
	}
	if len(cordoned) == 0 {
		return nil
	}
	type latest struct {
		e  *corev1.Event
		at time.Time
	}
	last := map[string]latest{} // pod → its latest FailedScheduling
	var pods []string
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.InvolvedObject.Kind != "Pod" || e.Reason != "FailedScheduling" {
			continue
		}
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		_, at := eventTime(e)
		l, seen := last[key]
		if !seen {
			pods = append(pods, key)
		}
		if !seen || !at.Before(l.at) {
			last[key] = latest{e, at}
		}
	}
	var out []Finding
	done := map[string]bool{}
	for _, key := range pods {
		e := last[key].e
		ns, name := e.InvolvedObject.Namespace, e.InvolvedObject.Name
		wl := workloadOfName(name)
		if done[wl] || ev.Scope.Namespace != "" && ns != "" && ns != ev.Scope.Namespace || podScheduled(ev, ns, name) {
			continue
		}
		reasons := schedulingReasons(e.Message)
		nCordoned, others := 0, []string{}
		static := true
		for _, r := range reasons {
			switch {
			case matchLine(cordonReasonRE, r.text):
				nCordoned += r.nodes
			case controlPlaneReason(r.text):
			case matchLine(staticReasonRE, r.text) && !matchLine(transientTaintRE, r.text):
				others = append(others, fmt.Sprintf("on %s, %s", plural(r.nodes, "node", "nodes"), schedReasonWords(r.text)))
			default:
				static = false
			}
		}
		if nCordoned == 0 || !static {
			continue
		}
		// The cordoned nodes the pod could use: all of them, or those its
		// selector matches when its spec was read.
		var terms []selectorTerm
		var spec *corev1.PodSpec
		if s, _ := podSpecOf(&ev.K8s, ns, name); s != nil {
			spec, terms = s, requiredTerms(s)
		}
		var names []string
		ready := true
		var matched []*corev1.Node
		for _, n := range cordoned {
			if !nodeMatchesTerms(n, terms) || spec != nil && !toleratesPoolTaints(spec, n) {
				continue
			}
			matched = append(matched, n)
			names = append(names, n.Name)
			if !nodeReadyNow(n) {
				ready = false
			}
		}
		if len(names) == 0 || len(names) > nCordoned {
			continue
		}
		sort.Strings(names)
		done[wl] = true
		_, at := eventTime(e)
		first, _ := eventTime(e)
		f := Finding{Kind: KindCordonedOnly, Subject: wl, Object: "pod " + ns + "/" + name, Namespace: ns, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.95, Time: orTime(first, at), Related: slices.Clone(names)}
		f.setFact("nodes", strings.Join(names, ", "))
		f.setFact("count", fmt.Sprint(len(names)))
		f.setFact("affected", strings.Join(names, ", "))
		f.setFact("scheduler", quote(truncate(e.Message, 220), 230))
		f.setFact("message", e.Message)
		f.setFact("current", "true")
		if len(others) > 0 {
			f.setFact("others", "are ruled out by their labels or taints ("+strings.Join(others, "; ")+")")
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("event FailedScheduling on pod %s/%s at %s: %s", ns, name, ts(at), quote(truncate(e.Message, 220), 230)))
		for _, n := range matched {
			status := "cordoned (spec.unschedulable: true)"
			if nodeReadyNow(n) {
				status = "Ready,SchedulingDisabled (cordoned)"
			}
			w := fmt.Sprintf("node %s is %s", n.Name, status)
			if len(terms) > 0 {
				w += fmt.Sprintf(" and matches the pods' node selector (%s)", termsWords(terms))
			}
			f.Evidence = append(f.Evidence, w)
		}
		if ready {
			f.setFact("ready", "true")
		}
		cordonChain(ev, &f, matched)
		if l := autoscalerAtMax(ev, ns, wl); l != "" {
			f.setFact("autoscaler", l)
			f.Evidence = append(f.Evidence, "the cluster autoscaler adds no node: "+quote(truncate(l, 200), 210))
		}
		f.Summary = fmt.Sprintf("%s pods Pending: the only %s they may use, %s, %s cordoned", wl, pluralWord(f.fact("count"), "node", "nodes"), f.fact("nodes"), isAre(f.fact("count")))
		out = append(out, f)
	}
	return out
}

// nodeCordoned reports whether a node takes no new pods by a cordon.
func nodeCordoned(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnschedulable {
			return true
		}
	}
	return false
}

// nodeReadyNow reports whether a node's Ready condition is True.
func nodeReadyNow(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeMatchesTerms reports whether a node's labels satisfy a pod's
// required labels; a node whose labels were not read for a key does not.
func nodeMatchesTerms(n *corev1.Node, terms []selectorTerm) bool {
	for _, t := range terms {
		if !nodeLabelsKnown(n, t.key) {
			return false
		}
		v, ok := n.Labels[t.key]
		if !ok || len(t.values) > 0 && !slices.Contains(t.values, v) {
			return false
		}
	}
	return true
}

// toleratesPoolTaints reports whether a pod spec tolerates a node's
// NoSchedule and NoExecute taints other than those of a cordon or a
// failing node.
func toleratesPoolTaints(spec *corev1.PodSpec, n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || matchLine(transientTaintRE, t.Key) {
			continue
		}
		if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tolerates(tol, *t) }) {
			return false
		}
	}
	return true
}

// termsWords writes required labels.
func termsWords(terms []selectorTerm) string {
	var s []string
	for _, t := range terms {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

// podScheduled reports whether the pod is known to run on a node now.
func podScheduled(ev *Gathered, ns, name string) bool {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Name == name && (p.Namespace == ns || p.Namespace == "") {
			return p.Spec.NodeName != "" || p.Status.Phase != "" && p.Status.Phase != corev1.PodPending
		}
	}
	return false
}

// nodeNamed reports whether text names a node, by its full name or its
// host part (ip-10-31-40-12 for ip-10-31-40-12.eu-west-1.compute.internal).
func nodeNamed(text, node string) bool {
	if mentionsName(text, node) {
		return true
	}
	if host, _, ok := strings.Cut(node, "."); ok && len(host) >= 6 {
		return mentionsName(text, host)
	}
	return false
}

// cordonChain finds the change or logged command that cordoned the nodes,
// what it said would undo it, and whether anything uncordoned them since.
func cordonChain(ev *Gathered, f *Finding, nodes []*corev1.Node) {
	type action struct {
		at   time.Time
		text string
		what string
	}
	var acts []action
	for _, c := range append(slicesClone(ev.Earlier), ev.Changes...) {
		acts = append(acts, action{c.Timestamp, c.Description, fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(c.Kind), c.Service, ts(c.Timestamp), truncate(c.Description, 200))})
	}
	for _, l := range ev.HostCommands {
		acts = append(acts, action{l.Time, l.Text, fmt.Sprintf("command at %s in %s: %q", ts(l.Time), subjectOfSource(l.Source), truncate(commandText(l.Text), 200))})
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].at.Before(acts[j].at) })
	for _, n := range nodes {
		var cordon *action
		for i := range acts {
			a := &acts[i]
			if !nodeNamed(a.text, n.Name) {
				continue
			}
			// What the text does first: a cordon that promises an
			// uncordon is a cordon.
			c, u := cordonActionRE.FindStringIndex(a.text), uncordonRE.FindStringIndex(a.text)
			switch {
			case c != nil && (u == nil || c[0] < u[0]):
				cordon = a
			case u != nil:
				cordon = nil // undone; a later cordon may follow
			}
		}
		if cordon == nil {
			continue
		}
		f.setFact("cordoned_by", cordon.what)
		f.setFact("cordoned_at", ts(cordon.at))
		f.Evidence = append(f.Evidence, fmt.Sprintf("node %s was cordoned by the %s", n.Name, cordon.what))
		if m := promiseRE.FindString(cordon.text); m != "" && !strings.HasPrefix(strings.ToLower(cordon.text), strings.ToLower(m)) {
			f.setFact("promised", strings.TrimSpace(m))
			f.setFact("not_undone", "true")
		}
		return
	}
}

// slicesClone copies a slice of changes.
func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// autoscalerAtMax is the autoscaler's refusal to add a node for the
// workload's pods because a limit is reached, from the pods' events.
func autoscalerAtMax(ev *Gathered, ns, wl string) string {
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.InvolvedObject.Kind == "Pod" && (ns == "" || e.InvolvedObject.Namespace == ns) && workloadOfName(e.InvolvedObject.Name) == wl && matchLine(nodeLimitRE, e.Message) {
			return strings.TrimSpace(e.Message)
		}
	}
	return ""
}

// pluralWord picks the word for a count held as a fact.
func pluralWord(count, one, many string) string {
	if count == "" || count == "1" {
		return one
	}
	return many
}

// isAre is the verb for a count held as a fact.
func isAre(count string) string {
	if count == "" || count == "1" {
		return "is"
	}
	return "are"
}
