package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestCronTimeZone: a CronJob with no time zone, moved from a host's
// crontab whose zone a change names, runs its schedule's hour in UTC; its
// run and a slowdown of the asked service during it are quoted. One with
// a timeZone set, or no change naming a zone, is nothing.
func TestCronTimeZone(t *testing.T) {
	const session = `$ kubectl -n catalog get cronjobs
NAME            SCHEDULE       TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE
price-rebuild   0 2 * * *      <none>     False     0        70m             2d20h
sitemap-gen     */30 * * * *   <none>     False     0        10m             118d
`
	now := time.Date(2026, 11, 26, 3, 10, 0, 0, time.UTC)
	crons := readCronJobs(t, session, now, 2)
	run := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "price-rebuild-29405400", Namespace: "catalog"},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)}, CompletionTime: &metav1.Time{Time: time.Date(2026, 11, 26, 2, 42, 0, 0, time.UTC)}}}
	slow := Finding{Kind: KindLatency, Subject: "catalog-api", Time: time.Date(2026, 11, 26, 2, 3, 0, 0, time.UTC), Summary: "catalog-api p99 latency rose from 0.12 s to 1.9 s"}
	moved := evidence.Change{Timestamp: now.Add(-69 * time.Hour), Service: "price-rebuild", Kind: "infra",
		Description: "price-rebuild moved from crontab on pricing-batch-01 ('0 2 * * *', host TZ Asia/Singapore) to Kubernetes CronJob catalog/price-rebuild, same schedule string"}
	zoned := crons[0]
	zoned.Spec.TimeZone = new(string)
	*zoned.Spec.TimeZone = "Asia/Singapore"
	cases := []struct {
		name    string
		crons   []batchv1.CronJob
		changes []evidence.Change
		want    bool
	}{
		{"moved, no zone", crons, []evidence.Change{moved}, true},
		{"zone set", []batchv1.CronJob{zoned}, []evidence.Change{moved}, false},
		{"no change naming a zone", crons, []evidence.Change{{Timestamp: moved.Timestamp, Service: "price-rebuild", Kind: "deploy", Description: "price-rebuild 2026.11.2"}}, false},
	}
	for _, tc := range cases {
		ev := &Gathered{K8s: K8sEvidence{CronJobs: tc.crons, Jobs: []batchv1.Job{run}}, Earlier: tc.changes,
			Window: Window{Start: now.Add(-2 * time.Hour), End: now}, Scope: Scope{Service: "catalog-api", Namespace: "catalog"}}
		fs := detectCronTimeZone(ev, []Finding{slow})
		if (len(fs) == 1) != tc.want {
			t.Fatalf("%s: findings %+v", tc.name, fs)
		}
		if !tc.want {
			continue
		}
		h := &Hypothesis{Kind: KindCronTimeZone, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
		wantDescribed(t, h, Scope{}, "price-rebuild has no spec.timeZone", "read in UTC", "Asia/Singapore", "02:00 UTC, 10:00 in Asia/Singapore", "ran 42m", "catalog-api p99 latency rose")
		if len(fs[0].Evidence) < 4 || fs[0].Related[0] != "catalog-api" {
			t.Errorf("%s: %+v", tc.name, fs[0])
		}
	}
}

// TestCronTimeZoneLost: a CronJob whose zone a chart upgrade dropped (the
// values still set it under the old key), or whose runs moved from the
// zone's hour to the schedule's hour in UTC after a change of it, runs in
// UTC; the values, the shifted runs and the change are quoted. A CronJob
// that keeps its zone, runs that never moved, or no change of it between
// them are nothing.
func TestCronTimeZoneLost(t *testing.T) {
	now := time.Date(2026, 10, 20, 12, 10, 0, 0, time.UTC)
	table := func(tz string, names ...string) string {
		s := "$ kubectl get cronjob,jobs -n billing\n" +
			"NAME                           SCHEDULE      TIMEZONE           SUSPEND   ACTIVE   LAST SCHEDULE   AGE\n" +
			fmt.Sprintf("cronjob.batch/dunning-mailer   0 9 * * 1-5   %-18s False     0        3h10m           406d\n\n", tz) +
			"NAME                                STATUS     COMPLETIONS   DURATION   AGE\n"
		for _, n := range names {
			f := strings.Fields(n)
			s += fmt.Sprintf("job.batch/%-26s Complete   1/1           4m51s      %s\n", f[0], f[1])
		}
		return s
	}
	// Scheduled minutes since the epoch: 13:00 UTC (09:00 EDT) on Oct 16
	// and 19, 09:00 UTC on Oct 20.
	edt := []string{"dunning-mailer-29869260 3d23h", "dunning-mailer-29873580 23h", "dunning-mailer-29874780 3h10m"}
	same := []string{"dunning-mailer-29867820 4d23h", "dunning-mailer-29869260 3d23h", "dunning-mailer-29873580 23h"}
	chart := evidence.Change{Timestamp: time.Date(2026, 10, 19, 16, 2, 41, 0, time.UTC), Service: "dunning-mailer", Kind: "deploy",
		Description: "dunning-mailer chart 2.0.0: moved to the shared cronjob library chart (values now under cronjob.*)"}
	values := evidence.CommandOutput{Command: "helm get values dunning-mailer -n billing --revision 12",
		Lines: []string{"USER-SUPPLIED VALUES:", "schedule: 0 9 * * 1-5", "timeZone: America/New_York"}}
	nested := evidence.CommandOutput{Command: "helm get values dunning-mailer -n billing -o yaml",
		Lines: []string{"cronjob:", "  schedule: \"0 9 * * 1-5\"", "  time_zone: \"America/New_York\""}}
	cases := []struct {
		name    string
		session string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		want    []string // nil: no finding
	}{
		{"values keep the zone, runs moved", table("<none>", edt...), []evidence.CommandOutput{values}, []evidence.Change{chart},
			[]string{"read in UTC", "05:00 in America/New_York", "timeZone: America/New_York", "dunning-mailer-29873580 ran at 2026-10-19 13:00 UTC", "4h earlier", "chart 2.0.0"}},
		{"nested values key, no runs read", table("<none>"), []evidence.CommandOutput{nested}, []evidence.Change{chart},
			[]string{"05:00 in America/New_York", "time_zone: \"America/New_York\"", "lost with the deploy change"}},
		{"runs moved, no output names the zone", table("<none>", edt...), nil, []evidence.Change{chart},
			[]string{"a zone at UTC-4", "09:00 UTC", "4h earlier", "chart 2.0.0"}},
		{"zone set on the CronJob", table("America/New_York", edt...), []evidence.CommandOutput{values}, []evidence.Change{chart}, nil},
		{"runs never moved, nothing names a zone", table("<none>", same...), nil, []evidence.Change{chart}, nil},
		{"runs moved but no change between them", table("<none>", edt...), nil,
			[]evidence.Change{{Timestamp: now.Add(-30 * 24 * time.Hour), Service: "dunning-mailer", Kind: "deploy", Description: "dunning-mailer 5.6.2"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(tc.session), now)
			var k K8sEvidence
			for _, o := range res.Objects {
				switch x := o.(type) {
				case *batchv1.CronJob:
					k.CronJobs = append(k.CronJobs, *x)
				case *batchv1.Job:
					k.Jobs = append(k.Jobs, *x)
				}
			}
			ev := &Gathered{K8s: k, Commands: tc.cmds, Earlier: tc.changes,
				Window: Window{Start: now.Add(-time.Hour), End: now}, Scope: Scope{Service: "dunning-mailer", Namespace: "billing"}}
			fs := detectCronTimeZone(ev, nil)
			if (len(fs) == 1) != (tc.want != nil) {
				t.Fatalf("findings %+v", fs)
			}
			if tc.want == nil {
				return
			}
			h := &Hypothesis{Kind: KindCronTimeZone, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if fs[0].fact("why") == "" || len(fs[0].Evidence) < 3 {
				t.Errorf("%+v", fs[0])
			}
		})
	}
}
