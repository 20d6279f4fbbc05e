package analyst

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Why a CronJob's runs overlap and what it costs: concurrencyPolicy
// Allow (set or left to its default) and a lock whose TTL a run outlives,
// in a Go service's plain log, a Python job's JSON log and a Java
// (ShedLock-like) log. Forbid, or no sign of a lock lost, says nothing
// more than the overlap.
func TestOverlapChain(t *testing.T) {
	cron := func(policy batchv1.ConcurrencyPolicy) batchv1.CronJob {
		return batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "price-sync", Namespace: "shop"},
			Spec: batchv1.CronJobSpec{Schedule: "*/15 * * * *", ConcurrencyPolicy: policy}}
	}
	cases := []struct {
		name  string
		cron  batchv1.CronJob
		lines []string
		want  []string
		not   []string
	}{
		{"Go plain log, policy Allow", cron(batchv1.AllowConcurrent), []string{
			`2026-03-14T09:40:02.131Z INFO  lock: acquired key=lock:price-sync owner=price-sync-2992-p7 ttl=900s`,
			`2026-03-14T09:58:09.650Z WARN  lock: release skipped, key=lock:price-sync now owned by price-sync-2993-8f`},
			[]string{"concurrencyPolicy Allow lets the next run start", `"*/15 * * * *"`, "expires after 900s", "now owned by"}, nil},
		{"Python JSON log, policy left to its default", cron(""), []string{
			`{"ts": "2026-03-14T09:40:02Z", "level": "INFO", "msg": "redis lock acquired", "lock": "price-sync", "expires_in": "600"}`,
			`{"ts": "2026-03-14T09:52:10Z", "level": "WARNING", "msg": "redis lock lost before release", "lock": "price-sync"}`},
			[]string{"concurrencyPolicy Allow (the default)", "lock lost before release"}, nil},
		{"Forbid and no lock lost", cron(batchv1.ForbidConcurrent), []string{
			`2026-03-14T09:40:02.131Z INFO  lock: acquired key=lock:price-sync ttl=900s`},
			nil, []string{"concurrencyPolicy", "lock the runs take"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Window: win, Logs: []LogSet{minedSet("price-sync-2993-8f", false, 0, c.lines...)}}
			ev.K8s.CronJobs = []batchv1.CronJob{c.cron}
			f := Finding{Kind: KindJobOverlap, Subject: "price-sync", Namespace: "shop", Summary: "CronJob price-sync runs pile up: 2 runs active at once", Weight: 0.75}
			f.setFact("cronjob", "price-sync")
			overlapChain(ev, &f)
			h := &Hypothesis{Kind: KindJobOverlap, Subject: "price-sync", Primary: []*Finding{&f}, Onset: win.Start}
			wantDescribed(t, h, Scope{}, c.want...)
			d := describe(h, Scope{})
			for _, n := range c.not {
				if strings.Contains(d, n) {
					t.Errorf("description says %q: %s", n, d)
				}
			}
		})
	}
}
