package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A VerticalPodAutoscaler that evicts the same workload's pods over and
// over. In Auto (Recreate) mode its updater evicts a pod whose requests
// are far from its recommendation (event EvictedByVPA, "Pod was evicted by
// VPA Updater to apply resource recommendation"; in the updater's log
// "evicting pod ns/name"), and its admission controller's webhook
// rewrites the recreated pod's requests to the recommendation. When the
// webhook does not (the admission controller down or crash-looping, its
// TLS certificate missing; a failurePolicy of Ignore lets pods be created
// without it), the new pod comes back with the template's requests, is as
// far from the recommendation as the old one, and is evicted again: the
// pods restart every few minutes with nothing in their logs. The
// evictions are the symptom the operator sees; the admission controller
// not applying the recommendation is why they never stop.

// KindVPAEvictLoop is a workload whose pods a VPA updater evicts again and
// again.
const KindVPAEvictLoop Kind = "vpa_evict_loop"

// minVPAEvictions is the fewest evictions of one workload's pods that make
// a loop rather than one application of a recommendation.
const minVPAEvictions = 3

var vpaEvictLoop = &mechanism{
	kind:           KindVPAEvictLoop,
	class:          classCause,
	label:          "VerticalPodAutoscaler evicts the pods in a loop",
	detect:         detectVPAEvictLoop,
	related:        kindsOnSubject(KindRestarts, KindEviction, KindCrashLoop),
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(vpaWordRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the pods of %s are evicted again and again by the VerticalPodAutoscaler's updater to apply its resource recommendation", h.Subject)
		d += h.wrapped(" (", "recommendation", ")")
		d += fmt.Sprintf(": %s", h.fact("evictions"))
		if a := h.fact("admission"); a != "" {
			d += fmt.Sprintf("; the recreated pods come back with the old requests because the VPA admission controller, whose webhook rewrites new pods' requests, is not running (%s)", quote(a, 160))
			if e := h.fact("admission_error"); e != "" {
				d += fmt.Sprintf(": it exits with %s", quote(e, 200))
			}
			d += h.clause(", and its webhook's failure policy is ", "failure_policy")
			d += ", so the updater evicts them again"
		} else {
			d += "; the recreated pods evidently come back with the same requests (the VPA admission controller's webhook does not apply the recommendation)"
			d += h.clause(" — its webhook's failure policy is ", "failure_policy")
			d += ", so the updater evicts them again"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if sec := h.fact("admission_secret"); sec != "" {
			r.high("Check that the secret %s the VPA admission controller mounts its TLS certificate from exists and holds the files its flags name (kubectl -n kube-system get secret %s), and that the admission controller runs", sec, sec)
		}
		r.high("Repair the VPA admission controller (its logs, its TLS certificate secret, its webhook) so new pods get the recommended requests; until then set the VPA of %s to updateMode \"Initial\" or \"Off\" to stop the evictions", h.Subject)
		r.med("Or set the requests of %s's template to the recommendation, so the updater has nothing to apply", h.Subject)
		r.low("Alert on repeated EvictedByVPA events for one workload and on the VPA admission controller's availability")
	},
}

var (
	// vpaEvictLogRE is the updater's log of an eviction ("updater.go:298]
	// evicting pod finance/ledger-worker-6f7b9c8d54-m4hzt").
	vpaEvictLogRE = regexp.MustCompile(`evicting pod ([a-z0-9-]+)/([a-z0-9.-]+)`)
	// vpaAdmissionDownRE is a line that shows the VPA admission controller
	// not running: its pod's row with a failing status, or its failing
	// log.
	vpaAdmissionDownRE = regexp.MustCompile(`(?i)vpa-admission-controller\S*\s.*\b(CrashLoopBackOff|Error|ImagePullBackOff|ErrImagePull|CreateContainerConfigError|Pending|OOMKilled|ContainerCreating)\b`)
	// vpaAdmissionErrRE is a fatal or error line of the admission
	// controller's log (klog F/E, "failed", "error").
	vpaAdmissionErrRE = regexp.MustCompile(`(?i)^[FE]\d{4} |\bfailed to\b|\bno such file\b|\berror\b`)
	// vpaFailurePolicyRE is the webhook's failure policy as jsonpath or
	// YAML prints it.
	vpaFailurePolicyRE = regexp.MustCompile(`(?i)(?:failurePolicy:\s*)?\b(Ignore|Fail)\b\s+vpa`)
	// vpaRecommendRE is the recommendation the updater applies
	// ("target: 1191182k 480m").
	vpaRecommendRE = regexp.MustCompile(`(?m)^([\w.-]+): target: ([^;]+);`)
)

// detectVPAEvictLoop counts each workload's VPA evictions (events, the
// updater's log) and, at minVPAEvictions or more, reads whether the
// admission controller runs.
func detectVPAEvictLoop(ev *Gathered, found []Finding) []Finding {
	type loop struct {
		n           int
		first, last time.Time
		ns          string
	}
	loops := map[string]*loop{}
	var order []string
	add := func(wl, ns string, n int, first, last time.Time) {
		if ev.Scope.Namespace != "" && ns != "" && ns != ev.Scope.Namespace {
			return
		}
		l := loops[wl]
		if l == nil {
			l = &loop{ns: ns}
			loops[wl] = l
			order = append(order, wl)
		}
		l.n += n
		if !first.IsZero() && (l.first.IsZero() || first.Before(l.first)) {
			l.first = first
		}
		if last.After(l.last) {
			l.last = last
		}
	}
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if e.Reason != "EvictedByVPA" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		first, last := eventTime(e)
		add(workloadOfName(e.InvolvedObject.Name), e.InvolvedObject.Namespace, max(int(e.Count), 1), first, last)
	}
	fromEvents := len(loops) > 0
	var recommendation string
	for _, l := range eventLines(ev, vpaEvictLogRE) {
		if fromEvents {
			break
		}
		m := findSubmatch(vpaEvictLogRE, l.Text)
		add(workloadOfName(m[2]), m[1], 1, l.Time, l.Time)
	}
	admission, policy, secret := "", "", ""
	for _, c := range ev.Commands {
		cmd := strings.ToLower(c.Command)
		for i, line := range c.Lines {
			// The admission controller's pod, described: the secret its
			// TLS certificate is mounted from.
			if secret == "" && strings.Contains(cmd, "admission-controller") && matchLine(vpaWordRE, cmd) {
				if k, v, ok := strings.Cut(strings.TrimSpace(line), "SecretName:"); ok && k == "" {
					secret = strings.TrimSpace(v)
				}
			}
			if admission == "" && matchLine(vpaAdmissionDownRE, line) {
				admission = strings.Join(strings.Fields(line), " ")
			}
			if policy == "" && strings.Contains(cmd, "webhook") {
				if m := findSubmatch(vpaFailurePolicyRE, line); m != nil {
					policy = m[1]
				}
			}
			if recommendation == "" && strings.Contains(line, "target:") && i > 0 && strings.Contains(c.Lines[i-1], "accepted for update") {
				if m := findSubmatch(vpaRecommendRE, line); m != nil {
					recommendation = fmt.Sprintf("container %s target %s", m[1], strings.TrimSpace(m[2]))
				}
			}
		}
	}
	if admission == "" {
		admission = vpaAdmissionPod(ev)
	}
	admissionErr := ""
	for _, set := range ev.Logs {
		if !strings.Contains(set.Source, "admission-controller") || !matchLine(vpaWordRE, set.Source) {
			continue
		}
		for _, t := range set.Templates {
			if l := orWord(t.Last, t.Example); matchLine(vpaAdmissionErrRE, l) && admissionErr == "" {
				admissionErr = strings.TrimSpace(l)
			}
		}
	}
	var out []Finding
	for _, wl := range order {
		l := loops[wl]
		if l.n < minVPAEvictions || wl == "" {
			continue
		}
		f := Finding{Kind: KindVPAEvictLoop, Subject: wl, Object: "workload " + wl, Namespace: orWord(l.ns, ev.Scope.Namespace),
			Severity: SevCritical, Weight: 0.86, Source: SrcEvents, Time: l.first}
		if !fromEvents {
			f.Source = SrcLogs
		}
		w := fmt.Sprintf("%d evictions (EvictedByVPA)", l.n)
		if !l.first.IsZero() && l.last.After(l.first) {
			w = fmt.Sprintf("%d evictions (EvictedByVPA) between %s and %s", l.n, ts(l.first), ts(l.last))
		}
		f.setFact("evictions", w)
		f.Summary = fmt.Sprintf("%s pods evicted %d times by the VPA updater", wl, l.n)
		f.Evidence = append(f.Evidence, fmt.Sprintf("pods of %s evicted by the VPA updater to apply its recommendation: %s", wl, w))
		if admission != "" {
			f.setFact("admission", admission)
			f.Evidence = append(f.Evidence, "VPA admission controller: "+quote(admission, 200))
		}
		if admissionErr != "" {
			f.setFact("admission_error", admissionErr)
			f.Evidence = append(f.Evidence, "VPA admission controller's log: "+quote(admissionErr, 220))
		}
		if policy != "" {
			f.setFact("failure_policy", policy+" (pods are created without it)")
			f.Evidence = append(f.Evidence, fmt.Sprintf("the VPA's mutating webhook has failurePolicy %s: pods are admitted unchanged when it does not answer", policy))
		}
		if secret != "" {
			f.setFact("admission_secret", secret)
		}
		for _, tl := range eventLines(ev, regexp.MustCompile(`^`+regexp.QuoteMeta(wl)+`: target: `)) {
			if m := findSubmatch(vpaRecommendRE, tl.Text); m != nil {
				f.setFact("recommendation", fmt.Sprintf("container %s target %s", m[1], strings.TrimSpace(m[2])))
				break
			}
		}
		if recommendation != "" && f.fact("recommendation") == "" {
			f.setFact("recommendation", recommendation)
		}
		out = append(out, f)
	}
	return out
}

// vpaAdmissionPod is the VPA admission controller's pod when it is not
// running (waiting in CrashLoopBackOff, an image pull, a config error, or
// Pending), said as its name and state; "" when it runs or was not read.
func vpaAdmissionPod(ev *Gathered) string {
	for _, pods := range [][]corev1.Pod{ev.K8s.Pods, ev.K8s.CalledPods, ev.K8s.NodeAgents} {
		for i := range pods {
			p := &pods[i]
			if !strings.Contains(p.Name, "admission-controller") || !matchLine(vpaWordRE, p.Name+" "+p.Labels["app.kubernetes.io/instance"]+" "+p.Labels["app"]) {
				continue
			}
			if p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 0 {
				return p.Namespace + "/" + p.Name + " Pending"
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil && w.Reason != "" {
					return fmt.Sprintf("%s/%s %s, %d restarts", p.Namespace, p.Name, w.Reason, c.RestartCount)
				}
			}
		}
	}
	return ""
}
