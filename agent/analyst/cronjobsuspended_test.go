package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	batchv1 "k8s.io/api/batch/v1"
)

// readCronJobs reads the CronJobs of a kubectl session, which must hold
// want of them.
func readCronJobs(t *testing.T, session string, now time.Time, want int) []batchv1.CronJob {
	t.Helper()
	var crons []batchv1.CronJob
	for _, o := range kubetext.Parse([]byte(session), now).Objects {
		if c, ok := o.(*batchv1.CronJob); ok {
			crons = append(crons, *c)
		}
	}
	if len(crons) != want {
		t.Fatalf("%d CronJobs read", len(crons))
	}
	return crons
}

// TestSuspendedCronJob: a CronJob the question names that a get cronjobs
// table shows suspended creates no runs; the change that suspended it and
// a later one that resumed its neighbours without it are quoted. Another
// suspended CronJob is background, and one not suspended is nothing.
func TestSuspendedCronJob(t *testing.T) {
	const session = `$ kubectl get cronjobs -n billing
NAME             SCHEDULE       TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE
dunning-mailer   5 * * * *      <none>     False     0        15m             211d
invoice-export   30 2 * * *     <none>     True      0        3d4h            301d
archive-sweep    0 4 * * 0      <none>     True      0        40d             3y
`
	now := time.Date(2026, 7, 8, 7, 20, 0, 0, time.UTC)
	crons := readCronJobs(t, session, now, 3)
	ev := &Gathered{K8s: K8sEvidence{CronJobs: crons}, Window: Window{BaselineStart: now.Add(-12 * time.Hour), Start: now.Add(-6 * time.Hour), End: now},
		Scope: Scope{Service: "invoice-export", Namespace: "billing"},
		Earlier: []evidence.Change{
			{Timestamp: now.Add(-58 * time.Hour), Service: "billing", Kind: "infra", Description: `ledger-db maintenance window: kubectl patch cronjob -n billing invoice-export ledger-rollup dunning-mailer -p '{"spec":{"suspend":true}}'`},
			{Timestamp: now.Add(-49 * time.Hour), Service: "billing", Kind: "infra", Description: `maintenance done: kubectl patch cronjob -n billing ledger-rollup dunning-mailer -p '{"spec":{"suspend":false}}'`},
		}}
	fs := detectSuspendedCronJobs(ev, nil)
	if len(fs) != 2 || fs[0].Subject != "invoice-export" || fs[1].Subject != "archive-sweep" {
		t.Fatalf("findings %+v", fs)
	}
	if fs[0].Weight < 0.9 || fs[1].Weight > 0.3 {
		t.Errorf("weights %.2f (asked) %.2f (background)", fs[0].Weight, fs[1].Weight)
	}
	h := &Hypothesis{Kind: KindCronSuspended, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
	wantDescribed(t, h, Scope{}, "suspended (spec.suspend: true)", "30 2 * * *", "maintenance window", "resumed other CronJobs but not this one")
	if !fs[0].Time.Equal(now.Add(-58 * time.Hour)) {
		t.Errorf("onset %s, want the suspending change", fs[0].Time)
	}
}
