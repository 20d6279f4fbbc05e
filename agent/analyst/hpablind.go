package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A HorizontalPodAutoscaler that cannot compute its metric does not scale
// at all: a container without a CPU request (a sidecar added without
// resources) makes CPU utilization undefined, a metrics adapter that does
// not answer leaves it blind. The workload stays at its replicas while
// the load rises, its pods saturate and its latency climbs; the
// autoscaler's own events (FailedGetResourceMetric,
// FailedComputeMetricsReplicas) say why, and the change that added the
// container is when it began.

// KindHPABlind is an autoscaler that cannot compute its metric.
const KindHPABlind Kind = "hpa_blind"

var hpaBlind = &mechanism{
	kind:  KindHPABlind,
	class: classCause,
	label: "autoscaler cannot compute its metric (does not scale)",
	event: func(e *corev1.Event) (float64, bool) {
		switch e.Reason {
		case "FailedGetResourceMetric", "FailedComputeMetricsReplicas", "FailedGetPodsMetric", "FailedGetObjectMetric",
			"FailedGetExternalMetric", "FailedGetContainerResourceMetric":
		default:
			return 0, false
		}
		// A container without a request is a defect of the spec: the
		// metric stays undefined until it changes. Other failures (no
		// metrics yet for new pods, a metrics server restarting) pass
		// within minutes and count only when they last.
		if matchLine(hpaMissingRE, e.Message) {
			return 0.85, true
		}
		first, last := eventTime(e)
		return 0.6, e.Count >= 20 && last.Sub(first) >= 30*time.Minute
	},
	eventCritical: true,
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if f := &found[i]; f.Kind == KindHPABlind {
				metricRenamed(ev, f)
			}
		}
		return nil
	},
	eventTarget: func(e *corev1.Event, t *eventTarget) {
		// The autoscaler is named after the workload it scales, as a rule;
		// its pods' names in the message say which workload when not.
		if m := findSubmatch(hpaPodRE, e.Message); m != nil {
			t.Subject = workloadOfName(m[2])
		}
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		if m := findSubmatch(hpaPodRE, e.Message); m != nil {
			f.setFact("container", m[1])
			f.setFact("pod", m[2])
		}
		if m := findSubmatch(hpaMissingRE, e.Message); m != nil {
			f.setFact("resource", strings.ToLower(m[1]))
		}
		f.setFact("hpa", e.InvolvedObject.Name)
	},
	// The saturation and latency of the workload it does not scale.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCPUThrottling, KindSaturation, KindLatency, KindTimeout:
			return strings.EqualFold(f.Subject, h.Subject) || f.relates(h.Subject)
		}
		return false
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return c.Subject == h.Subject && (strings.Contains(t, "sidecar") || strings.Contains(t, "container") || strings.Contains(t, "request") || strings.Contains(t, "resources") || c.Kind == KindDeploy || c.Kind == KindConfigChange)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the HorizontalPodAutoscaler %s cannot compute its metric, so it does not scale %s out", orWord(h.fact("hpa"), h.Subject), h.Subject)
		if c := h.fact("container"); c != "" {
			d += fmt.Sprintf(": the container %s has no %s request, so %s utilization is undefined", c, orWord(h.fact("resource"), "resource"), orWord(h.fact("resource"), "resource"))
		}
		if m := h.fact("message"); m != "" {
			d += " (" + quote(m, 200) + ")"
		}
		if src := h.fact("source_metric"); src != "" {
			d += fmt.Sprintf(": the series it is computed from, %s, stopped for %s at %s and %s began then — the metric was renamed", src, h.Subject, h.fact("source_stopped"), h.fact("successor"))
			d += h.clause(", with ", "renamed_by")
		} else if mc := h.fact("metrics_change"); mc != "" {
			d += fmt.Sprintf(". What changed before it is how %s exports its metrics: %s; the series the adapter computes %s from is most likely no longer exported under the name its rule expects (renamed or dropped)", h.Subject, mc, orWord(h.fact("metric"), "the metric"))
		}
		d += "; the replicas stay where they are while the load rises, and the pods saturate"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if src, to := h.fact("source_metric"), h.fact("successor"); src != "" {
			r.high("Point the metrics adapter's rule for %s at the new name %s (or have %s export %s again), then check that the HPA's ScalingActive condition is True; scale %s out by hand until then", orWord(h.fact("metric"), "the metric"), to, h.Subject, src, h.Subject)
		} else if mc := h.fact("metrics_change"); mc != "" {
			r.high("Compare the metric names %s exports now (its /metrics) with the series the adapter's rule for %s queries, and point the rule at the new name or export the old one again; scale %s out by hand until the HPA's ScalingActive condition is True", h.Subject, orWord(h.fact("metric"), "the metric"), h.Subject)
		} else if c := h.fact("container"); c != "" {
			r.high("Give the container %s of %s a %s request (every container counts in the utilization), or scale %s out by hand now", c, h.Subject, orWord(h.fact("resource"), "cpu"), h.Subject)
		} else {
			r.high("Make the autoscaler of %s able to read its metric (the metrics server or adapter, the metric's name), or scale %s out by hand now", h.Subject, h.Subject)
		}
		r.med("Check that every added container (a sidecar, an injected proxy) declares resource requests before it ships")
		r.low("Alert on an HPA whose ScalingActive condition is False (kube_horizontalpodautoscaler_status_condition)")
	},
}

// metricRenamed follows a custom metric the adapter cannot find ("the
// server could not find the metric http_requests_per_second for pods") to
// the series it is computed from (the metric itself, or for an adapter's
// usual "<name>_total" -> "<name>_per_second" rule its counter): when
// that series stopped for the workload and another of the workload's
// metrics began at the same time, the workload renamed the metric, and a
// change to it then (a deploy) is what renamed it.
func metricRenamed(ev *Gathered, f *Finding) {
	m := findSubmatch(hpaNoMetricRE, f.fact("message"))
	if m == nil {
		return
	}
	name := strings.TrimRight(orWord(m[1], m[2]), ":")
	f.setFact("metric", name)
	sources := []string{name}
	if b, ok := strings.CutSuffix(name, "_per_second"); ok {
		sources = append(sources, b+"_total", b)
	}
	mine := func(l evidence.Labels) bool {
		return labelsName(l, f.Subject) || l["pod"] != "" && strings.EqualFold(workloadOfName(l["pod"]), f.Subject)
	}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	var end time.Time
	for n, s := range metricSeries(ev.Metrics) {
		if len(s.Points) == 0 {
			continue
		}
		if t := s.Points[len(s.Points)-1].T; t.After(end) {
			end = t
		}
		if !mine(s.Labels) {
			continue
		}
		if t := s.Points[0].T; first[n].IsZero() || t.Before(first[n]) {
			first[n] = t
		}
		if t := s.Points[len(s.Points)-1].T; t.After(last[n]) {
			last[n] = t
		}
	}
	for _, src := range sources {
		stop, ok := last[src]
		if !ok || end.Sub(stop) < 15*time.Minute {
			continue
		}
		// The successor: a metric of the workload that began within
		// minutes of the stop, after the source's first sample.
		succ := ""
		for n, t := range first {
			if n != src && t.After(first[src]) && t.Sub(stop) > -5*time.Minute && t.Sub(stop) <= 10*time.Minute && end.Sub(last[n]) < 15*time.Minute && (succ == "" || n < succ) {
				succ = n
			}
		}
		if succ == "" {
			break
		}
		f.setFact("source_metric", src)
		f.setFact("source_stopped", ts(stop))
		f.setFact("successor", succ)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s: last sample at %s; %s of %s: first sample at %s", src, f.Subject, ts(stop), succ, f.Subject, ts(first[succ])))
		for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
			if strings.EqualFold(c.Service, f.Subject) && c.Timestamp.Sub(stop).Abs() <= 10*time.Minute {
				f.setFact("renamed_by", fmt.Sprintf("the %s of %s at %s (%s)", orWord(c.Kind, "change"), f.Subject, ts(c.Timestamp), truncate(c.Description, 140)))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s at %s: %q", orWord(c.Kind, "change"), f.Subject, ts(c.Timestamp), truncate(c.Description, 160)))
			}
		}
		return
	}
	// Without the series: the change before the failure that touched how
	// the workload exports its metrics (a new metrics library, names
	// dropped) — a change gathered before the window counts, as the
	// adapter fails from the moment the old name is gone.
	onset := f.Time
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if !strings.EqualFold(c.Service, f.Subject) || !matchLine(metricsChangeRE, c.Description) ||
			!onset.IsZero() && (c.Timestamp.After(onset) || onset.Sub(c.Timestamp) > 24*time.Hour) {
			continue
		}
		f.setFact("metrics_change", fmt.Sprintf("the %s of %s at %s (%s)", orWord(c.Kind, "change"), f.Subject, ts(c.Timestamp), truncate(c.Description, 160)))
	}
	if mc := f.fact("metrics_change"); mc != "" {
		f.Evidence = append(f.Evidence, "change to how "+f.Subject+" exports its metrics before the failure: "+mc)
	}
}

var (
	// metricsChangeRE is a change to how a workload exports its metrics.
	metricsChangeRE = regexp.MustCompile(`(?i)\bmetric|prometheus|micrometer|opentelemetry|\botel\b|instrumentation|exporter|/metrics`)
	// hpaNoMetricRE reads the metric the custom or external metrics API
	// does not have ("the server could not find the metric
	// http_requests_per_second for pods", "unable to get metric X").
	hpaNoMetricRE = regexp.MustCompile(`(?i)could not find the metric ([\w:]+)|unable to get (?:external )?metric ([\w:]+)`)
	// "missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m"
	hpaPodRE     = regexp.MustCompile(`(?i)in container ([\w.-]+) of Pod ([\w.-]+)`)
	hpaMissingRE = regexp.MustCompile(`(?i)missing request for (\w+)`)
)
