package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rootcause/rootcause/finding"
)

// A Service whose selector matches none of its pods (labels changed on one
// side only): it has no endpoints and its callers get refused.
var selectorM = &mechanism{
	kind:  KindSelector,
	class: classCause,
	label: "Service selector/label mismatch",
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if found[i].Kind == KindSelector {
				readSelectorRejected(ev, &found[i])
			}
		}
		return nil
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		if r := h.fact("rejected"); r != "" {
			return fmt.Sprintf("the apply of the new selector was rejected for %s %s: its spec.selector is immutable (%s), so the rest of the change went through alone and service %s took the new selector, while the workload was not updated at all (its pods still run the previous revision, and nothing of its new version ran); the service now selects no pods (no ready endpoints), so requests to it fail: %s",
				h.fact("rejected_kind"), h.fact("workload"), quote(ReadableLine(r), 220), s, h.fact("mismatch"))
		}
		return fmt.Sprintf("selector/label mismatch: service %s selects no pods (no ready endpoints), so requests to it fail: %s", s, h.fact("mismatch"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if h.fact("rejected") != "" {
			r.high("Restore service %s's previous selector (revert the chart change or roll the application back to its last synced revision) so that it selects the running pods again", s)
			r.med("Change the selector of %s %s by replacing the object (delete it with --cascade=orphan and let the sync recreate it, or Argo CD's Replace=true sync option) with the Service in the same step; a selector cannot be patched", h.fact("rejected_kind"), h.fact("workload"))
			r.low("Check in CI that a chart bump leaves workloads' spec.selector unchanged, and alert on failed syncs")
			return
		}
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Make service %s select its pods again: restore the pod labels its selector needs, or update the selector to the new labels (%s)", s, truncate(h.fact("mismatch"), 160)))
		r.add(finding.PriorityMedium, "Keep Service selectors and pod template labels in the same chart and change them together")
		r.add(finding.PriorityLow, "Alert on Services with no ready endpoints (kube_endpoint_address_available == 0) and check selectors in CI")
	},
}

// An apply refused because it changes a workload's selector, which the
// API server keeps immutable once created: kubectl apply ("The Deployment
// \"web\" is invalid: spec.selector: Invalid value: ...: field is
// immutable"), Argo CD's sync result and controller log, Helm's "UPGRADE
// FAILED: cannot patch", Flux's dry-run failure, a StatefulSet's
// "updates to statefulset spec for fields other than ... are forbidden".
var selectorRejectedRE = regexp.MustCompile(`(?i)\b(Deployment|StatefulSet|DaemonSet|ReplicaSet|Job)(?:\.apps|\.batch)?\s+\\?"([\w.-]+)\\?"\s+is invalid:\s*spec(?:\.selector: Invalid value:.*field is immutable|: Forbidden: updates to statefulset spec for fields other than)`)

// readSelectorRejected reads, in the operator's command outputs and the
// logs (a GitOps controller's, a deploy job's), an apply of the selector
// mismatch's workload refused because its selector is immutable: the
// change reached the Service but not the workload, so the labels diverged
// at that moment.
func readSelectorRejected(ev *Gathered, f *Finding) {
	wl := f.fact("workload")
	if wl == "" || f.fact("rejected") != "" {
		return
	}
	var hit timedLine
	for _, l := range eventLines(ev, selectorRejectedRE) {
		m := findSubmatch(selectorRejectedRE, l.Text)
		if m == nil || !strings.EqualFold(m[2], wl) && !strings.EqualFold(m[2], f.Subject) {
			continue
		}
		if hit.Text == "" || hit.Time.IsZero() && !l.Time.IsZero() {
			hit = l
		}
	}
	if hit.Text == "" {
		return
	}
	m := findSubmatch(selectorRejectedRE, hit.Text)
	f.setFact("rejected", hit.Text)
	f.setFact("rejected_kind", m[1])
	f.setFact("why", fmt.Sprintf("the apply of %s %s was rejected: its spec.selector is immutable", m[1], m[2]))
	if !hit.Time.IsZero() && !ev.Window.Start.IsZero() && !hit.Time.Before(ev.Window.Start.Add(-24*time.Hour)) {
		f.Time = hit.Time
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s: the apply of %s %s was rejected, spec.selector is immutable: %s", hit.From, m[1], m[2], quote(ReadableLine(hit.Text), 240)))
	f.Summary = fmt.Sprintf("service %s took a new selector while the apply of %s %s was rejected (spec.selector is immutable); %s", f.Subject, m[1], m[2], f.Summary)
}

// selectorMismatch explains a Service that selects no pod at all while the
// workload it is meant for runs: the pods that match part of the selector
// (or carry the Service's name) are Running and Ready, and the selector
// pairs their labels lack are named.
func selectorMismatch(svc corev1.Service, pods []corev1.Pod) (Finding, bool) {
	type cand struct {
		matched, ready, total int
		missing               []string
		pod                   *corev1.Pod
	}
	byWl := map[string]*cand{}
	var order []string
	for i := range pods {
		p := &pods[i]
		if p.Namespace != svc.Namespace || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		// A pod read from a table (get pods -o wide) carries no labels:
		// they are unknown, not missing, and say nothing of the selector.
		if len(p.Labels) == 0 {
			continue
		}
		wl := WorkloadOfPod(p)
		matched := 0
		var missing []string
		for k, v := range svc.Spec.Selector {
			if p.Labels[k] == v {
				matched++
				continue
			}
			if have, ok := p.Labels[k]; ok {
				missing = append(missing, fmt.Sprintf("%s=%s (pods have %s=%s)", k, v, k, have))
			} else {
				missing = append(missing, fmt.Sprintf("%s=%s (pods have no %s label)", k, v, k))
			}
		}
		if matched == 0 && !strings.EqualFold(wl, svc.Name) {
			continue
		}
		c := byWl[wl]
		if c == nil {
			sort.Strings(missing)
			c = &cand{matched: matched, missing: missing, pod: p}
			byWl[wl] = c
			order = append(order, wl)
		}
		c.total++
		if podReady(p) {
			c.ready++
		}
	}
	best := ""
	for _, wl := range order {
		c := byWl[wl]
		if best == "" || c.matched > byWl[best].matched || c.matched == byWl[best].matched && strings.EqualFold(wl, svc.Name) {
			best = wl
		}
	}
	if best == "" {
		return selectsNoPod(svc, pods)
	}
	c := byWl[best]
	obj := "service " + svc.Namespace + "/" + svc.Name
	sel := labels.SelectorFromSet(svc.Spec.Selector).String()
	var have []string
	for k, v := range c.pod.Labels {
		if k != "pod-template-hash" {
			have = append(have, k+"="+v)
		}
	}
	sort.Strings(have)
	f := Finding{Kind: KindSelector, Subject: svc.Name, Object: obj, Namespace: svc.Namespace, Source: SrcKubernetes, Severity: SevCritical,
		Weight: 0.75, Related: []string{best}}
	if c.ready > 0 {
		f.Weight = 0.95
	}
	f.Time = c.pod.CreationTimestamp.Time
	mismatch := fmt.Sprintf("Service %s selects %s but the pods of %s (%d of %d Running and Ready) are labelled %s; missing: %s",
		svc.Name, sel, best, c.ready, c.total, strings.Join(have, ","), strings.Join(c.missing, "; "))
	f.Summary = fmt.Sprintf("%s selector %s matches no pods; %s pods lack %s", obj, sel, best, strings.Join(c.missing, "; "))
	f.Evidence = []string{"selector/label mismatch: " + mismatch}
	f.setFact("mismatch", mismatch)
	f.setFact("workload", best)
	return f, true
}

// selectsNoPod explains a Service whose selector matches no pod of its
// namespace although every pod's labels are known (get pods
// --show-labels, describe): the workload it was written for is gone and
// another serves in its place under other labels (a hand-written
// StatefulSet replaced by a chart's, app=orders-db become
// app.kubernetes.io/name=postgresql). The successor is the workload whose
// labels carry the selector's values under other keys (role=primary as
// component=primary, app=shipping-pg's "shipping" as instance=shipping);
// the pods that wait for the Service (an init container polling its
// host, a client's environment naming it) are what it blocks. Without a
// successor there is no mismatch to name: the pods may just be scaled
// away.
func selectsNoPod(svc corev1.Service, pods []corev1.Pod) (Finding, bool) {
	// A selector value carried whole weighs two, a part of one (the
	// "shipping" of shipping-pg) one; a successor needs two.
	values := map[string]int{}
	for _, v := range svc.Spec.Selector {
		for _, tok := range strings.Split(strings.ToLower(v), "-") {
			if len(tok) >= 3 {
				values[tok] = max(values[tok], 1)
			}
		}
		values[strings.ToLower(v)] = 2
	}
	labelled := 0
	var best *corev1.Pod
	bestScore := 0
	for i := range pods {
		p := &pods[i]
		if p.Namespace != svc.Namespace || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if len(p.Labels) == 0 {
			return Finding{}, false // labels unknown: matching none is not shown
		}
		labelled++
		score := 0
		for k, v := range p.Labels {
			if k != "pod-template-hash" {
				score += values[strings.ToLower(v)]
			}
		}
		if score > bestScore || score == bestScore && score > 0 && podReady(p) && !podReady(best) {
			best, bestScore = p, score
		}
	}
	if best == nil || labelled == 0 || bestScore < 2 {
		return Finding{}, false
	}
	wl := WorkloadOfPod(best)
	obj := "service " + svc.Namespace + "/" + svc.Name
	sel := labels.SelectorFromSet(svc.Spec.Selector).String()
	var have []string
	for k, v := range best.Labels {
		if k != "pod-template-hash" && k != "controller-revision-hash" && k != "statefulset.kubernetes.io/pod-name" && k != "apps.kubernetes.io/pod-index" {
			have = append(have, k+"="+v)
		}
	}
	sort.Strings(have)
	state := "not ready"
	if podReady(best) {
		state = "Running and Ready"
	}
	f := Finding{Kind: KindSelector, Subject: svc.Name, Object: obj, Namespace: svc.Namespace, Source: SrcKubernetes, Severity: SevCritical,
		Weight: 0.9, Related: []string{wl}, Time: best.CreationTimestamp.Time}
	mismatch := fmt.Sprintf("Service %s selects %s, which no pod of namespace %s carries (%d pods, labels read); %s (pod %s, %s) looks like its replacement under other labels: %s",
		svc.Name, sel, svc.Namespace, labelled, wl, best.Name, state, truncate(strings.Join(have, ","), 240))
	f.Summary = fmt.Sprintf("%s selector %s matches no pod; %s serves under other labels", obj, sel, wl)
	f.Evidence = []string{"selector/label mismatch: " + mismatch}
	for _, w := range waitersOf(svc, pods) {
		f.Evidence = append(f.Evidence, w)
		if len(f.Evidence) >= 4 {
			break
		}
	}
	f.setFact("mismatch", mismatch)
	f.setFact("workload", wl)
	f.setFact("replaced", "true")
	return f, true
}

// waitersOf names the pods whose containers reach svc by name (an init
// container's command polling it, an environment value naming it) and
// that are not ready: what the missing endpoints block.
func waitersOf(svc corev1.Service, pods []corev1.Pod) []string {
	nameRE := regexp.MustCompile(`(?i)(^|[^\w.-])` + regexp.QuoteMeta(svc.Name) + `($|[^\w-])`)
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.Namespace != svc.Namespace || podReady(p) {
			continue
		}
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			text := strings.Join(append(slices.Clone(c.Command), c.Args...), " ")
			for _, e := range c.Env {
				text += " " + e.Value
			}
			if !matchLine(nameRE, text) {
				continue
			}
			what := "container " + c.Name
			if slices.ContainsFunc(p.Spec.InitContainers, func(x corev1.Container) bool { return x.Name == c.Name }) {
				what = "init container " + c.Name
			}
			out = append(out, fmt.Sprintf("pod %s/%s is not ready: its %s reaches %s (%s)", p.Namespace, p.Name, what, svc.Name, truncate(text, 160)))
			break
		}
	}
	return out
}
