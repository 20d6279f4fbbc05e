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

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
)

// An autoscaler pinned at its maxReplicas: the service cannot add capacity
// while its load keeps rising, so its pods saturate and requests queue.
// It is found in the kube-state-metrics series (DetectHPA, below)
// and in the HPA objects a pod's description relates to its workload
// (describe_pod): current replicas at maxReplicas, or a ScalingLimited
// condition capping the desired count at the maximum.
var hpaMax = &mechanism{
	kind:    KindHPAMax,
	class:   classCause,
	label:   "autoscaler at maximum replicas (capacity)",
	metrics: DetectHPA,
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
	// With the service's load measured rising (a load surge among its
	// support), what ran it to its maximum is that load: a change is its
	// trigger only when it changes the capacity (replicas, the autoscaler,
	// CPU requests and limits) or names the load; any other change near
	// it is a coincidence.
	strictFor: func(h *Hypothesis) bool { return supportOf(h, KindLoadSurge) != nil },
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(podCapacityChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string { return describeHPA(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.high("Add capacity to %s now: raise maxReplicas of its HPA (currently %s) and check the nodes can fit the extra pods; raise its CPU limit if the pods are throttled", s, orWord(h.fact("max_replicas"), "its current value"))
		r.med("Find what drives the load on %s (a traffic surge, a retry storm, a client change) and shed or rate-limit it if it is abnormal", s)
		r.low("Alert when an autoscaler sits at maxReplicas (ScalingLimited) and capacity-plan maxReplicas against peak traffic")
	},
}

// podCapacityChangeRE is a change of a service's capacity: its replicas, its
// autoscaler, its CPU requests or limits.
var podCapacityChangeRE = regexp.MustCompile(`(?i)\breplicas?\b|maxreplicas|minreplicas|\bhpa\b|autoscal|scaledobject|resources\.|\b(?:requests|limits)\.cpu\b|\bcpu (?:request|limit)|averageutilization|target(?:cpu|utilization)`)

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
				if m := findSubmatch(newSizeRE, e.Message); m != nil && m[1] == strconv.Itoa(int(max)) && (reached.IsZero() || last.Before(reached)) {
					reached = last
				}
			case strings.EqualFold(io.Kind, target.Kind) && io.Name == target.Name && e.Reason == "ScalingReplicaSet":
				if m := findSubmatch(scaledFromRE, e.Message); m != nil && (onset.IsZero() || !first.After(onset)) {
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

// isHPAMetric reports whether a metric is a kube-state-metrics autoscaler
// series the HPA detector reads.
func isHPAMetric(n string) bool {
	n = strings.ToLower(n)
	if !strings.HasPrefix(n, "kube_horizontalpodautoscaler_") && !strings.HasPrefix(n, "kube_hpa_") {
		return false
	}
	return strings.Contains(n, "current_replicas") || strings.Contains(n, "max_replicas") || strings.Contains(n, "status_condition") || strings.Contains(n, "desired_replicas")
}

// hpaName is the autoscaler a series is about.
func hpaName(l evidence.Labels) string {
	for _, k := range []string{"horizontalpodautoscaler", "hpa", "scaletargetref_name"} {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

// hpaSubject is what an autoscaler named name scales: KEDA names the HPA
// it makes for a ScaledObject keda-hpa-<ScaledObject>, and the
// ScaledObject is named after the workload it scales.
func hpaSubject(name string) string {
	if so, ok := strings.CutPrefix(name, "keda-hpa-"); ok && so != "" {
		return so
	}
	return name
}

// DetectHPA finds autoscalers whose current replicas reached their
// maxReplicas (kube_horizontalpodautoscaler_* series) and are still there
// at the end of the window: the service cannot add capacity. The demand
// (request rate of the same service) is measured against the baseline.
func DetectHPA(sets []MetricSet, w Window) []Finding {
	type hpa struct {
		ns, name string
		current  []evidence.Point
		max      float64
		limited  []evidence.Point
	}
	by := map[string]*hpa{}
	var order []string
	get := func(l evidence.Labels) *hpa {
		name := hpaName(l)
		if name == "" {
			return nil
		}
		k := l["namespace"] + "/" + name
		h := by[k]
		if h == nil {
			h = &hpa{ns: l["namespace"], name: name}
			by[k] = h
			order = append(order, k)
		}
		return h
	}
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		if !isHPAMetric(n) {
			continue
		}
		for _, s := range ms.Series {
			h := get(s.Labels)
			if h == nil {
				continue
			}
			pts := inWindow(s.Points, w.BaselineStart, w.End)
			switch {
			case strings.Contains(n, "current_replicas"):
				h.current = pts
			case strings.Contains(n, "max_replicas"):
				if p, ok := lastPoint(pts); ok {
					h.max = p.V
				}
			case strings.Contains(n, "status_condition"):
				if strings.EqualFold(s.Labels["condition"], "ScalingLimited") && strings.EqualFold(s.Labels["status"], "true") {
					h.limited = pts
				}
			}
		}
	}
	var out []Finding
	for _, k := range order {
		h := by[k]
		last, ok := lastPoint(h.current)
		if !ok || h.max <= 0 || last.V < h.max {
			continue
		}
		// When it reached the maximum (and stayed), and when scaling began.
		reached := last.T
		for i := len(h.current) - 1; i >= 0 && h.current[i].V >= h.max; i-- {
			reached = h.current[i].T
		}
		first := h.current[0]
		onset := reached
		for _, p := range h.current {
			if p.V > first.V {
				onset = p.T
				break
			}
		}
		f := Finding{Kind: KindHPAMax, Subject: hpaSubject(h.name), Object: "hpa " + h.ns + "/" + h.name, Namespace: h.ns, Time: onset,
			Severity: SevCritical, Weight: 0.92, Source: SrcMetrics}
		if first.V >= h.max {
			// At its maximum all along: a standing limit, not what changed.
			f.Weight, f.Severity = 0.6, SevWarning
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("HPA %s/%s: current replicas %.0f = maxReplicas %.0f since %s (from %.0f replicas at %s; kube_horizontalpodautoscaler_status_current_replicas)",
			h.ns, h.name, last.V, h.max, ts(reached), first.V, ts(first.T)))
		for _, p := range h.limited {
			if p.V >= 1 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("HPA %s/%s condition ScalingLimited=True since %s: the desired replica count is capped at maxReplicas", h.ns, h.name, ts(p.T)))
				f.setFact("scaling_limited", "true")
				break
			}
		}
		f.Summary = fmt.Sprintf("HPA %s at its maximum of %.0f replicas since %s (from %.0f)", h.name, h.max, hm(reached), first.V)
		f.setFact("max_replicas", fmt.Sprintf("%.0f", h.max))
		f.setFact("from_replicas", fmt.Sprintf("%.0f", first.V))
		f.setFact("reached_max", ts(reached))
		if before, peak, name, ok := demandOf(sets, hpaSubject(h.name), w); ok && before > 0 && peak >= 1.5*before {
			f.setFact("load_factor", fmt.Sprintf("%.0f×", peak/before))
			f.Evidence = append(f.Evidence, fmt.Sprintf("request rate of %s (%s) rose ~%.0f× from %s to %s", h.name, name, peak/before, formatValue(before, "/s"), formatValue(peak, "/s")))
		}
		out = append(out, f)
	}
	return out
}

// demandOf is the request rate of a service: the baseline median and the
// incident peak of the sum of its request series.
func demandOf(sets []MetricSet, subject string, w Window) (before, peak float64, name string, ok bool) {
	for _, ms := range sets {
		if ms.Class != MetricRequests {
			continue
		}
		sum := map[time.Time]float64{}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			for _, p := range s.Points {
				sum[p.T] += p.V
			}
		}
		if len(sum) == 0 {
			continue
		}
		var base []float64
		for t, v := range sum {
			if t.Before(w.Start) {
				base = append(base, v)
			} else if v > peak {
				peak = v
			}
		}
		if len(base) == 0 {
			continue
		}
		return analysis.Median(base), peak, ms.Name, true
	}
	return 0, 0, "", false
}
