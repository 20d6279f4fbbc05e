package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/tools"
)

// An autoscaler pinned at its maxReplicas: the service cannot add capacity
// while its load keeps rising, so its pods saturate and requests queue.
// It is found in the kube-state-metrics series (DetectHPA, capacity.go)
// and in the HPA objects a pod's description relates to its workload
// (describe_pod): current replicas at maxReplicas, or a ScalingLimited
// condition capping the desired count at the maximum.
var hpaMax = &mechanism{
	kind:  KindHPAMax,
	class: classCause,
	label: "autoscaler at maximum replicas (capacity)",
	event: func(e *corev1.Event) (float64, bool) {
		if e.Reason == "ScalingLimited" {
			return 0.7, true
		}
		msg := strings.ToLower(e.Message)
		switch e.Reason {
		case "Killing", "Failed", "BackOff", "FailedCreate":
			return 0, false // a container's or controller's event, never the autoscaler's
		}
		return 0.7, e.Type == corev1.EventTypeWarning && (strings.Contains(msg, "maximum replica count") || strings.Contains(msg, "max replicas"))
	},
	detect: func(ev *Gathered, found []Finding) []Finding {
		return detectHPAObjects(ev.K8s.Autoscalers, ev.K8s.Events, ev.Window, found)
	},
	describe: func(h *Hypothesis, sc Scope) string { return describeHPA(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.high("Add capacity to %s now: raise maxReplicas of its HPA (currently %s) and check the nodes can fit the extra pods; raise its CPU limit if the pods are throttled", s, orWord(h.fact("max_replicas"), "its current value"))
		r.med("Find what drives the load on %s (a traffic surge, a retry storm, a client change) and shed or rate-limit it if it is abnormal", s)
		r.low("Alert when an autoscaler sits at maxReplicas (ScalingLimited) and capacity-plan maxReplicas against peak traffic")
	},
}

func describeHPA(h *Hypothesis) string {
	s := h.Subject
	d := fmt.Sprintf("capacity: the HPA of %s is at its maximum of %s replicas (maxReplicas", s, orWord(h.fact("max_replicas"), "its"))
	if h.fact("scaling_limited") != "" {
		d += ", ScalingLimited"
	}
	d += ") and cannot add more"
	if lf := h.fact("load_factor"); lf != "" {
		d += fmt.Sprintf(" while the load rose ~%s", lf)
	} else if m := h.fact("message"); m != "" {
		d += ": " + truncate(m, 160)
	}
	if from := h.fact("from_replicas"); from != "" && from != h.fact("max_replicas") {
		d += fmt.Sprintf(" (it scaled from %s to %s replicas)", from, h.fact("max_replicas"))
	}
	saturated := false
	for _, f := range h.Support {
		if f.Kind == KindCPUThrottling || f.Kind == KindSaturation && strings.Contains(strings.ToLower(f.fact("metric")), "cpu") {
			d += "; the pods are CPU-saturated"
			if lim := f.fact("cpu_limit"); lim != "" {
				d += fmt.Sprintf(" (throttled at their cpu limit of %s)", lim)
			}
			saturated = true
			break
		}
	}
	if m := h.fact("hpa_metrics"); m != "" && !saturated {
		d += "; its metrics are above target (" + m + ")"
	}
	if hasKind(h.Support, KindLatency) {
		d += ", so requests queue and latency rises"
	}
	return d
}

// autoscalersOf reads the HPAs a describe_pod result relates to the pod's
// workload (the result itself, or its JSON from a remote tool server).
func autoscalersOf(out any) []autoscalingv2.HorizontalPodAutoscaler {
	var hs []autoscalingv2.HorizontalPodAutoscaler
	if d, ok := out.(tools.PodDescription); ok {
		for _, r := range d.Related {
			if h, ok := r.Object.(*autoscalingv2.HorizontalPodAutoscaler); ok && r.Relation == "autoscaler" && r.Status == tools.RelFound {
				hs = append(hs, *h)
			}
		}
		return hs
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	var d struct {
		Related []struct {
			Relation, Status string
			Object           json.RawMessage
		}
	}
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	for _, r := range d.Related {
		var h autoscalingv2.HorizontalPodAutoscaler
		if r.Relation == "autoscaler" && r.Status == tools.RelFound && json.Unmarshal(r.Object, &h) == nil && h.Name != "" {
			hs = append(hs, h)
		}
	}
	return hs
}

var newSizeRE = regexp.MustCompile(`New size: (\d+)`)
var scaledFromRE = regexp.MustCompile(`to (\d+) from (\d+)`)

// detectHPAObjects finds autoscalers at their maxReplicas in the HPA
// objects themselves. The rescale events date it: an HPA that scaled up to
// its maximum in the window is what changed; one at its maximum with no
// rescale in the window is a standing limit and weighs less. An HPA the
// metrics already showed at its maximum is not found twice.
func detectHPAObjects(hpas []autoscalingv2.HorizontalPodAutoscaler, events []corev1.Event, w Window, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, f := range found {
		if f.Kind == KindHPAMax {
			seen[f.Object] = true
		}
	}
	for i := range hpas {
		h := &hpas[i]
		obj := "hpa " + h.Namespace + "/" + h.Name
		max := h.Spec.MaxReplicas
		var limited *autoscalingv2.HorizontalPodAutoscalerCondition
		for j, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.ScalingLimited && c.Status == corev1.ConditionTrue && c.Reason != "TooFewReplicas" && !strings.Contains(strings.ToLower(c.Message), "minimum") {
				limited = &h.Status.Conditions[j]
			}
		}
		if seen[obj] || max <= 0 || h.Status.CurrentReplicas < max && (limited == nil || h.Status.DesiredReplicas < max) {
			continue
		}
		seen[obj] = true
		target := h.Spec.ScaleTargetRef
		subject := h.Name
		if target.Name != "" {
			subject = target.Name
		}
		// Rescales in the window: when scaling began and when it reached
		// the maximum; the target's "Scaled up ... to N from M" says from
		// where.
		var onset, reached time.Time
		from := ""
		for k := range events {
			e := &events[k]
			io := e.InvolvedObject
			first, last := eventTime(e)
			if !w.recent(last) || !w.End.IsZero() && first.After(w.End) {
				continue
			}
			switch {
			case io.Kind == "HorizontalPodAutoscaler" && io.Name == h.Name && e.Reason == "SuccessfulRescale":
				if onset.IsZero() || first.Before(onset) {
					onset = first
				}
				if m := newSizeRE.FindStringSubmatch(e.Message); m != nil && m[1] == strconv.Itoa(int(max)) && (reached.IsZero() || last.Before(reached)) {
					reached = last
				}
			case strings.EqualFold(io.Kind, target.Kind) && io.Name == target.Name && e.Reason == "ScalingReplicaSet":
				if m := scaledFromRE.FindStringSubmatch(e.Message); m != nil && (onset.IsZero() || !first.After(onset)) {
					onset, from = first, m[2]
				}
			}
		}
		f := Finding{Kind: KindHPAMax, Subject: subject, Object: obj, Namespace: h.Namespace, Time: onset,
			Severity: SevCritical, Weight: 0.92, Source: SrcKubernetes}
		if onset.IsZero() {
			// At its maximum with no rescale in the window: a standing
			// limit, not what changed.
			f.Weight, f.Severity = 0.6, SevWarning
			if limited != nil && !limited.LastTransitionTime.IsZero() {
				f.Time = limited.LastTransitionTime.Time
			} else {
				f.Time = w.Start
			}
		}
		metrics := hpaMetrics(h)
		e := fmt.Sprintf("HPA %s/%s: %d current / %d desired replicas, maxReplicas %d", h.Namespace, h.Name, h.Status.CurrentReplicas, h.Status.DesiredReplicas, max)
		if h.Spec.MinReplicas != nil {
			e += fmt.Sprintf(" (min %d)", *h.Spec.MinReplicas)
		}
		if metrics != "" {
			e += "; metrics " + metrics
		}
		f.Evidence = append(f.Evidence, e)
		if limited != nil {
			f.Evidence = append(f.Evidence, fmt.Sprintf("HPA %s/%s condition ScalingLimited=True (%s): %s", h.Namespace, h.Name, limited.Reason, limited.Message))
			f.setFact("scaling_limited", "true")
		}
		f.Summary = fmt.Sprintf("HPA %s at its maximum of %d replicas", h.Name, max)
		if !reached.IsZero() {
			f.Summary += " since " + hm(reached)
			f.setFact("reached_max", ts(reached))
		}
		f.setFact("max_replicas", strconv.Itoa(int(max)))
		if from != "" {
			f.setFact("from_replicas", from)
		}
		if metrics != "" {
			f.setFact("hpa_metrics", metrics)
		}
		out = append(out, f)
	}
	return out
}

// hpaMetrics renders an HPA's metrics that are above their target as
// "cpu 186% of request, target 70%".
func hpaMetrics(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var parts []string
	for _, m := range h.Spec.Metrics {
		if m.Resource == nil || m.Resource.Target.AverageUtilization == nil {
			continue
		}
		for _, c := range h.Status.CurrentMetrics {
			if c.Resource != nil && c.Resource.Name == m.Resource.Name && c.Resource.Current.AverageUtilization != nil &&
				*c.Resource.Current.AverageUtilization > *m.Resource.Target.AverageUtilization {
				parts = append(parts, fmt.Sprintf("%s %d%% of request, target %d%%", m.Resource.Name, *c.Resource.Current.AverageUtilization, *m.Resource.Target.AverageUtilization))
			}
		}
	}
	return strings.Join(parts, ", ")
}
