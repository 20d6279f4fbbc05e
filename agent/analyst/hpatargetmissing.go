package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// An autoscaler whose scale target does not exist: the HPA controller
// cannot read the target's scale ("AbleToScale False FailedGetScale: the
// HPA controller was unable to get the target's current scale:
// deployments/scale.apps "web" not found"), so it scales nothing. The
// common way in is a rename of the workload (a chart that now names it
// <release>-server, a fullnameOverride removed) while the autoscaler,
// managed apart, still names the old one. The pods of the renamed workload
// stay at their count while the load rises, saturate, and latency climbs.
// Read from the HPA's conditions (its object, kubectl describe hpa) or its
// FailedGetScale events, and the workload of the namespace that now
// carries the target's name (a name beginning with it, or its name label).

// KindHPATargetMissing is an autoscaler whose scale target is not found.
const KindHPATargetMissing Kind = "hpa_target_missing"

var hpaTargetMissing = &mechanism{
	kind:   KindHPATargetMissing,
	class:  classCause,
	label:  "autoscaler's scale target not found (does not scale)",
	detect: func(ev *Gathered, found []Finding) []Finding { return detectHPATargetMissing(ev) },
	// The saturation and latency of the pods it does not scale.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCPUThrottling, KindSaturation, KindLatency, KindTimeout, KindHPABlind, KindLocalized:
			return strings.EqualFold(f.Subject, h.Subject) || f.relates(h.Subject) || h.fact("now") != "" && strings.EqualFold(f.Subject, h.fact("now"))
		}
		return false
	},
	strictTriggers: true,
	fitsChange:     changeSays(hpaRenameChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the HorizontalPodAutoscaler %s cannot scale %s: its scale target %s does not exist (FailedGetScale: %s)",
			orWord(h.fact("hpa"), h.Subject), h.Subject, orWord(h.fact("target"), "its scaleTargetRef"), quote(h.fact("message"), 160))
		if n := h.fact("now"); n != "" {
			d += fmt.Sprintf("; the pods of %s run as %s now (the workload was renamed), which no autoscaler scales", h.Subject, n)
		}
		d += ", so the replicas stay where they are whatever the load"
		if c := h.fact("change"); c != "" && h.Trigger == nil {
			d += "; the rename came with " + c
		}
		for _, f := range h.Support {
			if f.Kind == KindCPUThrottling || f.Kind == KindSaturation {
				d += "; the pods are saturated"
				break
			}
		}
		if hasKind(h.Support, KindLatency) {
			d += ", so requests queue and latency rises"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if n := h.fact("now"); n != "" {
			r.high("Point the HPA %s at the workload that runs the pods now: scaleTargetRef name %s; scale %s out by hand until then (kubectl scale deployment %s --replicas=N)", orWord(h.fact("hpa"), h.Subject), n, n, n)
		} else {
			r.high("Point the HPA %s at a workload that exists (its scaleTargetRef), and scale the pods of %s out by hand until then", orWord(h.fact("hpa"), h.Subject), h.Subject)
		}
		r.med("Ship the autoscaler with the workload (the same chart or application), so a rename moves its scaleTargetRef too")
		r.low("Alert on an HPA whose AbleToScale condition is False (kube_horizontalpodautoscaler_status_condition{condition=\"AbleToScale\",status=\"false\"})")
	},
}

var (
	// deployments/scale.apps "web" not found, statefulsets.apps "db" not found
	scaleNotFoundRE = regexp.MustCompile(`(?i)\b(deployments|statefulsets|replicasets|rollouts|replicationcontrollers)(?:/scale)?(?:\.[\w.]+)? "([\w.-]+)" not found`)
	// a change that renames a workload
	hpaRenameChangeRE = regexp.MustCompile(`(?i)renam|fullnameoverride|nameoverride|now named|workloads? named|scaletargetref|\bhpa\b|autoscal`)
)

func detectHPATargetMissing(ev *Gathered) []Finding {
	type miss struct {
		ns, hpa, kind, target, msg string
		f                          Finding
		events                     int32 // the most repeated event's count
	}
	var list []*miss
	byKey := map[string]*miss{}
	add := func(ns, hpa, msg string) *miss {
		m := findSubmatch(scaleNotFoundRE, msg)
		if m == nil {
			return nil
		}
		key := ns + "/" + m[2]
		if x := byKey[key]; x != nil {
			return x
		}
		x := &miss{ns: ns, hpa: hpa, kind: scaleKind(m[1]), target: m[2], msg: msg}
		byKey[key] = x
		list = append(list, x)
		return x
	}
	for i := range ev.K8s.Autoscalers {
		h := &ev.K8s.Autoscalers[i]
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.AbleToScale && c.Status == corev1.ConditionFalse && c.Reason == "FailedGetScale" {
				if x := add(h.Namespace, h.Name, c.Message); x != nil {
					x.f.Time = c.LastTransitionTime.Time
					x.f.Evidence = append(x.f.Evidence, fmt.Sprintf("HorizontalPodAutoscaler %s/%s condition AbleToScale=False, reason FailedGetScale: %s", h.Namespace, h.Name, quote(c.Message, 200)))
				}
			}
		}
	}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.Reason != "FailedGetScale" || !strings.EqualFold(e.InvolvedObject.Kind, "HorizontalPodAutoscaler") {
			continue
		}
		if x := add(orWord(e.InvolvedObject.Namespace, e.Namespace), e.InvolvedObject.Name, e.Message); x != nil {
			first, last := eventTime(e)
			x.f.Time = earliest(x.f.Time, first)
			// One event line (the same event listed by describe and by
			// get events): the most repeated.
			if max(e.Count, 1) <= x.events {
				continue
			}
			x.events = max(e.Count, 1)
			x.f.Evidence = slices.DeleteFunc(x.f.Evidence, func(s string) bool { return strings.HasPrefix(s, "event FailedGetScale") })
			x.f.Evidence = append(x.f.Evidence, fmt.Sprintf("event FailedGetScale on horizontalpodautoscaler %s: %s (%d times, first %s, last %s)", e.InvolvedObject.Name, quote(e.Message, 160), max(e.Count, 1), ts(first), ts(last)))
		}
	}
	var out []Finding
	for _, x := range list {
		// The target is really gone: no workload of that name is shown.
		exists := false
		var now string
		for i := range ev.K8s.Deployments {
			d := &ev.K8s.Deployments[i]
			if x.ns != "" && d.Namespace != "" && d.Namespace != x.ns {
				continue
			}
			if d.Name == x.target {
				exists = true
			}
			if now == "" && d.Name != x.target && (strings.HasPrefix(d.Name, x.target+"-") || d.Labels["app.kubernetes.io/name"] == x.target && d.Labels["app.kubernetes.io/instance"] == x.target) {
				now = d.Name
			}
		}
		if exists {
			continue
		}
		f := x.f
		f.Kind, f.Subject, f.Namespace, f.Severity, f.Weight, f.Source = KindHPATargetMissing, x.target, x.ns, SevCritical, 0.85, SrcKubernetes
		f.Object = "horizontalpodautoscaler " + x.hpa
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("hpa", x.hpa)
		f.setFact("target", x.kind+"/"+x.target)
		if m := findString(scaleNotFoundRE, x.msg); m != "" {
			f.setFact("message", m)
		}
		if now != "" {
			f.setFact("now", now)
			f.Related = append(f.Related, now)
			f.Evidence = append(f.Evidence, fmt.Sprintf("no %s %s in namespace %s; %s %s carries its name now", x.kind, x.target, x.ns, x.kind, now))
		}
		for _, c := range append(ev.Earlier[:len(ev.Earlier):len(ev.Earlier)], ev.Changes...) {
			if strings.EqualFold(c.Service, x.target) && matchLine(hpaRenameChangeRE, c.Description) {
				f.setFact("change", fmt.Sprintf("the %s of %s at %s: %s", orWord(c.Kind, "change"), c.Service, ts(c.Timestamp), quote(c.Description, 200)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(c.Description, 200)))
			}
		}
		f.Summary = fmt.Sprintf("the HPA %s cannot scale: its target %s/%s is not found", x.hpa, x.kind, x.target)
		out = append(out, f)
	}
	return out
}

// scaleKind is the kind of a resource's plural ("deployments": Deployment).
func scaleKind(plural string) string {
	switch strings.ToLower(plural) {
	case "statefulsets":
		return "StatefulSet"
	case "replicasets":
		return "ReplicaSet"
	case "rollouts":
		return "Rollout"
	case "replicationcontrollers":
		return "ReplicationController"
	}
	return "Deployment"
}
