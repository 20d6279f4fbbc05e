package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
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
		d := describe(h, Scope{})
		for _, w := range []string{"price-rebuild has no spec.timeZone", "read in UTC", "Asia/Singapore", "02:00 UTC, 10:00 in Asia/Singapore", "ran 42m", "catalog-api p99 latency rose"} {
			if !strings.Contains(d, w) {
				t.Errorf("%s: %q does not say %q", tc.name, d, w)
			}
		}
		if len(fs[0].Evidence) < 4 || fs[0].Related[0] != "catalog-api" {
			t.Errorf("%s: %+v", tc.name, fs[0])
		}
	}
}
