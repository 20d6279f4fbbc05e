package analyst

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The runs of a CronJob, as the Jobs it created show them (a kubectl get
// jobs table, -o yaml): when each was scheduled (its name ends in the
// scheduled minute since the epoch, <cronjob>-29926720, or the second
// with controllers before Kubernetes 1.21), how long it ran and how it
// ended. A table of kubectl before 1.28 has no STATUS column and does not
// tell a run that failed from one still running (both "0/1" with DURATION
// up to now); the CronJob's ACTIVE count does: the newest runs not
// complete are its active ones, the older ones failed. Read by the failed
// Job and the overlapping runs mechanisms.

// runState is how a run stands.
type runState int

const (
	runUnknown runState = iota // not complete; whether it runs is not known
	runActive
	runComplete
	runFailed
)

func (s runState) String() string {
	return [...]string{"not complete", "active", "complete", "failed"}[s]
}

// cronRun is one run of a CronJob.
type cronRun struct {
	Job       *batchv1.Job
	Scheduled time.Time // from the name, else the Job's creation
	Start     time.Time // zero when not known
	End       time.Time // completion; zero while it runs or when not known
	State     runState
	// Inferred: the state was worked out from the CronJob's active count
	// (not the Job's own condition).
	Inferred bool
}

// ran is how long a run ran, to its end or to now (zero when not known).
func (r cronRun) ran(now time.Time) time.Duration {
	switch {
	case r.Start.IsZero():
		return 0
	case !r.End.IsZero():
		return r.End.Sub(r.Start)
	case r.State == runActive && !now.IsZero():
		return now.Sub(r.Start)
	}
	return 0
}

// label is "name (scheduled 10:40 UTC)".
func (r cronRun) label() string {
	return fmt.Sprintf("%s (scheduled %s)", r.Job.Name, r.Scheduled.UTC().Format("2006-01-02 15:04 UTC"))
}

// scheduledFromName reads the time a CronJob's Job was scheduled for from
// its name: minutes since the epoch (8 digits), or seconds (10 digits).
// ok is false for a name that ends in no such number or one far from the
// Job's creation (when known).
func scheduledFromName(cron, job string, created time.Time) (time.Time, bool) {
	rest, ok := strings.CutPrefix(job, cron+"-")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var t time.Time
	switch len(rest) {
	case 8:
		t = time.Unix(n*60, 0).UTC()
	case 10:
		t = time.Unix(n, 0).UTC()
	default:
		return time.Time{}, false
	}
	if t.Year() < 2015 || !created.IsZero() && (t.Sub(created) > 26*time.Hour || created.Sub(t) > 26*time.Hour) {
		return time.Time{}, false
	}
	return t, true
}

// cronOfJob names the CronJob that created a Job: its owner, else its
// name.
func cronOfJob(j *batchv1.Job) string {
	for _, o := range j.OwnerReferences {
		if o.Kind == "CronJob" {
			return o.Name
		}
	}
	return cronJobOf(j.Name)
}

// cronRuns returns the runs of each CronJob ("ns/name"), oldest first.
func cronRuns(k K8sEvidence) map[string][]cronRun {
	out := map[string][]cronRun{}
	for i := range k.Jobs {
		j := &k.Jobs[i]
		cj := cronOfJob(j)
		if cj == "" {
			continue
		}
		r := cronRun{Job: j, Scheduled: j.CreationTimestamp.Time}
		if t, ok := scheduledFromName(cj, j.Name, j.CreationTimestamp.Time); ok {
			r.Scheduled = t
		}
		if j.Status.StartTime != nil {
			r.Start = j.Status.StartTime.Time
		}
		if j.Status.CompletionTime != nil {
			r.End = j.Status.CompletionTime.Time
		}
		r.State = jobState(j)
		out[j.Namespace+"/"+cj] = append(out[j.Namespace+"/"+cj], r)
	}
	for key, runs := range out {
		slices.SortStableFunc(runs, func(a, b cronRun) int { return a.Scheduled.Compare(b.Scheduled) })
		ns, name, _ := strings.Cut(key, "/")
		if cj := cronJobNamed(k.CronJobs, ns, name); cj != nil {
			inferActive(runs, cj)
		}
	}
	return out
}

// jobState is what a Job's own status says of it.
func jobState(j *batchv1.Job) runState {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobFailed:
			return runFailed
		case batchv1.JobComplete, batchv1.JobSuccessCriteriaMet:
			return runComplete
		}
	}
	if want := j.Spec.Completions; want != nil && *want > 0 && j.Status.Succeeded >= *want {
		return runComplete
	}
	if j.Status.Active > 0 {
		return runActive
	}
	return runUnknown
}

func cronJobNamed(cjs []batchv1.CronJob, ns, name string) *batchv1.CronJob {
	for i := range cjs {
		if cjs[i].Name == name && (ns == "" || cjs[i].Namespace == "" || cjs[i].Namespace == ns) {
			return &cjs[i]
		}
	}
	return nil
}

// inferActive settles the runs whose state is not known by the CronJob's
// active runs: those it names are active, the others failed; when it only
// counts them (a table's ACTIVE), the newest ones not complete are.
func inferActive(runs []cronRun, cj *batchv1.CronJob) {
	named := map[string]bool{}
	for _, a := range cj.Status.Active {
		if a.Name != "" {
			named[a.Name] = true
		}
	}
	left := len(cj.Status.Active) - len(named)
	for i := range runs {
		if runs[i].State == runActive {
			left-- // counted among the CronJob's active runs
		}
	}
	for i := len(runs) - 1; i >= 0; i-- {
		r := &runs[i]
		if r.State != runUnknown {
			continue
		}
		r.Inferred = true
		switch {
		case named[r.Job.Name]:
			r.State = runActive
		case left > 0:
			r.State = runActive
			left--
		default:
			r.State = runFailed
		}
	}
}

// typicalRun is the median time the runs that completed took (zero when
// none did).
func typicalRun(runs []cronRun) time.Duration {
	var ds []time.Duration
	for _, r := range runs {
		if r.State == runComplete {
			if d := r.ran(time.Time{}); d > 0 {
				ds = append(ds, d)
			}
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// lastComplete is the latest run that completed before run i (nil for
// none).
func lastComplete(runs []cronRun, i int) *cronRun {
	for j := i - 1; j >= 0; j-- {
		if runs[j].State == runComplete {
			return &runs[j]
		}
	}
	return nil
}
