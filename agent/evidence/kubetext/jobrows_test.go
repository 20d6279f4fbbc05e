package kubetext_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// kubectl get jobs prints DURATION from a Job's start to its completion,
// or to now when it has none (running, or failed); STATUS (kubectl 1.28+)
// tells which. kubectl get cronjobs counts the active runs.
func TestJobAndCronJobRows(t *testing.T) {
	ref := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(`$ kubectl -n billing get cronjobs
NAME           SCHEDULE       SUSPEND   ACTIVE   LAST SCHEDULE   AGE
invoice-sync   */10 * * * *   False     4        2m              30d
$ kubectl -n billing get jobs
NAME                    COMPLETIONS   DURATION   AGE
invoice-sync-29926700   1/1           3m58s      62m
invoice-sync-29926720   0/1           42m        42m
$ kubectl -n reports get jobs
NAME                      STATUS     COMPLETIONS   DURATION   AGE
nightly-report-29923640   Complete   1/1           3m12s      2d4h
nightly-report-29926520   Failed     0/1           4h         4h
nightly-report-29926580   Running    0/1           3h         3h
`), ref)
	cj := object[*batchv1.CronJob](t, res, "billing", "invoice-sync")
	if len(cj.Status.Active) != 4 || cj.Status.Active[0].Kind != "Job" || cj.Status.Active[0].Name != "" {
		t.Errorf("active runs %+v, want 4 unnamed", cj.Status.Active)
	}
	tests := []struct {
		ns, name       string
		start, end     time.Duration // before ref; end -1 for none
		active         int32
		failed, passed bool
	}{
		{"billing", "invoice-sync-29926700", 62 * time.Minute, 62*time.Minute - (3*time.Minute + 58*time.Second), 0, false, false},
		{"billing", "invoice-sync-29926720", 42 * time.Minute, -1, 0, false, false},
		{"reports", "nightly-report-29923640", 52 * time.Hour, 52*time.Hour - (3*time.Minute + 12*time.Second), 0, false, true},
		{"reports", "nightly-report-29926520", 4 * time.Hour, -1, 0, true, false},
		{"reports", "nightly-report-29926580", 3 * time.Hour, -1, 1, false, false},
	}
	for _, tc := range tests {
		j := object[*batchv1.Job](t, res, tc.ns, tc.name)
		if j.Status.StartTime == nil || !j.Status.StartTime.Time.Equal(ref.Add(-tc.start)) {
			t.Errorf("%s: start %v, want %v", tc.name, j.Status.StartTime, ref.Add(-tc.start))
		}
		switch {
		case tc.end < 0 && j.Status.CompletionTime != nil:
			t.Errorf("%s: completion %v on a Job that did not complete", tc.name, j.Status.CompletionTime)
		case tc.end >= 0 && (j.Status.CompletionTime == nil || !j.Status.CompletionTime.Time.Equal(ref.Add(-tc.end))):
			t.Errorf("%s: completion %v, want %v", tc.name, j.Status.CompletionTime, ref.Add(-tc.end))
		}
		if j.Status.Active != tc.active {
			t.Errorf("%s: active %d, want %d", tc.name, j.Status.Active, tc.active)
		}
		var failed, passed bool
		for _, c := range j.Status.Conditions {
			failed = failed || c.Type == batchv1.JobFailed
			passed = passed || c.Type == batchv1.JobComplete
		}
		if failed != tc.failed || passed != tc.passed {
			t.Errorf("%s: conditions %+v", tc.name, j.Status.Conditions)
		}
	}
}
