package analyst

import (
	"fmt"
	"regexp"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An autoscaler whose scale target sits at 0 replicas while the service's
// pods run under another owner: the HPA controller disables itself
// ("ScalingActive False ScalingDisabled: scaling is disabled since the
// replica count of the target is zero"), so nothing scales the pods that
// serve the traffic. The common way in is a migration to Argo Rollouts
// with workloadRef (the Rollout takes the Deployment's pod template,
// scales the Deployment to 0 and runs its own ReplicaSets) while the HPA
// still names Deployment/<name>; a second controller running the same
// app under a new name does the same. The pods stay at their count while
// the load rises, saturate, and latency climbs. Read from the HPA's
// conditions (its object, kubectl describe hpa) and the running pods of
// the workload it names; the Rollout's workloadRef, when handed over,
// names who owns the pods now.

// KindHPATargetZero is an autoscaler disabled because its target is at 0
// replicas while the service's pods run elsewhere.
const KindHPATargetZero Kind = "hpa_target_zero"

var hpaTargetZero = &mechanism{
	kind:   KindHPATargetZero,
	class:  classCause,
	label:  "autoscaler disabled: its scale target has 0 replicas",
	detect: func(ev *Gathered, found []Finding) []Finding { return detectHPATargetZero(ev) },
	// The saturation and latency of the pods it does not scale.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCPUThrottling, KindSaturation, KindLatency, KindTimeout, KindHPABlind:
			return strings.EqualFold(f.Subject, h.Subject) || f.relates(h.Subject)
		}
		return false
	},
	strictTriggers: true,
	fitsChange:     changeSays(hpaTargetChangeRE),
	describe:       describeHPATargetZero,
	recommend:      recommendHPATargetZero,
}

var (
	// the HPA controller's message for a target at 0 replicas
	hpaTargetZeroRE = regexp.MustCompile(`(?i)replica count of the target is zero`)
	// a change that moves the workload to another controller or touches
	// the autoscaler
	hpaTargetChangeRE = regexp.MustCompile(`(?i)\brollouts?\b|workloadref|scaletargetref|\bhpa\b|autoscal|argo|migrat|replicas`)
	// "workloadRef:" of a Rollout in YAML, "workloadRef": in JSON
	workloadRefRE = regexp.MustCompile(`(?i)^\s*"?workloadRef"?\s*:`)
	// "kind: Deployment" / "name: web" under it
	refKindRE = regexp.MustCompile(`^\s*"?kind"?\s*:\s*"?(\w+)"?,?\s*$`)
	refNameRE = regexp.MustCompile(`^\s*"?name"?\s*:\s*"?([\w.-]+)"?,?\s*$`)
)

func detectHPATargetZero(ev *Gathered) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i := range ev.K8s.Autoscalers {
		h := &ev.K8s.Autoscalers[i]
		cond := scalingDisabled(h)
		if cond == nil {
			continue
		}
		target := h.Spec.ScaleTargetRef.Name
		kind := orWord(h.Spec.ScaleTargetRef.Kind, "Deployment")
		if target == "" || seen[h.Namespace+"/"+target] {
			continue
		}
		// The service still runs: pods of the workload the HPA names are
		// up, under another owner. With none running it is a workload
		// scaled to 0 (scaledtozero.go), not an autoscaler left behind.
		running := 0
		for j := range ev.K8s.Pods {
			p := &ev.K8s.Pods[j]
			if (h.Namespace == "" || p.Namespace == "" || p.Namespace == h.Namespace) && p.Status.Phase == corev1.PodRunning && strings.EqualFold(WorkloadOfPod(p), target) {
				running++
			}
		}
		if running == 0 {
			continue
		}
		seen[h.Namespace+"/"+target] = true
		f := Finding{Kind: KindHPATargetZero, Subject: target, Namespace: h.Namespace, Severity: SevCritical, Weight: 0.85,
			Source: SrcKubernetes, Time: cond.LastTransitionTime.Time, Object: "horizontalpodautoscaler " + h.Name}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("hpa", h.Name)
		f.setFact("target", kind+"/"+target)
		f.setFact("running", fmt.Sprint(running))
		f.setFact("min_replicas", fmt.Sprint(minReplicas(h)))
		f.setFact("max_replicas", fmt.Sprint(h.Spec.MaxReplicas))
		f.setFact("since", ts(cond.LastTransitionTime.Time))
		if owner := workloadRefOwner(ev.Commands, kind, target); owner != "" {
			f.setFact("owner", owner)
		}
		// The change that moved the pods to another owner: of the workload,
		// saying so, and not after the HPA was disabled.
		for _, c := range append(ev.Earlier[:len(ev.Earlier):len(ev.Earlier)], ev.Changes...) {
			if strings.EqualFold(c.Service, target) && matchLine(hpaTargetChangeRE, c.Description) && (cond.LastTransitionTime.IsZero() || !c.Timestamp.After(cond.LastTransitionTime.Time)) {
				f.setFact("change", fmt.Sprintf("%s (%s)", truncate(c.Description, 160), ts(c.Timestamp)))
			}
		}
		f.Summary = fmt.Sprintf("the HPA %s of %s is disabled: its target %s/%s has 0 replicas while %d pods of %s run", h.Name, target, kind, target, running, target)
		f.Evidence = []string{
			fmt.Sprintf("HorizontalPodAutoscaler %s condition ScalingActive=False since %s, reason %s: %s", h.Name, ts(cond.LastTransitionTime.Time), cond.Reason, quote(cond.Message, 200)),
			fmt.Sprintf("HorizontalPodAutoscaler %s targets %s/%s (min %d, max %d replicas), current replicas %d; %d pods of %s are Running", h.Name, kind, target, minReplicas(h), h.Spec.MaxReplicas, h.Status.CurrentReplicas, running, target),
		}
		if o := f.Facts["owner"]; o != "" {
			f.Evidence = append(f.Evidence, o+" owns the pods now")
		}
		if c := f.Facts["change"]; c != "" {
			f.Evidence = append(f.Evidence, "the change that moved the pods: "+c)
		}
		out = append(out, f)
	}
	return out
}

// scalingDisabled returns an HPA's ScalingActive condition when it is
// False because the target has 0 replicas.
func scalingDisabled(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range h.Status.Conditions {
		c := &h.Status.Conditions[i]
		if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse && (c.Reason == "ScalingDisabled" || matchLine(hpaTargetZeroRE, c.Message)) {
			return c
		}
	}
	return nil
}

func minReplicas(h *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if h.Spec.MinReplicas != nil {
		return *h.Spec.MinReplicas
	}
	return 1
}

// workloadRefOwner names the Argo Rollout whose workloadRef points at the
// workload, from a Rollout's manifest handed over in a command's output
// (kubectl get rollout -o yaml|json).
func workloadRefOwner(cmds []evidence.CommandOutput, kind, name string) string {
	for _, c := range cmds {
		if !strings.Contains(strings.ToLower(c.Command), "rollout") {
			continue
		}
		for i, l := range c.Lines {
			if !matchLine(workloadRefRE, l) {
				continue
			}
			k, n := "", ""
			for _, x := range c.Lines[i+1 : min(len(c.Lines), i+6)] {
				if m := findSubmatch(refKindRE, x); m != nil {
					k = m[1]
				}
				if m := findSubmatch(refNameRE, x); m != nil {
					n = m[1]
				}
			}
			if strings.EqualFold(n, name) && (k == "" || strings.EqualFold(k, kind)) {
				return fmt.Sprintf("an Argo Rollout that references %s/%s through workloadRef (it runs the pods itself and scales the %s to 0)", kind, name, kind)
			}
		}
	}
	return ""
}

func describeHPATargetZero(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("the HorizontalPodAutoscaler %s no longer scales %s: it targets %s, which has 0 replicas, so the HPA controller disabled it (ScalingActive=False, ScalingDisabled: the replica count of the target is zero, since %s)",
		orWord(h.fact("hpa"), h.Subject), h.Subject, orWord(h.fact("target"), "its scale target"), orWord(h.fact("since"), "its condition changed"))
	if o := h.fact("owner"); o != "" {
		d += "; the pods that serve the traffic belong to " + o
	} else {
		d += "; the pods that serve the traffic belong to another owner"
	}
	d += fmt.Sprintf(", and stay at %s replicas whatever the load (the HPA would allow up to %s)", orWord(h.fact("running"), "their"), orWord(h.fact("max_replicas"), "more"))
	if c := h.fact("change"); c != "" {
		d += "; it began with " + c
	}
	for _, f := range h.Support {
		if f.Kind == KindCPUThrottling || f.Kind == KindSaturation {
			d += "; the pods are saturated (" + truncate(f.Summary, 120) + ")"
			break
		}
	}
	if hasKind(h.Support, KindLatency) {
		d += ", so requests queue and latency rises"
	}
	return d
}

func recommendHPATargetZero(h *Hypothesis, sc Scope, r *recommender) {
	if h.fact("owner") != "" {
		r.high("Point the HPA %s at the Rollout: scaleTargetRef apiVersion argoproj.io/v1alpha1, kind Rollout, name %s (the Rollout has a scale subresource); scale the Rollout out by hand until then", orWord(h.fact("hpa"), h.Subject), h.Subject)
	} else {
		r.high("Point the HPA %s at the workload that runs the pods of %s (its scaleTargetRef), and scale that workload out by hand until then", orWord(h.fact("hpa"), h.Subject), h.Subject)
	}
	r.med("When a workload moves to another controller (Argo Rollouts workloadRef, a renamed Deployment), move its HPA's scaleTargetRef in the same change")
	r.low("Alert on an HPA whose ScalingActive condition is False (kube_horizontalpodautoscaler_status_condition{condition=\"ScalingActive\",status=\"false\"})")
}
