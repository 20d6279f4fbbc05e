package analyst

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A healthy answer about a subject ("cart-api looks healthy; the failure
// nearby is recs-api's") is as sure as the direct evidence of the
// subject's own health: its pods all Ready with no restart in the window,
// its own logs read without an error line in the window, its own metrics
// read with nothing abnormal found in them. With none of them read, the
// answer only says that nothing was seen, and its confidence stays low;
// with each read and clean, it rises, but stays below the bar of a sure
// answer (a healthy verdict may still miss a failure the evidence did not
// show).

// healthyProof is the direct evidence that a subject is healthy.
type healthyProof struct {
	subject  string
	pods     int // the subject's pods, all Ready, none restarted in the window
	logs     int // log lines of its own read in the window, none an error
	metrics  int // series of its own read
	evidence []string
}

// kinds counts the kinds of direct evidence read, each only when there
// is enough of it to speak for the subject: a handful of log lines or a
// single series says little.
func (p healthyProof) kinds() int {
	n := 0
	if p.pods > 0 {
		n++
	}
	if p.logs >= 20 {
		n++
	}
	if p.metrics >= 2 {
		n++
	}
	return n
}

// healthyProofOf reads the direct evidence of subject's health from what
// was gathered; found are the findings, and any finding of the subject
// itself voids the kind of evidence it comes from.
func healthyProofOf(ev *Gathered, subject string, found []Finding) healthyProof {
	p := healthyProof{subject: subject}
	if subject == "" {
		return p
	}
	bad := map[string]bool{}
	for _, f := range found {
		if infoOf(f.Kind).class == classChange || f.Severity < SevWarning {
			continue
		}
		if strings.EqualFold(f.Subject, subject) || strings.EqualFold(f.fact("caller"), subject) {
			bad[f.Source] = true
		}
	}
	// Pods.
	ready, all := 0, 0
	for i := range ev.K8s.Pods {
		pod := &ev.K8s.Pods[i]
		if workloadOfName(pod.Name) != subject && podLabelApp(pod) != subject {
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded {
			continue
		}
		all++
		if podReadyNow(pod) && !restartedInWindow(pod, ev.Window) {
			ready++
		}
	}
	if all > 0 && ready == all && !bad[SrcKubernetes] && !bad[SrcEvents] {
		p.pods = ready
		p.evidence = append(p.evidence, fmt.Sprintf("%s: %s Ready, none restarted in the incident window", subject, plural(ready, "pod", "pods")))
	}
	// Logs.
	lines, errs := 0, 0
	for si := range ev.Logs {
		s := &ev.Logs[si]
		if s.Subject != subject || s.Host {
			continue
		}
		for ti, t := range s.Templates {
			lines += t.Incident
			if t.Incident == 0 {
				continue
			}
			c := s.classified(ti)
			if lvl := LineLevel(c.line); (c.isErr || c.kind != "") && lvl != "info" && lvl != "debug" {
				errs += t.Incident
			}
		}
	}
	if lines > 0 && errs == 0 && !bad[SrcLogs] {
		p.logs = lines
		p.evidence = append(p.evidence, fmt.Sprintf("%s's own logs: %s in the incident window, no error among them", subject, plural(lines, "line", "lines")))
	}
	// Metrics.
	series := 0
	for _, m := range ev.Metrics {
		for _, s := range m.Series {
			if SubjectOfLabels(s.Labels) == subject {
				series++
			}
		}
	}
	if series > 0 && !bad[SrcMetrics] && !bad[SrcCloudWatch] {
		p.metrics = series
		p.evidence = append(p.evidence, fmt.Sprintf("%s's own metrics: %s read, nothing abnormal in them", subject, plural(series, "series", "series")))
	}
	return p
}

// healthyConfidence is the confidence of a healthy verdict: conf, the
// confidence of nothing seen, raised by the kinds of direct evidence of
// the subject's health (one: 30, two: 50, all three: 65), never above 65.
func healthyConfidence(conf float64, proofs []healthyProof) float64 {
	n := 3
	for _, p := range proofs {
		n = min(n, p.kinds())
	}
	if len(proofs) == 0 || n == 0 {
		return conf
	}
	return math.Max(conf, []float64{0, 30, 50, 65}[n])
}

// applyHealthyProof adds to a healthy result the direct evidence of the
// health of what it speaks for, and calibrates its confidence on it.
func applyHealthyProof(res *finding.Result, a *Analysis, ev *Gathered, sc Scope) {
	if res == nil || !a.Healthy {
		return
	}
	subjects := a.Asked
	if len(subjects) == 0 {
		subjects = sc.Subjects()
	}
	if len(subjects) == 0 {
		return
	}
	var proofs []healthyProof
	for _, s := range subjects {
		p := healthyProofOf(ev, s, a.Findings)
		proofs = append(proofs, p)
		res.RootCause.Evidence = append(res.RootCause.Evidence, p.evidence...)
	}
	res.RootCause.Confidence = healthyConfidence(res.RootCause.Confidence, proofs)
}

// podLabelApp is the app a pod's labels name.
func podLabelApp(p *corev1.Pod) string {
	for _, k := range []string{"app.kubernetes.io/name", "app", "k8s-app"} {
		if v := p.Labels[k]; v != "" {
			return v
		}
	}
	return ""
}

// podReadyNow reports whether a running pod's Ready condition is true.
func podReadyNow(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restartedInWindow reports whether a container of the pod restarted in
// the incident window (its last termination ended in it), or restarted
// with no termination time known.
func restartedInWindow(p *corev1.Pod, w Window) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount == 0 {
			continue
		}
		t := cs.LastTerminationState.Terminated
		if t == nil || t.FinishedAt.IsZero() || w.Start.IsZero() || !t.FinishedAt.Time.Before(w.Start) {
			return true
		}
	}
	return false
}
