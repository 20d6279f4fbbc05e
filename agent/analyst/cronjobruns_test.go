package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// readJobs reads the Jobs and CronJobs of a kubectl session.
func readJobs(session string, now time.Time) K8sEvidence {
	var k K8sEvidence
	for _, o := range kubetext.Parse([]byte(session), now).Objects {
		switch v := o.(type) {
		case *batchv1.Job:
			k.Jobs = append(k.Jobs, *v)
		case *batchv1.CronJob:
			k.CronJobs = append(k.CronJobs, *v)
		}
	}
	return k
}

func TestScheduledFromName(t *testing.T) {
	created := time.Date(2026, 11, 25, 10, 40, 3, 0, time.UTC)
	for _, c := range []struct {
		job  string
		want time.Time
	}{
		{"invoice-sync-29926720", time.Date(2026, 11, 25, 10, 40, 0, 0, time.UTC)},   // minutes (Kubernetes 1.21+)
		{"invoice-sync-1795603200", time.Date(2026, 11, 25, 10, 40, 0, 0, time.UTC)}, // seconds (the earlier controller)
		{"invoice-sync-28511400", time.Time{}},                                       // far from its creation
		{"invoice-sync-manual-x7k2p", time.Time{}},
		{"other-29926720", time.Time{}},
	} {
		got, ok := scheduledFromName("invoice-sync", c.job, created)
		if ok != !c.want.IsZero() || !got.Equal(c.want) {
			t.Errorf("%s: %v %v, want %v", c.job, got, ok, c.want)
		}
	}
}

// TestCronJobRuns reads the runs of CronJobs from kubectl get jobs and
// get cronjobs tables: which failed (by STATUS, or by not being complete
// nor among the CronJob's ACTIVE runs), when each was scheduled, and a
// run still active when the next ones started.
func TestCronJobRuns(t *testing.T) {
	now := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	piling := `$ kubectl -n billing get cronjobs
NAME           SCHEDULE       SUSPEND   ACTIVE   LAST SCHEDULE   AGE
invoice-sync   */10 * * * *   False     3        2m              30d
$ kubectl -n billing get jobs
NAME                    COMPLETIONS   DURATION   AGE
invoice-sync-29926690   1/1           4m12s      72m
invoice-sync-29926700   1/1           3m58s      62m
invoice-sync-29926710   1/1           4m30s      52m
invoice-sync-29926730   0/1           32m        32m
invoice-sync-29926740   0/1           22m        22m
invoice-sync-29926750   0/1           12m        12m
`
	failedOld := `$ kubectl -n reports get cronjobs
NAME             SCHEDULE     SUSPEND   ACTIVE   LAST SCHEDULE   AGE
nightly-report   20 7 * * *   False     0        4h              90d
$ kubectl -n reports get jobs
NAME                      COMPLETIONS   DURATION   AGE
nightly-report-29923640   1/1           3m12s      2d4h
nightly-report-29925080   0/1           28h        28h
nightly-report-29926520   0/1           4h         4h
`
	failedNew := `$ kubectl -n reports get jobs
NAME                      STATUS     COMPLETIONS   DURATION   AGE
nightly-report-29923640   Complete   1/1           3m12s      2d4h
nightly-report-29925080   Failed     0/1           28h        28h
nightly-report-29926520   Failed     0/1           4h         4h
`
	noCron := `$ kubectl -n reports get jobs
NAME                      COMPLETIONS   DURATION   AGE
nightly-report-29923640   1/1           3m12s      2d4h
nightly-report-29926520   0/1           4h         4h
`
	overran := `$ kubectl -n billing get jobs
NAME                    STATUS     COMPLETIONS   DURATION   AGE
invoice-sync-29926700   Complete   1/1           4m2s       62m
invoice-sync-29926710   Complete   1/1           14m        52m
invoice-sync-29926720   Complete   1/1           4m9s       42m
`
	cases := []struct {
		name, session string
		overlap       []string // what the overlap finding says; nil for none
		failed        []string // what the leading failed-Job finding says; nil for none
		onset         time.Time
	}{
		{name: "runs pile up", session: piling,
			overlap: []string{"invoice-sync-29926730 (scheduled 2026-11-25 10:50 UTC) is still active after 32m", "3 runs", "invoice-sync-29926740 at 11:00 UTC", "4m12s (median)"},
			onset:   time.Date(2026, 11, 25, 10, 50, 0, 0, time.UTC)},
		{name: "failed runs, kubectl before 1.28", session: failedOld,
			failed: []string{"nightly-report-29926520", "not among the active runs", "2 runs in a row", "nightly-report-29925080 (scheduled 2026-11-24 07:20 UTC)", "last run that completed was nightly-report-29923640"},
			onset:  time.Date(2026, 11, 24, 7, 20, 0, 0, time.UTC)},
		{name: "failed runs, STATUS column", session: failedNew,
			failed: []string{"nightly-report-29926520", "2 runs in a row", "in 3m12s"},
			onset:  time.Date(2026, 11, 24, 7, 20, 0, 0, time.UTC)},
		{name: "no CronJob: a run not complete may still run", session: noCron},
		{name: "a run that outlasted the interval", session: overran,
			overlap: []string{"invoice-sync-29926710 (scheduled 2026-11-25 10:30 UTC) was still active when the next runs", "it completed at 10:42 UTC"},
			onset:   time.Date(2026, 11, 25, 10, 40, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := readJobs(c.session, now)
			ov := detectRunOverlaps(k, w)
			fj := detectFailedJobs(k, nil)
			check := func(what string, fs []Finding, want []string) {
				if want == nil {
					if len(fs) != 0 {
						t.Errorf("%s: %+v", what, fs)
					}
					return
				}
				if len(fs) == 0 {
					t.Fatalf("no %s finding", what)
				}
				best := fs[0]
				for _, f := range fs {
					if f.Weight > best.Weight {
						best = f
					}
				}
				all := best.Summary + " " + strings.Join(best.Evidence, " ")
				for _, s := range want {
					if !strings.Contains(all, s) {
						t.Errorf("%s lacks %q: %s", what, s, all)
					}
				}
				if !best.Time.Equal(c.onset) {
					t.Errorf("%s onset %s, want %s", what, best.Time, c.onset)
				}
			}
			check("overlap", ov, c.overlap)
			check("failed Job", fj, c.failed)
		})
	}
}
