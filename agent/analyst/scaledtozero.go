package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// A Deployment scaled to 0 replicas: no pod runs, so its Service has no
// endpoints and its callers get connection refused or 502/503. Found in a
// Deployment whose spec.replicas is 0 while a Service still selects its
// pods, dated by the deployment controller's "Scaled down replica set …
// from N to 0" event (which alone is every rollout's old ReplicaSet
// going away). A values refactor, an autoscaler's bounds or a manual
// scale set it.
var scaledToZero = &mechanism{
	kind:       KindScaledToZero,
	class:      classCause,
	label:      "deployment scaled to 0 replicas",
	objects:    func(ev *K8sEvidence, w Window) []Finding { return detectScaledToZero(ev) },
	fitsChange: changeSays(scaleChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is scaled to 0 replicas (spec.replicas: 0)", h.Subject)
		if from := h.fact("from_replicas"); from != "" {
			d += fmt.Sprintf(", down from %s", from)
		}
		d += ": no pod runs, so its Service has no endpoints"
		if hasKind(h.Support, KindConnRefused) || hasKind(h.Support, KindErrorRate) {
			d += " and its callers' requests fail (connection refused)"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		n := orWord(h.fact("from_replicas"), "its usual count")
		r.high("Scale %s back up now: kubectl scale deployment/%s --replicas=%s", h.Subject, h.Subject, n)
		if c := h.Trigger; c != nil {
			r.high("Fix the change that set its replicas to 0 (%s) so the next sync does not scale it down again", truncate(orWord(c.fact("description"), c.Summary), 160))
		} else {
			r.med("Find what set spec.replicas of %s to 0 (Helm values, a GitOps sync, an autoscaler's minReplicas, a manual kubectl scale) and fix it at the source", h.Subject)
		}
		r.low("Alert when a Deployment that a Service selects has 0 available replicas")
	},
}

var (
	scaledToZeroRE = regexp.MustCompile(`(?i)scaled down replica set \S+ (?:from (\d+) )?to 0\b`)
	scaleChangeRE  = regexp.MustCompile(`(?i)replica|scale|autoscal|\bhpa\b|values`)
)

// detectScaledToZero finds Deployments whose spec asks for 0 replicas
// while a Service still selects their pods: what the Service routes to
// does not run.
func detectScaledToZero(ev *K8sEvidence) []Finding {
	var out []Finding
	for i := range ev.Deployments {
		d := &ev.Deployments[i]
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 || d.Status.Replicas != 0 {
			continue
		}
		tmpl := labels.Set(d.Spec.Template.Labels)
		var svcs []string
		for _, s := range ev.Services {
			sel := s.Service.Spec.Selector
			if s.Service.Namespace == d.Namespace && len(sel) > 0 && labels.SelectorFromSet(sel).Matches(tmpl) {
				svcs = append(svcs, s.Service.Name)
			}
		}
		if len(svcs) == 0 {
			continue // scaled down on purpose, nothing routes to it
		}
		obj := "deployment " + d.Namespace + "/" + d.Name
		f := Finding{Kind: KindScaledToZero, Subject: d.Name, Object: obj, Namespace: d.Namespace, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.8, Related: svcs}
		f.Summary = fmt.Sprintf("%s is scaled to 0 replicas while service %s selects its pods", obj, strings.Join(svcs, ", "))
		f.Evidence = []string{fmt.Sprintf("%s has spec.replicas 0 and no pods; service %s selects its pod labels", obj, strings.Join(svcs, ", "))}
		for j := range ev.Events {
			e := &ev.Events[j]
			io := e.InvolvedObject
			m := findSubmatch(scaledToZeroRE, e.Message)
			if m == nil || e.Reason != "ScalingReplicaSet" || io.Kind != "Deployment" || io.Name != d.Name || io.Namespace != d.Namespace {
				continue
			}
			first, last := eventTime(e)
			if f.Time.IsZero() || last.After(f.Time) {
				f.Time = first
				f.setFact("from_replicas", m[1])
			}
			f.Weight = 0.9
			f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on %s: %s (%s)", e.Reason, obj, quote(e.Message, 200), ts(first)))
		}
		if f.Time.IsZero() {
			for _, c := range d.Status.Conditions {
				f.Time = earliest(f.Time, c.LastUpdateTime.Time)
			}
		}
		out = append(out, f)
	}
	return out
}
