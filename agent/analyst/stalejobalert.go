package analyst

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
	corev1 "k8s.io/api/core/v1"
)

// A failed-Job alert (kube-prometheus' KubeJobFailed: kube_job_failed > 0,
// or any alert or question naming the Job) that keeps firing for one run
// of a CronJob while every run after it completed. The alert counts failed
// Job objects, and the CronJob keeps its last failed Jobs
// (failedJobsHistoryLimit, 1 by default) until a newer failure replaces
// them: the alert describes one past run, not the CronJob's state now. The
// answer is the CronJob's present (its later runs completed), the one run's
// own failure with the line of its log that says why, and why the alert
// does not clear; a louder failure nearby is a separate problem.

// staleJobRun is a failed run of a CronJob that later runs superseded.
type staleJobRun struct {
	ns, cron string
	failed   cronRun
	later    []cronRun // the runs after it, all complete
	pods     []string  // the failed run's pods
	line     string    // the line of the failed run's log that says why
	limit    int32     // failedJobsHistoryLimit (-1: not read)
	alert    *evidence.Alert
}

// jobNamesAsked returns the Jobs a firing alert's labels (job_name) or the
// question name, among the Jobs the evidence shows, with the alert that
// names each (nil when only the question does).
func jobNamesAsked(k K8sEvidence, alerts []evidence.Alert, sc Scope) map[string]*evidence.Alert {
	out := map[string]*evidence.Alert{}
	text := strings.ToLower(sc.Message + " " + sc.Hint + " " + sc.Alert)
	for i := range k.Jobs {
		n := k.Jobs[i].Name
		for j := range alerts {
			a := &alerts[j]
			if a.Status == "resolved" || a.Labels["job_name"] != n {
				continue
			}
			out[n] = a
		}
		if _, ok := out[n]; !ok && containsWord(text, strings.ToLower(n)) {
			out[n] = nil
		}
	}
	return out
}

// containsWord reports whether name occurs in text not as part of a longer
// name (the next character is no letter, digit or dash).
func containsWord(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		startOK := i+j == 0 || !nameChar(text[i+j-1])
		if startOK && (end == len(text) || !nameChar(text[end])) {
			return true
		}
		i = i + j + 1
	}
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
}

// staleJobRuns finds the asked Jobs that failed while every later run of
// their CronJob (at least one) completed.
func staleJobRuns(k K8sEvidence, logs []LogSet, alerts []evidence.Alert, sc Scope) []staleJobRun {
	asked := jobNamesAsked(k, alerts, sc)
	if len(asked) == 0 {
		return nil
	}
	var out []staleJobRun
	byCron := cronRuns(k)
	for _, key := range slices.Sorted(maps.Keys(byCron)) {
		runs := byCron[key]
		for i, r := range runs {
			a, ok := asked[r.Job.Name]
			if !ok {
				continue
			}
			pods := failedPodsOfJob(k, r.Job.Namespace, r.Job.Name)
			if r.State != runFailed && !(r.State != runComplete && len(pods) > 0) {
				continue
			}
			later := runs[i+1:]
			complete := 0
			for _, l := range later {
				switch l.State {
				case runComplete:
					complete++
				case runFailed:
					complete = -len(runs)
				}
			}
			if complete <= 0 || later[len(later)-1].State == runFailed {
				continue
			}
			ns, cron, _ := strings.Cut(key, "/")
			s := staleJobRun{ns: ns, cron: cron, failed: r, pods: pods, limit: -1, alert: a}
			for _, l := range later {
				if l.State == runComplete {
					s.later = append(s.later, l)
				}
			}
			if cj := cronJobNamed(k.CronJobs, ns, cron); cj != nil && cj.Spec.FailedJobsHistoryLimit != nil {
				s.limit = *cj.Spec.FailedJobsHistoryLimit
			}
			var lines []string
			for _, p := range pods {
				for key, ls := range k.PreviousLogs {
					if strings.HasPrefix(key, ns+"/"+p+"/") {
						for _, l := range ls {
							lines = append(lines, l.Text)
						}
					}
				}
				lines = append(lines, sourceLogLines(logs, p)...)
			}
			s.line = bestCauseLine(lines)
			out = append(out, s)
		}
	}
	return out
}

// failedPodsOfJob names the pods of a Job that failed, newest first.
func failedPodsOfJob(k K8sEvidence, ns, job string) []string {
	var ps []*corev1.Pod
	for i := range k.Pods {
		p := &k.Pods[i]
		if p.Namespace != ns && ns != "" {
			continue
		}
		name := jobOfPod(p)
		if name == "" {
			if rest, ok := strings.CutPrefix(p.Name, job+"-"); ok && len(rest) == 5 && isAlnumLower(rest) {
				name = job
			}
		}
		if name == job && (p.Status.Phase == corev1.PodFailed || podExitedWithError(p)) {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(a, b int) bool { return ps[a].CreationTimestamp.After(ps[b].CreationTimestamp.Time) })
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// sourceLogLines returns the lines of the templates a pod logged (the
// example and the last line of each), from the log set of its workload.
func sourceLogLines(logs []LogSet, pod string) []string {
	var out []string
	for _, set := range logs {
		for _, t := range set.Templates {
			if set.Source == pod && len(t.Sources) == 0 || slices.Contains(t.Sources, pod) {
				out = append(out, t.Example)
				if t.Last != "" && len(t.Sources) == 1 {
					out = append(out, t.Last)
				}
			}
		}
	}
	return out
}

// answerStaleJobFailure turns the answer to a question about a failed
// Job whose CronJob has completed every run since into that: the CronJob
// works, the one run failed for the reason its log gives, and the alert
// stays because the failed Job is kept. The answer found before, about
// another subject, is kept as a separate failure.
func (g *gatherer) answerStaleJobFailure(res *finding.Result, alerts []evidence.Alert) bool {
	if res == nil {
		return false
	}
	runs := staleJobRuns(g.k8s, g.logSets, alerts, g.sc)
	if len(runs) != 1 {
		return false
	}
	s := runs[0]
	// The answer already speaks of this CronJob: nothing to turn.
	if strings.EqualFold(res.RootCause.Description, "") || candidateOf(res, s.cron) {
		return false
	}
	hm := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
	last := s.later[len(s.later)-1]
	alertWord := "the alert on it"
	if s.alert != nil {
		alertWord = s.alert.Name
	} else if g.sc.Alert != "" {
		alertWord = g.sc.Alert
	}
	d := fmt.Sprintf("CronJob %s is not broken: only one run failed, %s (scheduled %s)", s.cron, s.failed.Job.Name, hm(s.failed.Scheduled))
	if s.line != "" {
		d += "; its log says why: " + quote(ReadableLine(s.line), 240)
		if k, _ := ClassifyLine(s.line); k != "" {
			d += fmt.Sprintf(" (%s, in that run only)", infoOf(k).label)
		}
	}
	d += fmt.Sprintf(". The %s since then completed, the latest %s (scheduled %s). %s keeps firing because it counts failed Job objects, and the CronJob keeps its failed Job", plural(len(s.later), "later run", "later runs"), last.Job.Name, hm(last.Scheduled), alertWord)
	if s.limit >= 0 {
		d += fmt.Sprintf(" (failedJobsHistoryLimit %d)", s.limit)
	}
	d += " until a newer failure replaces it: the alert describes that past run, not the CronJob's state now"
	prev := res.RootCause.Description
	prevSummary := res.Summary
	res.RuledOut = append([]finding.RuledOut{{Hypothesis: "a separate failure: " + truncate(prevSummary, 200), Reason: fmt.Sprintf("not the CronJob %s asked about: a problem of its own, handle it apart (%s)", s.cron, truncate(prev, 240))}}, res.RuledOut...)
	res.RootCause.Description = d
	res.Summary = fmt.Sprintf("CronJob %s works: its run %s failed once, the %s since completed; %s stays firing for the failed Job kept in history.", s.cron, s.failed.Job.Name, plural(len(s.later), "run", "runs"), alertWord)
	ev := []string{fmt.Sprintf("Job %s/%s failed: %s", s.ns, s.failed.Job.Name, orWord(strings.Join(s.pods, ", "), "its pods failed")+" failed")}
	if s.line != "" {
		ev = append(ev, fmt.Sprintf("log of the run %s: %s", s.failed.Job.Name, quote(ReadableLine(s.line), 240)))
	}
	var names []string
	for _, l := range s.later {
		names = append(names, l.Job.Name)
	}
	ev = append(ev, fmt.Sprintf("the later runs of CronJob %s completed: %s", s.cron, strings.Join(names, ", ")))
	if s.limit >= 0 {
		ev = append(ev, fmt.Sprintf("CronJob %s/%s keeps %s (failedJobsHistoryLimit)", s.ns, s.cron, plural(int(s.limit), "failed Job", "failed Jobs")))
	}
	if s.alert != nil {
		ev = append(ev, fmt.Sprintf("alert %s firing since %s for job_name=%s", s.alert.Name, hm(s.alert.StartsAt), s.failed.Job.Name))
	}
	res.RootCause.Evidence = ev
	res.RootCause.Confidence = 65
	res.Verdict = finding.VerdictIdentified
	res.AffectedSystems = []string{s.cron}
	tl := []finding.TimelineEvent{{Timestamp: s.failed.Scheduled.UTC().Format(time.RFC3339), Event: fmt.Sprintf("run %s of CronJob %s starts; it fails", s.failed.Job.Name, s.cron)}}
	if s.alert != nil && !s.alert.StartsAt.IsZero() {
		tl = append(tl, finding.TimelineEvent{Timestamp: s.alert.StartsAt.UTC().Format(time.RFC3339), Event: fmt.Sprintf("%s fires for %s", s.alert.Name, s.failed.Job.Name)})
	}
	for _, l := range s.later {
		at := orTime(l.End, l.Scheduled)
		tl = append(tl, finding.TimelineEvent{Timestamp: at.UTC().Format(time.RFC3339), Event: fmt.Sprintf("run %s of CronJob %s completes", l.Job.Name, s.cron)})
	}
	sort.SliceStable(tl, func(i, j int) bool { return tl[i].Timestamp < tl[j].Timestamp })
	res.Timeline = tl
	res.Recommendations = []finding.Recommendation{
		{Priority: finding.PriorityHigh, Action: fmt.Sprintf("Nothing to repair in CronJob %s: delete the failed Job to clear %s (kubectl delete job %s -n %s), after keeping its log if it is wanted", s.cron, alertWord, s.failed.Job.Name, s.ns)},
		{Priority: finding.PriorityMedium, Action: fmt.Sprintf("If the failure its log names comes back, make the run retry it (a retry of the step, a higher backoffLimit of the Job of %s)", s.cron)},
		{Priority: finding.PriorityLow, Action: fmt.Sprintf("Alert on the age of the last successful run of %s (kube_cronjob_status_last_successful_time) rather than on each failed Job kept in history", s.cron)},
	}
	res.Candidates = nil
	res.Normalize()
	return true
}

// candidateOf reports whether the result's root cause already names the
// subject.
func candidateOf(res *finding.Result, subject string) bool {
	return containsWord(strings.ToLower(res.RootCause.Description), strings.ToLower(subject)) && !strings.Contains(strings.ToLower(res.RootCause.Description), "no fault found")
}
