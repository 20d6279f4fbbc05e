package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// A CronJob that stops running because one of its runs never ends: with
// concurrencyPolicy Forbid the controller creates no Job while another is
// active, so a run whose pod is stuck before it starts (a volume that
// cannot attach, an image that cannot be pulled, a pod that cannot be
// scheduled) holds every later run back, for days if nothing bounds it
// (no activeDeadlineSeconds). Nothing fails at the scheduled time, so the
// missing output ("no export file this morning") is the only sign, and the
// CronJobs that did run and fail nearby are not the answer. The cause is
// what keeps the stuck pod from starting; the Forbid policy is why it
// cost the later runs. Read from the CronJob (describe: Concurrency
// Policy, Last Schedule Time, Active Jobs; get: ACTIVE, LAST SCHEDULE),
// its Jobs (the run still active, the runs before it), the stuck pod's
// state and the finding that says why it waits.

// KindCronJobHeld is a CronJob whose runs are skipped while a stuck run
// stays active under concurrencyPolicy Forbid.
const KindCronJobHeld Kind = "cronjob_held"

var cronJobHeld = &mechanism{
	kind:   KindCronJobHeld,
	class:  classCause,
	label:  "CronJob runs skipped behind a stuck active run (concurrencyPolicy Forbid)",
	detect: detectCronJobHeld,
	// The stuck pod's own findings (its mount, pull or scheduling
	// failure) and the Job's are this cause's.
	related: func(h *Hypothesis, f *Finding) bool {
		job := h.fact("job")
		if job == "" {
			return false
		}
		s := strings.ToLower(f.Subject)
		return s == job || strings.HasPrefix(s, job+"-") || strings.Contains(f.Object, job+"-") || f.fact("job") == job
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the CronJob %s has started no run since %s: its Job %s (scheduled %s) is still active after %s because its pod %s is stuck in %s",
			h.Subject, h.fact("scheduled"), h.fact("job"), h.fact("scheduled"), h.fact("active_for"), h.fact("pod"), h.fact("pod_state"))
		if w := h.fact("held_by"); w != "" {
			d += ": " + w
		}
		d += fmt.Sprintf("; with concurrencyPolicy Forbid the CronJob creates no Job while one is still active, so its later runs were skipped (%s)", h.fact("skipped"))
		if ok := h.fact("last_complete"); ok != "" {
			d += "; the run before it, " + ok + ", completed"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if x := h.fact("holder"); x != "" {
			r.high("Release the volume: delete pod %s (it holds the ReadWriteOnce volume on another node), so the pod of %s can attach it", x, h.fact("job"))
		} else {
			r.high("Clear what keeps pod %s from starting (%s)", h.fact("pod"), orWord(h.fact("pod_state"), "its state"))
		}
		r.high("Delete the stuck Job %s (or let it start) and run the missed run by hand: kubectl create job --from=cronjob/%s %s-manual", h.fact("job"), h.Subject, h.Subject)
		r.med("Bound the runs of %s: activeDeadlineSeconds on its Job template, so a run that cannot start fails instead of holding the schedule under concurrencyPolicy Forbid", h.Subject)
		r.low("Alert on CronJobs whose last successful run is older than their period (kube_cronjob_status_last_successful_time)")
	},
}

// notRunAskRE is a question about a run that did not happen.
var notRunAskRE = regexp.MustCompile(`(?i)\b(?:did ?n[o']t|didn't|has ?n[o']t|hasn't|never|not)\s+(?:been\s+)?(?:run|ran|start|started|trigger|triggered|fire|fired|kick(?:ed)? off)\b|\bskipp(?:ed|ing)\b|\bmissed (?:run|runs|schedule)`)

// cronEveryRE is a schedule of every N minutes or hours ("*/15 * * * *",
// "0 */6 * * *").
var cronEveryRE = regexp.MustCompile(`^\s*(\*/(\d+)|\d{1,2})\s+(\*/(\d+)|\d{1,2}|\*)\s+\*\s+\*\s+(\*|\d)\s*$`)

// cronPeriod is how often a schedule runs: read from the common forms
// (every N minutes, hourly, every N hours, daily, weekly, the @ macros),
// else from the spacing of the runs the Jobs show; zero when not known.
func cronPeriod(schedule string, runs []cronRun) time.Duration {
	switch strings.TrimSpace(schedule) {
	case "@hourly":
		return time.Hour
	case "@daily", "@midnight":
		return 24 * time.Hour
	case "@weekly":
		return 7 * 24 * time.Hour
	}
	if m := findSubmatch(cronEveryRE, schedule); m != nil {
		switch {
		case m[5] != "*":
			if m[3] == "*" || m[4] != "" {
				return 0
			}
			return 7 * 24 * time.Hour
		case m[2] != "":
			n, _ := strconv.Atoi(m[2])
			if m[3] != "*" {
				return 0
			}
			return time.Duration(n) * time.Minute
		case m[4] != "":
			n, _ := strconv.Atoi(m[4])
			return time.Duration(n) * time.Hour
		case m[3] == "*":
			return time.Hour
		default:
			return 24 * time.Hour
		}
	}
	var p time.Duration
	for i := 1; i < len(runs); i++ {
		if d := runs[i].Scheduled.Sub(runs[i-1].Scheduled); d > 0 && (p == 0 || d < p) {
			p = d
		}
	}
	return p
}

func detectCronJobHeld(ev *Gathered, found []Finding) []Finding {
	now := ev.Window.End
	if now.IsZero() {
		return nil
	}
	runsOf := cronRuns(ev.K8s)
	asked := matchLine(notRunAskRE, ev.Scope.Message+" "+ev.Scope.Hint)
	var out []Finding
	for i := range ev.K8s.CronJobs {
		cj := &ev.K8s.CronJobs[i]
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cj.Spec.Suspend != nil && *cj.Spec.Suspend {
			continue
		}
		runs := runsOf[cj.Namespace+"/"+cj.Name]
		var active *cronRun
		for j := range runs {
			if runs[j].State == runActive || runs[j].State == runUnknown && slices.ContainsFunc(cj.Status.Active, func(a corev1.ObjectReference) bool { return a.Name == runs[j].Job.Name }) {
				active = &runs[j]
				break // the oldest active run is the one holding the others
			}
		}
		if active == nil || active.Scheduled.IsZero() {
			continue
		}
		period := cronPeriod(cj.Spec.Schedule, runs)
		if period <= 0 || now.Sub(active.Scheduled) < period {
			continue
		}
		// No run was created after the active one.
		if lst := cj.Status.LastScheduleTime; lst != nil && lst.Time.After(active.Scheduled.Add(time.Minute)) {
			continue
		}
		pod := stuckPodOfJob(ev.K8s.Pods, cj.Namespace, active.Job.Name)
		if pod == nil {
			continue
		}
		state := podWaitState(pod)
		if state == "" {
			continue
		}
		var skipped []string
		var last time.Time
		for t := active.Scheduled.Add(period); !t.After(now); t = t.Add(period) {
			if len(skipped) < 4 {
				skipped = append(skipped, t.UTC().Format("2006-01-02 15:04 UTC"))
			}
			last = t
		}
		n := int(now.Sub(active.Scheduled) / period)
		skippedWords := strings.Join(skipped, ", ")
		if n > len(skipped) {
			skippedWords += fmt.Sprintf(" and %d more", n-len(skipped))
		}
		f := Finding{Kind: KindCronJobHeld, Subject: cj.Name, Namespace: cj.Namespace, Object: "cronjob " + cj.Namespace + "/" + cj.Name,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: active.Scheduled}
		// Asked why a run did not happen, a run that was never created
		// answers it before one that ran and failed.
		if asked {
			f.Weight = 0.98
		}
		if !ev.Window.recent(f.Time) {
			f.Time = last
		}
		f.setFact("job", active.Job.Name)
		f.setFact("pod", pod.Name)
		f.setFact("pod_state", state)
		f.setFact("scheduled", active.Scheduled.UTC().Format("2006-01-02 15:04 UTC"))
		f.setFact("active_for", duration.HumanDuration(now.Sub(active.Scheduled)))
		f.setFact("skipped", fmt.Sprintf("%s: %s", plural(n, "run", "runs"), skippedWords))
		f.setFact("current", "true")
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("CronJob %s/%s (schedule %q, concurrencyPolicy Forbid): Job %s, scheduled %s, still active after %s; no Job created since", cj.Namespace, cj.Name, cj.Spec.Schedule, active.Job.Name, f.fact("scheduled"), f.fact("active_for")),
			fmt.Sprintf("pod %s/%s of Job %s: %s", pod.Namespace, pod.Name, active.Job.Name, state))
		// Why the pod waits: the finding on it (a mount, a pull, the
		// scheduler), the holder of its volume when another pod has it.
		if w := stuckPodCause(found, pod, active.Job.Name); w != nil {
			held := strings.TrimSpace(orWord(w.fact("message"), w.Summary))
			if m := w.fact("multi_attach"); m != "" {
				held = truncate(held, 200) + "; " + m
				f.setFact("holder", w.fact("multi_attach_holder"))
			}
			f.setFact("held_by", held)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", orWord(w.Object, "pod "+pod.Name), truncate(held, 400)))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("runs skipped meanwhile (concurrencyPolicy Forbid): %s", f.fact("skipped")))
		for j := len(runs) - 1; j >= 0; j-- {
			if r := runs[j]; r.State == runComplete && r.Scheduled.Before(active.Scheduled) {
				f.setFact("last_complete", r.label())
				break
			}
		}
		f.Summary = fmt.Sprintf("CronJob %s/%s skips its runs: Job %s still active since %s, its pod %s", cj.Namespace, cj.Name, active.Job.Name, f.fact("scheduled"), state)
		out = append(out, f)
	}
	return out
}

// stuckPodOfJob is a Job's pod that has not started: Pending, or a
// container still waiting to be created.
func stuckPodOfJob(pods []corev1.Pod, ns, job string) *corev1.Pod {
	for i := range pods {
		p := &pods[i]
		// A pod read from a table has no owner or labels: the Job's
		// name and the pod's five-character suffix.
		owner := jobOfPod(p)
		if owner == "" && strings.HasPrefix(p.Name, job+"-") && len(p.Name) == len(job)+6 {
			owner = job
		}
		if p.Namespace != ns && p.Namespace != "" || owner != job {
			continue
		}
		if podWaitState(p) != "" {
			return p
		}
	}
	return nil
}

// podWaitState says how a pod that has not started waits
// ("ContainerCreating", "Pending (unschedulable)"), empty when it runs or
// ended.
func podWaitState(p *corev1.Pod) string {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && (p.Status.Phase == corev1.PodPending || p.Status.Phase == "") {
			return w.Reason
		}
	}
	if p.Status.Phase == corev1.PodPending {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return "Pending (" + orWord(c.Reason, "not scheduled") + ")"
			}
		}
		return "Pending"
	}
	return ""
}

// stuckPodCause is the finding that says why a Job's stuck pod waits.
func stuckPodCause(found []Finding, p *corev1.Pod, job string) *Finding {
	var best *Finding
	for i := range found {
		f := &found[i]
		if f.Kind == KindJobFailed || f.Kind == KindDeploy || f.Kind == KindConfigChange || f.Kind == KindInfraChange {
			continue
		}
		if !strings.Contains(f.Object, p.Name) && f.Subject != job {
			continue
		}
		if best == nil || f.fact("multi_attach") != "" && best.fact("multi_attach") == "" || f.Weight > best.Weight && (best.fact("multi_attach") == "") == (f.fact("multi_attach") == "") {
			best = f
		}
	}
	return best
}
