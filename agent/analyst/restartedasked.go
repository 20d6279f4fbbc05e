package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// "which pods restarted in the last hour?": a question that asks for the
// list of pods whose containers restarted within a period, not for a
// cause. Its answer names them, each with its restart count, when its
// last restart ended and why (OOMKilled, Error) when the evidence says:
// read from the pods' container statuses (kubectl get pods' "4 (7m ago)",
// a describe's Last State), whatever else the analysis finds. A pod whose
// last restart is older than the period is not listed, however high its
// count.

// restartedAskedRE reads a question asking which pods restarted.
var restartedAskedRE = regexp.MustCompile(`(?i)\b(?:which|what|list|show|any|how many)\b[^?]*\b(?:pods?|containers?|workloads?)\b[^?]*\b(?:restarted|restarts|have restarted|got restarted|were restarted|crashed)\b`)

// restartPeriodRE reads the period the question asks about: "in the last
// hour", "in the past 30 minutes", "last 2h".
var restartPeriodRE = regexp.MustCompile(`(?i)\b(?:last|past)\s+(?:(\d+)\s*|(an?|one)\s+)?(h|hours?|m|mins?|minutes?|d|days?)\b`)

// restartedPeriod is the period a question asks about (0 when it names
// none).
func restartedPeriod(q string) time.Duration {
	m := findSubmatch(restartPeriodRE, q)
	if m == nil {
		return 0
	}
	n := 1
	if m[1] != "" {
		n, _ = strconv.Atoi(m[1])
	}
	switch strings.ToLower(m[3])[0] {
	case 'h':
		return time.Duration(n) * time.Hour
	case 'd':
		return time.Duration(n) * 24 * time.Hour
	}
	return time.Duration(n) * time.Minute
}

// restartedPod is one pod whose container restarted within the period.
type restartedPod struct {
	pod, workload, reason string
	restarts              int32
	last                  time.Time
}

// restartedPods answers a question asking which pods restarted: the
// sentence that lists them, the evidence, a timeline entry for each and
// the workloads they belong to ("" when the question asks something else
// or no restart end is known).
func restartedPods(pods []corev1.Pod, question string, w Window) (sentence string, evidence []string, timeline []restartedPod, workloads []string) {
	if !matchLine(restartedAskedRE, question) || w.End.IsZero() {
		return "", nil, nil, nil
	}
	period := restartedPeriod(question)
	if period == 0 {
		period = w.End.Sub(w.Start)
	}
	if period <= 0 {
		return "", nil, nil, nil
	}
	from := w.End.Add(-period)
	var out []restartedPod
	for i := range pods {
		p := &pods[i]
		r := restartedPod{pod: p.Name, workload: WorkloadOfPod(p)}
		if p.Namespace != "" {
			r.pod = p.Namespace + "/" + p.Name
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.LastTerminationState.Terminated
			if cs.RestartCount == 0 || t == nil || t.FinishedAt.IsZero() {
				continue
			}
			r.restarts += cs.RestartCount
			if t.FinishedAt.After(r.last) {
				r.last, r.reason = t.FinishedAt.Time, t.Reason
			}
		}
		if r.restarts > 0 && !r.last.Before(from) && !r.last.After(w.End.Add(time.Minute)) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return "", nil, nil, nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].last.After(out[j].last) })
	var items []string
	for _, r := range out {
		item := fmt.Sprintf("%s (%s, the last ended %s ago at %s%s)", r.pod, plural(int(r.restarts), "restart", "restarts"), agoWords(w.End.Sub(r.last)), ts(r.last), prefixed(", ", r.reason))
		items = append(items, item)
		evidence = append(evidence, "restarted within the period: "+item)
		if !containsStr(workloads, r.workload) {
			workloads = append(workloads, r.workload)
		}
	}
	sentence = fmt.Sprintf("Pods whose containers restarted in the last %s: %s.", periodWords(period), strings.Join(items, "; "))
	if len(evidence) > 5 {
		evidence = evidence[:5]
	}
	return sentence, evidence, out, workloads
}

// restartedAnswer is what a question asking which pods restarted adds to
// the answer (Scope.Restarted).
type restartedAnswer struct {
	sentence  string
	evidence  []string
	pods      []restartedPod
	workloads []string
}

// askedRestarted reads the answer to a question asking which pods
// restarted (nil for another question).
func askedRestarted(pods []corev1.Pod, question string, w Window) *restartedAnswer {
	s, ev, ps, wl := restartedPods(pods, question, w)
	if s == "" {
		return nil
	}
	return &restartedAnswer{sentence: s, evidence: ev, pods: ps, workloads: wl}
}

// addRestarted adds the list of restarted pods to a result: its
// sentence, its evidence, a timeline entry for each pod's last restart
// and their workloads among the affected systems.
func addRestarted(r *finding.Result, a *restartedAnswer) {
	if a == nil {
		return
	}
	r.RootCause.Description += " " + a.sentence
	r.RootCause.Evidence = append(r.RootCause.Evidence, a.evidence...)
	for _, p := range a.pods {
		r.Timeline = append(r.Timeline, finding.TimelineEvent{Timestamp: ts(p.last), Event: fmt.Sprintf("pod %s restarted%s", p.pod, prefixed(" (", p.reason)+map[bool]string{true: ")", false: ""}[p.reason != ""])})
	}
	sort.SliceStable(r.Timeline, func(i, j int) bool { return r.Timeline[i].Timestamp < r.Timeline[j].Timestamp })
	for _, w := range a.workloads {
		if len(r.AffectedSystems) < 10 && !containsStr(r.AffectedSystems, w) {
			r.AffectedSystems = append(r.AffectedSystems, w)
		}
	}
}

// periodWords names a period as a question does: "hour", "3 hours",
// "30m".
func periodWords(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", int(d.Hours()))
	}
	return agoWords(d)
}
