package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// Pods the scheduler places nowhere because no node matches their node
// selector are explained by the selector itself: which of its labels no
// node carries, read from the pending pod's spec (or its controller's pod
// template) against the nodes' labels, and whether the value it asks for is
// carried under another key (nodes relabelled by a new provisioner). The
// node provisioner's own word counts too: Karpenter's `label "x" does not
// have known values` says no node pool can ever make a node with x.

// selectorReasonRE matches a scheduler or autoscaler reason that rules nodes
// out for their labels: kube-scheduler's "didn't match Pod's node
// affinity/selector" (1.2x; "node(s) didn't match node selector" before),
// cluster-autoscaler's NotTriggerScaleUp that repeats it, Karpenter's
// incompatible node pools.
var selectorReasonRE = regexp.MustCompile(`(?i)didn't match (?:pod's )?node (?:affinity|selector)|does not have known values|incompatible requirements`)

// provisionerLabelRE reads the label Karpenter says no node pool offers
// (v1: `label "lifecycle" does not have known values`; v0.3x:
// `incompatible requirements, key lifecycle, lifecycle In [spot] not in
// lifecycle DoesNotExist`).
var provisionerLabelRE = regexp.MustCompile(`label \\?"([^"\\]+)\\?" does not have known values|incompatible requirements, key ([^\s,]+), `)

// selectorTerm is one label a pending pod requires of its node.
type selectorTerm struct {
	key    string
	values []string // any of them; none: the key must exist
}

func (t selectorTerm) String() string {
	switch len(t.values) {
	case 0:
		return t.key
	case 1:
		return t.key + "=" + t.values[0]
	}
	return t.key + " in (" + strings.Join(t.values, ", ") + ")"
}

// requiredTerms are the node labels a pod spec requires: its nodeSelector
// and the In/Exists expressions of a single required node affinity term
// (several terms are alternatives, which one label cannot rule out).
func requiredTerms(spec *corev1.PodSpec) []selectorTerm {
	var out []selectorTerm
	for k, v := range spec.NodeSelector {
		out = append(out, selectorTerm{key: k, values: []string{v}})
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		if ts := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(ts) == 1 {
			for _, e := range ts[0].MatchExpressions {
				switch e.Operator {
				case corev1.NodeSelectorOpIn:
					out = append(out, selectorTerm{key: e.Key, values: e.Values})
				case corev1.NodeSelectorOpExists:
					out = append(out, selectorTerm{key: e.Key})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// nodeLabelsKnown reports whether a node's labels for key are known: the
// node was described or read whole (the kubelet's well-known labels are
// there), or a table showed key as a column (kubectl get -L).
func nodeLabelsKnown(n *corev1.Node, key string) bool {
	for _, k := range []string{"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"} {
		if _, ok := n.Labels[k]; ok {
			return true
		}
	}
	return slices.Contains(strings.Split(n.Annotations[kubetext.LabelColumnsAnnotation], ","), key)
}

// unmatchedTerm is a selector label no node satisfies, with what the nodes
// carry instead.
type unmatchedTerm struct {
	term      selectorTerm
	nodes     int      // nodes whose labels for the key were read
	absent    int      // of them, nodes without the key
	others    []string // other values of the key, "value (N nodes)"
	elsewhere []string // the wanted value under another key, "key=value (N nodes)"
}

// unmatchedTerms judges a pending pod's required labels against the nodes
// whose labels are known: a term is unmatched when every such node lacks
// the key or holds another value. Terms on nodes whose labels were not
// read are not judged.
func unmatchedTerms(terms []selectorTerm, nodes []corev1.Node) []unmatchedTerm {
	var out []unmatchedTerm
	for _, t := range terms {
		u := unmatchedTerm{term: t}
		others, elsewhere := map[string]int{}, map[string]int{}
		matched := false
		for i := range nodes {
			n := &nodes[i]
			if !nodeLabelsKnown(n, t.key) {
				continue
			}
			u.nodes++
			v, ok := n.Labels[t.key]
			switch {
			case ok && (len(t.values) == 0 || slices.Contains(t.values, v)):
				matched = true
			case ok:
				others[v]++
			default:
				u.absent++
			}
			for k, lv := range n.Labels {
				if k != t.key && slices.Contains(t.values, lv) {
					elsewhere[k+"="+lv]++
				}
			}
		}
		if matched || u.nodes == 0 {
			continue
		}
		u.others, u.elsewhere = counted(others), counted(elsewhere)
		out = append(out, u)
	}
	return out
}

// counted lists "item (N nodes)", most nodes first.
func counted(m map[string]int) []string {
	var out []string
	for _, k := range byCount(m) {
		out = append(out, fmt.Sprintf("%s (%s)", k, plural(m[k], "node", "nodes")))
	}
	return out
}

// words says what the nodes carry instead of a selector label.
func (u unmatchedTerm) words() string {
	var d string
	switch {
	case u.absent == u.nodes:
		d = fmt.Sprintf("none of the %s carries the label %s", plural(u.nodes, "node", "nodes"), u.term.key)
	case u.absent == 0:
		d = fmt.Sprintf("the %s carry %s=%s", plural(u.nodes, "node", "nodes"), u.term.key, strings.Join(u.others, ", "))
	default:
		d = fmt.Sprintf("of the %s, %d carry no label %s and the others %s=%s", plural(u.nodes, "node", "nodes"), u.absent, u.term.key, u.term.key, strings.Join(u.others, ", "))
	}
	if len(u.elsewhere) > 0 {
		d += fmt.Sprintf("; the value is carried under another key: %s (the nodes were relabelled, or the selector names the wrong key)", strings.Join(u.elsewhere, ", "))
	}
	return d
}

// podSpecOf finds the spec of a pending pod: the pod's own when its node
// selector was read, else the pod template of the controller that made it
// (a Job's, a ReplicaSet's, a StatefulSet's, a Deployment's), found by the
// pod's name. owners are the names the pod belongs to beyond its own: the
// controller and the workload its template's labels name.
func podSpecOf(k *K8sEvidence, ns, name string) (spec *corev1.PodSpec, owners []string) {
	for i := range k.Pods {
		p := &k.Pods[i]
		if p.Namespace == ns && p.Name == name && len(requiredTerms(&p.Spec)) > 0 {
			return &p.Spec, nil
		}
	}
	var best string
	var tmpl *corev1.PodTemplateSpec
	try := func(objNS, owner string, t *corev1.PodTemplateSpec) {
		if objNS == ns && strings.HasPrefix(name, owner+"-") && len(owner) > len(best) && len(requiredTerms(&t.Spec)) > 0 {
			best, tmpl = owner, t
		}
	}
	for i := range k.Jobs {
		try(k.Jobs[i].Namespace, k.Jobs[i].Name, &k.Jobs[i].Spec.Template)
	}
	for i := range k.ReplicaSets {
		try(k.ReplicaSets[i].Namespace, k.ReplicaSets[i].Name, &k.ReplicaSets[i].Spec.Template)
	}
	for i := range k.StatefulSets {
		try(k.StatefulSets[i].Namespace, k.StatefulSets[i].Name, &k.StatefulSets[i].Spec.Template)
	}
	for i := range k.Deployments {
		try(k.Deployments[i].Namespace, k.Deployments[i].Name, &k.Deployments[i].Spec.Template)
	}
	if tmpl == nil {
		return nil, nil
	}
	owners = []string{trimHash(best)}
	if wl := WorkloadOfPod(&corev1.Pod{ObjectMeta: tmpl.ObjectMeta}); wl != "" && !slices.Contains(owners, wl) {
		owners = append(owners, wl)
	}
	return &tmpl.Spec, owners
}

// detectSelectorUnmatched explains the unschedulable findings whose
// scheduler (or provisioner) message rules nodes out for their labels by
// the selector label no node carries: a finding of the same pod, weighted
// above the event's, with the label as its facts and evidence.
func detectSelectorUnmatched(ev *Gathered, found []Finding) []Finding {
	type podKey struct{ ns, name string }
	msgs := map[podKey][]string{}
	base := map[podKey]Finding{}
	var order []podKey
	for _, f := range found {
		if f.Kind != KindUnschedulable || !strings.HasPrefix(f.Object, "pod ") {
			continue
		}
		ns, name, ok := strings.Cut(strings.TrimPrefix(f.Object, "pod "), "/")
		if !ok {
			continue
		}
		k := podKey{ns, name}
		if _, seen := base[k]; !seen {
			order = append(order, k)
			base[k] = f
		}
		for _, e := range append([]string{f.fact("message"), f.Summary}, f.Evidence...) {
			if matchLine(selectorReasonRE, e) {
				msgs[k] = append(msgs[k], e)
			}
		}
	}
	var out []Finding
	for _, k := range order {
		if len(msgs[k]) == 0 {
			continue
		}
		var provLabels []string
		for _, m := range msgs[k] {
			for _, sm := range findAllSubmatch(provisionerLabelRE, m, -1) {
				if l := sm[1] + sm[2]; !slices.Contains(provLabels, l) {
					provLabels = append(provLabels, l)
				}
			}
		}
		var terms []selectorTerm
		spec, owners := podSpecOf(&ev.K8s, k.ns, k.name)
		if spec != nil {
			terms = requiredTerms(spec)
		}
		un := unmatchedTerms(terms, ev.K8s.Nodes)
		// A provisioner that knows no value of a required label says the
		// same of it, for nodes it would make.
		for _, t := range terms {
			if slices.Contains(provLabels, t.key) && !slices.ContainsFunc(un, func(u unmatchedTerm) bool { return u.term.key == t.key }) {
				un = append(un, unmatchedTerm{term: t})
			}
		}
		if len(un) == 0 {
			continue
		}
		b := base[k]
		f := Finding{Kind: KindUnschedulable, Subject: b.Subject, Object: b.Object, Namespace: b.Namespace, Time: b.Time, Severity: SevCritical,
			Weight: 0.95, Source: SrcKubernetes, Related: slices.Clone(b.Related)}
		for _, o := range owners {
			if o != f.Subject && !slices.Contains(f.Related, o) {
				f.Related = append(f.Related, o)
			}
		}
		var sel, why []string
		for _, u := range un {
			sel = append(sel, u.term.String())
			w := ""
			if u.nodes > 0 {
				w = u.words()
				f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s requires node label %s; %s", k.ns, k.name, u.term, w))
			}
			if slices.Contains(provLabels, u.term.key) {
				pw := fmt.Sprintf("the node provisioner knows no value of the label %s, so no node it can create matches either", u.term.key)
				f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s requires node label %s; %s", k.ns, k.name, u.term, pw))
				if w == "" {
					w = pw
				} else {
					w += "; " + pw
				}
			}
			why = append(why, fmt.Sprintf("%s: %s", u.term, w))
			if len(u.elsewhere) > 0 && f.fact("selector_instead") == "" {
				f.setFact("selector_instead", strings.SplitN(u.elsewhere[0], " (", 2)[0])
			}
		}
		if c := labelChange(ev, un, b.Time); c != nil {
			f.setFact("selector_change", fmt.Sprintf("%s (%s, %s)", truncate(c.Description, 200), c.Kind, ts(c.Timestamp)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("change %s at %s names the label: %s", orWord(c.Revision, c.Kind), ts(c.Timestamp), quote(truncate(c.Description, 200), 210)))
		}
		f.Evidence = append(f.Evidence, b.Evidence...)
		f.setFact("message", b.fact("message"))
		f.setFact("selector_unmatched", strings.Join(sel, ", "))
		f.setFact("selector_why", strings.Join(why, "; "))
		f.Summary = fmt.Sprintf("%s cannot be scheduled: no node carries the label its node selector requires (%s)", b.Object, strings.Join(sel, ", "))
		out = append(out, f)
	}
	return out
}

// labelChange is the latest change before the pods went Pending, in the
// window or the month before it, that names a label of the selector or the
// key the nodes carry its value under (a node group replaced, a
// provisioner's labels): how the nodes came to lack the label.
func labelChange(ev *Gathered, un []unmatchedTerm, before time.Time) *evidence.Change {
	var keys []string
	for _, u := range un {
		keys = append(keys, strings.ToLower(u.term.key))
		for _, e := range u.elsewhere {
			k, _, _ := strings.Cut(e, "=")
			keys = append(keys, strings.ToLower(k))
		}
	}
	var best *evidence.Change
	for _, cs := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for i := range cs {
			c := &cs[i]
			if !before.IsZero() && c.Timestamp.After(before) {
				continue
			}
			d := strings.ToLower(c.Description)
			if !slices.ContainsFunc(keys, func(k string) bool { return labelNamed(d, k) }) {
				continue
			}
			if best == nil || c.Timestamp.After(best.Timestamp) {
				best = c
			}
		}
	}
	return best
}

// labelNamed reports whether a (lowercase) text names a label key as a
// word of its own ("lifecycle=spot", "labelled karpenter.sh/capacity-type"),
// not inside a longer word.
func labelNamed(text, key string) bool {
	for rest := text; ; {
		i := strings.Index(rest, key)
		if i < 0 {
			return false
		}
		before, after := byte(' '), byte(' ')
		if i > 0 {
			before = rest[i-1]
		}
		if j := i + len(key); j < len(rest) {
			after = rest[j]
		}
		if !labelChar(before) && !labelChar(after) {
			return true
		}
		rest = rest[i+len(key):]
	}
}

func labelChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '/'
}
