package analyst

import (
	"strings"
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

// TestSuspendedCronJobHostCommands: the commands a runbook or a script
// logged suspend the CronJob by name (a loop, or one patch) and resume its
// neighbours by a label selector its labels do not match; a managedFields
// listing (yq YAML or jq JSON) says who last wrote spec.suspend.
func TestSuspendedCronJobHostCommands(t *testing.T) {
	now := time.Date(2026, 3, 12, 8, 0, 0, 0, time.UTC)
	suspended := true
	cj := batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "15 2 * * *", Suspend: &suspended}}
	cj.Name, cj.Namespace = "nightly-rollup", "reports"
	cj.Labels = map[string]string{"app.kubernetes.io/part-of": "reporting", "team": "data"}
	at := func(h int) time.Time { return now.Add(-time.Duration(h) * time.Hour) }
	for _, tc := range []struct {
		name     string
		lines    []evidence.LogLine
		managed  string
		want     []string
		resumeBy string
	}{
		{"loop by name, resume by selector", []evidence.LogLine{
			{Time: at(40), Source: "logs/maintenance.log", Text: `2026-03-10T16:00:00Z $ for c in nightly-rollup hourly-sync; do kubectl patch cronjob -n reports $c -p '{"spec":{"suspend":true}}'; done`},
			{Time: at(37), Source: "logs/maintenance.log", Text: `2026-03-10T19:00:00Z $ kubectl patch cronjobs -n reports -l app.kubernetes.io/part-of=batch --type=merge -p '{"spec":{"suspend":false}}'`},
		}, "manager: kubectl-patch\noperation: Update\ntime: \"2026-03-10T16:00:00Z\"\n",
			[]string{"maintenance.log", "selects CronJobs by the label app.kubernetes.io/part-of=batch", "left this one suspended"}, "app.kubernetes.io/part-of=batch"},
		{"single patch, resume by name of others", []evidence.LogLine{
			{Time: at(30), Source: "ci/job-8812.log", Text: `kubectl -n reports patch cj nightly-rollup --patch '{"spec": {"suspend": true}}'`},
			{Time: at(29), Source: "ci/job-8812.log", Text: `kubectl -n reports patch cj hourly-sync --patch '{"spec": {"suspend": false}}'`},
		}, `{"manager":"kubectl-patch","operation":"Update","time":"2026-03-11T02:00:00Z"}`,
			[]string{"job-8812.log", "hourly-sync", "resumed other CronJobs but not this one"}, ""},
		{"selector suspends it too", []evidence.LogLine{
			{Time: at(30), Source: "ops.log", Text: `2026-03-11T02:00:00Z kubectl patch cronjob -n reports --selector=team=data -p '{"spec":{"suspend":true}}'`},
		}, "", []string{"ops.log", "--selector=team=data"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{CronJobs: []batchv1.CronJob{cj}}, HostCommands: tc.lines,
				Window: Window{BaselineStart: now.Add(-12 * time.Hour), Start: now.Add(-6 * time.Hour), End: now},
				Scope:  Scope{Service: "nightly-rollup", Namespace: "reports"}}
			if tc.managed != "" {
				ev.Commands = []evidence.CommandOutput{{Command: `kubectl get cj -n reports nightly-rollup -o yaml --show-managed-fields | yq '.metadata.managedFields[] | select(.fieldsV1."f:spec"."f:suspend")'`, Lines: strings.Split(tc.managed, "\n")}}
			}
			fs := detectSuspendedCronJobs(ev, nil)
			if len(fs) != 1 || fs[0].fact("current") != "true" {
				t.Fatalf("findings %+v", fs)
			}
			if !fs[0].Time.Equal(tc.lines[0].Time) {
				t.Errorf("onset %s, want the suspending command's", fs[0].Time)
			}
			if fs[0].fact("resume_selector") != tc.resumeBy {
				t.Errorf("resume selector %q", fs[0].fact("resume_selector"))
			}
			if tc.managed != "" && len(fs[0].Evidence) != len(tc.lines)+2 {
				t.Errorf("evidence %q", fs[0].Evidence)
			}
			h := &Hypothesis{Kind: KindCronSuspended, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}

// TestSelectorMatches: equality, inequality and existence terms of a
// kubectl label selector against an object's labels.
func TestSelectorMatches(t *testing.T) {
	labels := map[string]string{"app": "ledger", "tier": "batch"}
	for line, want := range map[string]int{
		`kubectl patch cj -l app=ledger -p x`:           1,
		`kubectl patch cj -l app=ledger,tier=web -p x`:  -1,
		`kubectl patch cj -l 'app!=billing' -p x`:       1,
		`kubectl patch cj --selector=app==billing -p x`: -1,
		`kubectl patch cj --selector tier -p x`:         1,
		`kubectl patch cj -l owner -p x`:                -1,
		`kubectl patch cj ledger -p '{"spec":{}}'`:      0,
	} {
		if got := selectorMatches(line, labels); got != want {
			t.Errorf("%s: %d, want %d", line, got, want)
		}
	}
}
