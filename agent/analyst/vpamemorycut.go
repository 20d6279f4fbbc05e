package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/finding"
)

// A VerticalPodAutoscaler in Auto (Recreate, InPlaceOrRecreate) mode sets
// the resources of the pods it controls itself: its updater evicts a pod
// whose requests are far from its recommendation (event EvictedByVPA,
// "Pod was evicted by VPA Updater to apply resource recommendation") and
// its admission controller rewrites the new pod's requests to the
// recommendation, scaling the limits in proportion (the pod's annotation
// vpaUpdates: "Pod resources updated by web: container 0: cpu request,
// memory request, memory limit"). A recommendation learned from quiet
// hours (a VPA created the evening before, traffic of one night) is far
// below what the day needs: the pods now run with a memory limit well
// under the one the Deployment's template sets and are OOMKilled under
// load, with nobody having deployed anything. The kills are real, the
// template is fine: what cut the memory is the autoscaler. Read from the
// pod's annotation or the VPA's events, the pod's limit against the
// template's (a Deployment read, its resources printed with jsonpath) and
// the VPA itself (describe or YAML: its update mode and target).

// KindVPAMemoryCut is a VerticalPodAutoscaler that cut a workload's memory
// below what it needs.
const KindVPAMemoryCut Kind = "vpa_memory_cut"

var vpaMemoryCut = &mechanism{
	kind:           KindVPAMemoryCut,
	class:          classCause,
	label:          "VerticalPodAutoscaler cut the memory of the pods",
	detect:         detectVPAMemoryCut,
	related:        kindsOnSubject(KindOOMKilled, KindCrashLoop, KindRestarts, KindEviction, KindSaturation),
	strictTriggers: true,
	fitsChange:     changeSays(vpaWordRE),
	describe:       describeVPAMemoryCut,
	recommend:      recommendVPAMemoryCut,
}

var (
	// vpaWordRE names a VerticalPodAutoscaler.
	vpaWordRE = regexp.MustCompile(`(?i)vertical\s*pod\s*autoscaler|\bvpa\b`)
	// vpaUpdatedByRE is the annotation the VPA admission controller sets
	// on the pods whose resources it rewrote.
	vpaUpdatedByRE = regexp.MustCompile(`(?i)Pod resources updated by ([\w.-]+)`)
	// vpaModeRE is a VPA's update mode (describe "Update Mode: Auto",
	// YAML "updateMode: Auto").
	vpaModeRE = regexp.MustCompile(`(?i)update\s*mode"?:\s*"?(\w+)`)
	// vpaTargetRE opens a recommendation's target (describe "Target:",
	// YAML "target:").
	vpaTargetRE = regexp.MustCompile(`^\s*"?target"?:\s*\{?\s*$|^\s*Target:\s*$`)
	// vpaMemoryRE is a memory quantity line.
	vpaMemoryRE = regexp.MustCompile(`(?i)^\s*"?memory"?:\s*"?([0-9.]+[A-Za-z]*)"?,?\s*$`)
	// jsonLimitsRE is a printed resources object with a memory limit.
	jsonLimitsRE = regexp.MustCompile(`\{.*"limits"\s*:\s*\{[^}]*"memory"`)
)

func detectVPAMemoryCut(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, o := range found {
		if o.Kind != KindOOMKilled || done[strings.ToLower(o.Subject)] {
			continue
		}
		subject := o.Subject
		vpa, updated, evicted := "", "", 0
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if !strings.EqualFold(WorkloadOfPod(p), subject) {
				continue
			}
			if a := p.Annotations["vpaUpdates"]; a != "" && strings.Contains(strings.ToLower(a), "memory") {
				updated = a
				if m := findSubmatch(vpaUpdatedByRE, a); m != nil {
					vpa = m[1]
				}
			}
		}
		var first time.Time
		seen := map[string]bool{}
		for _, e := range ev.K8s.Events {
			if e.Reason != "EvictedByVPA" || !strings.EqualFold(workloadOfName(e.InvolvedObject.Name), subject) {
				continue
			}
			if !seen[e.InvolvedObject.Name] {
				seen[e.InvolvedObject.Name] = true
				evicted++
			}
			if t := e.FirstTimestamp.Time; !t.IsZero() && (first.IsZero() || t.Before(first)) {
				first = t
			}
		}
		if updated == "" && evicted == 0 {
			continue
		}
		f := Finding{Kind: KindVPAMemoryCut, Subject: subject, Namespace: o.Namespace, Severity: SevCritical, Weight: 0.9,
			Source: SrcKubernetes, Time: o.Time, Object: "VerticalPodAutoscaler of " + subject}
		if !first.IsZero() && first.Before(f.Time) && ev.Window.recent(first) {
			f.Time = first
		}
		podLimit := o.fact("memory_limit")
		f.setFact("vpa", orWord(vpa, subject))
		f.setFact("pod_limit", podLimit)
		f.setFact("pod_request", o.fact("memory_request"))
		if updated != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s carry the annotation vpaUpdates: %s", subject, quote(updated, 200)))
		}
		if evicted > 0 {
			f.setFact("evicted", fmt.Sprint(evicted))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the VPA updater evicted %s of %s to apply its resource recommendation (EvictedByVPA)", plural(evicted, "pod", "pods"), subject))
		}
		// The template's limit, from a Deployment read or its resources
		// printed.
		tmpl := templateMemoryLimit(ev, subject)
		if tmpl != "" {
			f.setFact("template_limit", tmpl)
		}
		lower := quantityBelow(podLimit, tmpl)
		if lower {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the OOMKilled pods run with a memory limit of %s (%s) while the template of %s sets %s", podLimit, mibOf(podLimit), subject, tmpl))
		}
		mode, target := vpaObject(ev, orWord(vpa, subject))
		f.setFact("mode", mode)
		f.setFact("target", target)
		if mode != "" {
			e := fmt.Sprintf("VerticalPodAutoscaler %s is in update mode %s", orWord(vpa, subject), mode)
			if target != "" {
				e += fmt.Sprintf(", its memory target %s (%s)", target, mibOf(target))
			}
			f.Evidence = append(f.Evidence, e)
		}
		if strings.EqualFold(mode, "Off") || strings.EqualFold(mode, "Initial") && evicted > 0 && updated == "" {
			continue
		}
		// The autoscaler must have touched memory: the annotation says so,
		// or the pod's limit is below the template's.
		if updated == "" && !lower {
			continue
		}
		f.Evidence = append(f.Evidence, o.Evidence...)
		f.Summary = fmt.Sprintf("VerticalPodAutoscaler %s set the memory of %s's pods below what they use (limit %s)", orWord(vpa, subject), subject, orWord(podLimit, "cut"))
		done[strings.ToLower(subject)] = true
		out = append(out, f)
	}
	return out
}

// templateMemoryLimit is the memory limit of a workload's template: a
// Deployment read, or a resources object printed by a command that names
// the workload.
func templateMemoryLimit(ev *Gathered, subject string) string {
	for _, d := range ev.K8s.Deployments {
		if !strings.EqualFold(d.Name, subject) {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return q.String()
			}
		}
	}
	for _, c := range ev.Commands {
		if !strings.Contains(strings.ToLower(c.Command), strings.ToLower(subject)) || matchLine(vpaWordRE, c.Command) {
			continue
		}
		for _, l := range c.Lines {
			s := strings.TrimSpace(l)
			if !matchLine(jsonLimitsRE, s) {
				continue
			}
			var r corev1.ResourceRequirements
			if json.Unmarshal([]byte(s[strings.Index(s, "{"):]), &r) == nil {
				if q, ok := r.Limits[corev1.ResourceMemory]; ok {
					return q.String()
				}
			}
		}
	}
	return ""
}

// vpaObject reads a VPA's update mode and memory target from its describe
// or YAML printed in a command that names it.
func vpaObject(ev *Gathered, name string) (mode, target string) {
	for _, c := range ev.Commands {
		if !matchLine(vpaWordRE, c.Command) {
			continue
		}
		inTarget := false
		for _, l := range c.Lines {
			if m := findSubmatch(vpaModeRE, l); m != nil && mode == "" {
				mode = m[1]
			}
			if matchLine(vpaTargetRE, l) {
				inTarget = true
				continue
			}
			if inTarget {
				if m := findSubmatch(vpaMemoryRE, l); m != nil && target == "" {
					target = m[1]
					inTarget = false
				}
			}
		}
		if mode != "" {
			return mode, target
		}
	}
	return mode, target
}

// quantityBelow reports whether quantity a is clearly below b.
func quantityBelow(a, b string) bool {
	qa, err1 := resource.ParseQuantity(a)
	qb, err2 := resource.ParseQuantity(b)
	return err1 == nil && err2 == nil && qa.Value() > 0 && float64(qa.Value()) < 0.9*float64(qb.Value())
}

// mibOf is a quantity in MiB, "" when it does not parse.
func mibOf(s string) string {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return ""
	}
	return mib(q.Value())
}

func describeVPAMemoryCut(h *Hypothesis, sc Scope) string {
	s, vpa := h.Subject, h.fact("vpa")
	d := fmt.Sprintf("the VerticalPodAutoscaler %s", vpa)
	if m := h.fact("mode"); m != "" {
		d += fmt.Sprintf(" (update mode %s)", m)
	}
	d += fmt.Sprintf(" rewrote the resources of the %s pods to its recommendation", s)
	if h.fact("evicted") != "" {
		d += ", evicting them to apply it"
	}
	lim, tmpl := h.fact("pod_limit"), h.fact("template_limit")
	switch {
	case lim != "" && tmpl != "":
		d += fmt.Sprintf(", which cut their memory limit to %s (%s) from the %s the Deployment's template sets", lim, mibOf(lim), tmpl)
	case lim != "":
		d += fmt.Sprintf(", which cut their memory limit to %s (%s)", lim, mibOf(lim))
	}
	if t := h.fact("target"); t != "" {
		d += fmt.Sprintf(" (memory target %s, learned from a quieter period than the present load)", mibOf(t))
	}
	d += fmt.Sprintf("; under load the containers are OOMKilled (out of memory, exit code 137) at that limit, with no deploy of %s: the autoscaler, not the code or its template, took the memory", s)
	if n := restartsOf(h); n > 0 {
		d += fmt.Sprintf(" (%s)", plural(n, "restart", "restarts"))
	}
	return d
}

func recommendVPAMemoryCut(h *Hypothesis, sc Scope, r *recommender) {
	s, vpa := h.Subject, h.fact("vpa")
	r.add(finding.PriorityHigh, fmt.Sprintf("Set the VerticalPodAutoscaler %s to updateMode: \"Off\" (recommendations only) and restart %s so its pods get the template's resources back (%s)", vpa, s, orWord(h.fact("template_limit"), "the template's limit")))
	r.add(finding.PriorityMedium, fmt.Sprintf("Give the VPA a minAllowed memory at the working set of the busiest hours (and controlledValues: RequestsOnly so it leaves the limit alone) before turning Auto on again for %s", s))
	r.add(finding.PriorityLow, "Let a new VPA learn in Off mode over a full week of traffic before it may evict pods")
}
