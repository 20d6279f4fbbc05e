package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// CPU throttling: a container held at its CPU limit by the CFS quota (or a
// runtime starved of CPU), so requests slow down without failing. Found in
// the throttled share of CFS periods, in a runtime's starvation warnings,
// and, when an alert states it (CPUThrottlingHigh), as the alert's claim
// confirmed or refuted by the metrics and the container's limit.
var cpuThrottling = &mechanism{
	kind:  KindCPUThrottling,
	class: classCause,
	label: "CPU throttling",
	enrich: func(f *Finding, c *corev1.Container) {
		if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
			f.setFact("cpu_limit", q.String())
			if len(f.Evidence) < 3 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("container %s of %s has a cpu limit of %s", c.Name, f.Subject, q.String()))
			}
		}
	},
	// A JVM or event loop that cannot get CPU time: a symptom of CPU
	// starvation or throttling, not of the database it mentions.
	lines:      regexp.MustCompile(`(?i)thread starvation or clock leap|starvation detected|blocked for more than \d+ ?ms|event loop (lag|blocked)`),
	lineWeight: 0.6,
	detect:     detectThrottlingClaim,
	// Throttling is a limit too low for the load: only a change of the
	// CPU (a limit or request cut) triggers it; a ConfigMap or log-level
	// change just before is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary + " " + c.fact("changes"))
		return c.Kind == KindResourceChange || strings.Contains(d, "cpu") && (strings.Contains(d, "limit") || strings.Contains(d, "request") || strings.Contains(d, "->") || strings.Contains(d, "→"))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		lim := h.fact("cpu_limit")
		d := fmt.Sprintf("%s is CPU throttled (CFS quota)", h.Subject)
		if lim != "" {
			d += fmt.Sprintf(" at its cpu limit of %s", lim)
		}
		switch {
		case h.fact("alert") != "" && h.fact("peak") != "":
			d += fmt.Sprintf(": the %s alert is real — %s of its CFS periods were throttled (peak, from %s before)", h.fact("alert"), h.fact("peak"), orDash(h.fact("baseline")))
		case h.fact("peak") != "" && h.fact("metric") != "":
			d += fmt.Sprintf(": %s reached %s (from %s)", h.fact("metric"), h.fact("peak"), orDash(h.fact("baseline")))
		case h.fact("line") != "":
			d += ": the runtime reports CPU starvation — " + quote(ReadableLine(h.fact("line")), 200)
		}
		if hasKind(h.Support, KindLatency) {
			d += "; the throttling causes the latency increase"
			if !hasKind(h.Support, KindErrorRate) {
				d += " (requests are slow, not failing)"
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if c := h.Trigger; c != nil && c.Kind != KindDeploy {
			r.high("Revert the change that lowered the CPU of %s (%s), or raise its CPU limit back", h.Subject, truncate(orWord(c.fact("description"), c.Summary), 160))
		}
		r.high("Raise or remove the CPU limit of %s (currently %s) or scale it out so it stops being CFS-throttled", h.Subject, orWord(h.fact("cpu_limit"), "unknown"))
		r.med("Right-size the CPU requests and limits of %s from its usage at peak, and check the autoscaler targets", h.Subject)
		r.low("Alert on container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total above 25%%")
	},
}

var (
	throttleAlertRE = regexp.MustCompile(`(?i)CPUThrottling|cpu throttl|throttling of cpu|throttled cpu`)
	alertPodRE      = regexp.MustCompile(`(?i)\bpod[= :]+"?([a-z0-9][a-z0-9.-]*[a-z0-9])`)
	alertNameRE     = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*Throttling[A-Za-z0-9]*\b`)
	cpuChangeRE     = regexp.MustCompile(`(?i)\bcpu\b[^;]*?(\d+(?:\.\d+)?m?)\s*(?:->|→|to)\s*(\d+(?:\.\d+)?m?)\b`)
)

// minThrottled is the share of CFS periods throttled that confirms a
// throttling alert.
const minThrottled = 0.25

// detectThrottlingClaim takes an alert's claim that a container is CPU
// throttled as a hypothesis, and confirms it with the throttled share of
// that workload's CFS periods (new pods included: a series with no
// baseline still shows the share), adding the container's CPU limit.
// Metrics below the bar refute it: no finding.
func detectThrottlingClaim(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text, subject := alertClaim(sc, throttleAlertRE)
	if subject == "" {
		return nil
	}
	alert := "CPU throttling"
	if m := alertNameRE.FindString(text); m != "" {
		alert = m
	}
	var peak float64
	var onset time.Time
	var matched []evidence.Series
	for _, set := range ev.Metrics {
		if set.Class != MetricCPUThrottle || set.Unit != "%" {
			continue
		}
		for _, s := range set.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) && !strings.HasPrefix(s.Labels["pod"], subject+"-") {
				continue
			}
			matched = append(matched, s)
			for _, p := range s.Points {
				if p.T.After(ev.Window.Start) {
					peak = max(peak, p.V)
				}
				if p.V >= minThrottled && (onset.IsZero() || p.T.Before(onset)) {
					onset = p.T
				}
			}
		}
	}
	// The level before the throttling began.
	before := -1.0
	for _, s := range matched {
		for _, p := range s.Points {
			if !onset.IsZero() && p.T.Before(onset) && (before < 0 || p.V < before) {
				before = p.V
			}
		}
	}
	before = max(before, 0)
	series := len(matched)
	if series > 0 && peak < minThrottled {
		return nil // the metrics refute the claim
	}
	f := Finding{Kind: KindCPUThrottling, Subject: subject, Object: "alert " + alert, Namespace: sc.Namespace, Time: onset,
		Severity: SevWarning, Weight: 0.7, Source: SrcMetrics}
	f.setFact("alert", alert)
	f.Evidence = []string{fmt.Sprintf("the %s alert states: %s", alert, quote(strings.TrimSpace(sc.Message), 220))}
	if series > 0 {
		f.Weight = 0.95
		f.setFact("peak", fmt.Sprintf("%.0f%%", peak*100))
		f.setFact("baseline", fmt.Sprintf("%.0f%%", before*100))
		f.setFact("metric", "container_cpu_cfs_throttled_periods_total / container_cpu_cfs_periods_total")
		f.Evidence = append(f.Evidence, fmt.Sprintf("the metrics confirm it: %.0f%% of the CFS periods of %s were throttled at the peak (%.0f%% before the window), above %.0f%% since %s", peak*100, subject, before*100, minThrottled*100, ts(onset)))
	}
	if lim := cpuLimitOf(ev.K8s, subject); lim != "" {
		f.setFact("cpu_limit", lim)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the containers of %s have a cpu limit of %s", subject, lim))
	} else {
		for _, c := range ev.Changes {
			if strings.EqualFold(c.Service, subject) {
				if m := cpuChangeRE.FindStringSubmatch(c.Description); m != nil {
					f.setFact("cpu_limit", m[2])
				}
			}
		}
	}
	f.Summary = fmt.Sprintf("%s is CPU throttled (%s)", subject, orWord(f.fact("peak"), "as the alert states"))
	if f.Time.IsZero() {
		f.Time = ev.Window.Start
	}
	return []Finding{f}
}

// cpuLimitOf is the CPU limit of a workload's first container with one,
// from its pods or its Deployment.
func cpuLimitOf(k K8sEvidence, workload string) string {
	limit := func(cs []corev1.Container) string {
		for _, c := range cs {
			if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
				return q.String()
			}
		}
		return ""
	}
	for i := range k.Pods {
		if WorkloadOfPod(&k.Pods[i]) == workload {
			if l := limit(k.Pods[i].Spec.Containers); l != "" {
				return l
			}
		}
	}
	for _, d := range k.Deployments {
		if d.Name == workload {
			return limit(d.Spec.Template.Spec.Containers)
		}
	}
	return ""
}

// alertClaim returns the question's text (message, hint and alert) and the
// workload an alert's claim is about when the text makes that claim
// (claim matches it): the asked service, else the workload of the pod the
// alert names; subject is "" when there is no such claim or workload.
func alertClaim(sc Scope, claim *regexp.Regexp) (text, subject string) {
	text = sc.Message + " " + sc.Hint + " " + sc.Alert
	if !claim.MatchString(text) {
		return text, ""
	}
	subject = sc.Service
	if m := alertPodRE.FindStringSubmatch(text); m != nil && subject == "" {
		subject = workloadOfName(m[1])
	}
	return text, subject
}
