package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	batchv1 "k8s.io/api/batch/v1"
)

// readHeldSession reads the CronJobs, Jobs and pods of a kubectl session.
func readHeldSession(session string, now time.Time) K8sEvidence {
	k := readJobs(session, now)
	for _, o := range kubetext.Parse([]byte(session), now).Objects {
		if p, ok := o.(*corev1.Pod); ok {
			k.Pods = append(k.Pods, *p)
		}
	}
	return k
}

// TestCronJobHeld: a CronJob under concurrencyPolicy Forbid whose oldest
// active run is older than its period, no Job created since, and whose
// pod has not started (ContainerCreating on a volume another pod holds,
// ImagePullBackOff, Pending unschedulable) skips its runs; what keeps the
// pod waiting is quoted. Under Allow, with the active run younger than
// the period, or with its pod running, nothing is concluded.
func TestCronJobHeld(t *testing.T) {
	now := time.Date(2026, 3, 12, 8, 0, 0, 0, time.UTC)
	describeCron := func(policy, schedule, active string) string {
		return `$ kubectl describe cronjob ledger-export -n finance
Name:                          ledger-export
Namespace:                     finance
Schedule:                      ` + schedule + `
Concurrency Policy:            ` + policy + `
Suspend:                       False
Successful Job History Limit:  3
Failed Job History Limit:      1
Starting Deadline Seconds:     <unset>
Pod Template:
  Labels:  app=ledger-export
  Containers:
   export:
    Image:      registry.example.com/ledger-export:2.1.0
    Port:       <none>
    Host Port:  <none>
Last Schedule Time:  Tue, 10 Mar 2026 02:00:00 +0000
Active Jobs:         ` + active + `
Events:              <none>
`
	}
	// Daily at 02:00: ledger-export-29554680 is 2026-03-10 02:00 UTC.
	jobs := `$ kubectl get jobs -n finance
NAME                     STATUS     COMPLETIONS   DURATION   AGE
ledger-export-29551800   Complete   1/1           14m        4d6h
ledger-export-29553240   Complete   1/1           15m        3d6h
ledger-export-29554680   Running    0/1           2d6h       2d6h
`
	pods := func(status string) string {
		return `$ kubectl get pods -n finance
NAME                           READY   STATUS              RESTARTS   AGE
ledger-export-29553240-q2x8p   0/1     Completed           0          3d6h
ledger-export-29554680-7kd2m   0/1     ` + status + `   0          2d6h
scratch-shell                  1/1     Running             0          2d20h
`
	}
	mount := Finding{Kind: KindMountFailure, Subject: "ledger-export-29554680", Object: "pod finance/ledger-export-29554680-7kd2m", Weight: 0.85}
	mount.setFact("message", `Multi-Attach error for volume "pvc-1f0c" Volume is already used by pod(s) scratch-shell`)
	mount.setFact("multi_attach", "the volume is attached to node ip-10-1-2-3, where pod scratch-shell uses it")
	mount.setFact("multi_attach_holder", "scratch-shell")
	pull := Finding{Kind: KindImagePull, Subject: "ledger-export-29554680", Object: "pod finance/ledger-export-29554680-7kd2m", Weight: 0.8,
		Summary: `Back-off pulling image "registry.example.com/ledger-export:2.1.1"`}
	cases := []struct {
		name    string
		session string
		found   []Finding
		ask     string
		want    []string // in the description; nil: nothing found
	}{
		{"forbid, volume held", describeCron("Forbid", "0 2 * * *", "ledger-export-29554680") + jobs + pods("ContainerCreating"), []Finding{mount},
			"why did the export not run last night", []string{"ContainerCreating", "Multi-Attach", "scratch-shell", "concurrencyPolicy Forbid", "2 runs: 2026-03-11 02:00 UTC, 2026-03-12 02:00 UTC"}},
		{"forbid, image pull", describeCron("Forbid", "0 2 * * *", "ledger-export-29554680") + jobs + pods("ImagePullBackOff"), []Finding{pull},
			"", []string{"ImagePullBackOff", "Back-off pulling image", "runs were skipped"}},
		{"schedule not read: runs' spacing", describeCron("Forbid", "0 2 1-31 * *", "ledger-export-29554680") + jobs + pods("ContainerCreating"), nil,
			"", []string{"ContainerCreating", "2 runs"}},
		{"allow", describeCron("Allow", "0 2 * * *", "ledger-export-29554680") + jobs + pods("ContainerCreating"), []Finding{mount}, "", nil},
		{"pod running", describeCron("Forbid", "0 2 * * *", "ledger-export-29554680") + jobs + pods("Running          "), nil, "", nil},
		{"weekly, within its period", describeCron("Forbid", "0 2 * * 2", "ledger-export-29554680") + jobs + pods("ContainerCreating"), []Finding{mount}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := readHeldSession(c.session, now)
			ev := &Gathered{K8s: k, Window: Window{BaselineStart: now.Add(-12 * time.Hour), Start: now.Add(-6 * time.Hour), End: now},
				Scope: Scope{Namespace: "finance", Message: c.ask}}
			fs := detectCronJobHeld(ev, c.found)
			if c.want == nil {
				if len(fs) > 0 {
					t.Fatalf("found %s", fs[0].Summary)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "ledger-export" || fs[0].fact("job") != "ledger-export-29554680" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindCronJobHeld, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if asked := c.ask != ""; asked != (fs[0].Weight > 0.95) {
				t.Errorf("weight %.2f for question %q", fs[0].Weight, c.ask)
			}
		})
	}
}

// TestCronPeriod: the common schedule forms and the @ macros; another
// form falls back to the spacing of the runs.
func TestCronPeriod(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"*/15 * * * *": 15 * time.Minute, "5 * * * *": time.Hour, "0 */6 * * *": 6 * time.Hour, "30 1 * * *": 24 * time.Hour,
		"0 4 * * 0": 7 * 24 * time.Hour, "@daily": 24 * time.Hour, "@hourly": time.Hour, "0 9 1 * *": 0,
	} {
		if got := cronPeriod(s, nil); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
	j := func(name string) *batchv1.Job { x := &batchv1.Job{}; x.Name = name; return x }
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	runs := []cronRun{{Job: j("a"), Scheduled: t0}, {Job: j("b"), Scheduled: t0.Add(12 * time.Hour)}, {Job: j("c"), Scheduled: t0.Add(24 * time.Hour)}}
	if got := cronPeriod("0 0,12 * * *", runs); got != 12*time.Hour {
		t.Errorf("from runs: %s", got)
	}
}
