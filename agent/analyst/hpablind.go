package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
		if hpaMissingRE.MatchString(e.Message) {
			return 0.85, true
		}
		first, last := eventTime(e)
		return 0.6, e.Count >= 20 && last.Sub(first) >= 30*time.Minute
	},
	eventCritical: true,
	eventTarget: func(e *corev1.Event, t *eventTarget) {
		// The autoscaler is named after the workload it scales, as a rule;
		// its pods' names in the message say which workload when not.
		if m := hpaPodRE.FindStringSubmatch(e.Message); m != nil {
			t.Subject = workloadOfName(m[2])
		}
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		if m := hpaPodRE.FindStringSubmatch(e.Message); m != nil {
			f.setFact("container", m[1])
			f.setFact("pod", m[2])
		}
		if m := hpaMissingRE.FindStringSubmatch(e.Message); m != nil {
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
		d += "; the replicas stay where they are while the load rises, and the pods saturate"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.fact("container"); c != "" {
			r.high("Give the container %s of %s a %s request (every container counts in the utilization), or scale %s out by hand now", c, h.Subject, orWord(h.fact("resource"), "cpu"), h.Subject)
		} else {
			r.high("Make the autoscaler of %s able to read its metric (the metrics server or adapter, the metric's name), or scale %s out by hand now", h.Subject, h.Subject)
		}
		r.med("Check that every added container (a sidecar, an injected proxy) declares resource requests before it ships")
		r.low("Alert on an HPA whose ScalingActive condition is False (kube_horizontalpodautoscaler_status_condition)")
	},
}

var (
	// "missing request for cpu in container cloud-sql-proxy of Pod checkout-85d6f9c7b4-q2w8m"
	hpaPodRE     = regexp.MustCompile(`(?i)in container ([\w.-]+) of Pod ([\w.-]+)`)
	hpaMissingRE = regexp.MustCompile(`(?i)missing request for (\w+)`)
)
