package analyst

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A CronJob run skipped past its starting deadline is read from the
// MissSchedule event in each form a transcript holds it (describe cronjob's
// Events, a get events table, an event exporter's JSON), with the
// CronJob's deadline; a control-plane change before the scheduled time and
// the host's lines about kube-controller-manager say why the controller was
// late. A CronJob without the event is nothing.
func TestCronJobMissed(t *testing.T) {
	now := time.Date(2026, 3, 18, 8, 30, 0, 0, time.UTC)
	const cron = `$ kubectl get cronjob nightly-report -n finance -o yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-report
  namespace: finance
spec:
  schedule: "30 1 * * *"
  startingDeadlineSeconds: 120
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: report
            image: reports:3.1
          restartPolicy: OnFailure
status:
  lastScheduleTime: "2026-03-17T01:30:00Z"
`
	upgrade := evidence.Change{Timestamp: time.Date(2026, 3, 18, 1, 10, 0, 0, time.UTC), Service: "cluster", Kind: "infra", Description: "EKS control plane upgrade 1.30 -> 1.31"}
	hostLog := LogSet{Source: "cp-2.log", Subject: "cp-2", Host: true, Templates: []analysis.LogTemplate{{
		Example:   `Mar 18 01:24:10 cp-2 kubelet[1402]: E0318 01:24:10.118802 1402 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"kube-controller-manager\" with CrashLoopBackOff" pod="kube-system/kube-controller-manager-cp-2"`,
		FirstSeen: time.Date(2026, 3, 18, 1, 24, 10, 0, time.UTC), Count: 4, Incident: 4}}}
	for _, c := range []struct {
		name, events string
		changes      []evidence.Change
		logs         []LogSet
		says         []string
	}{
		{"describe cronjob's Events, a control-plane change", `$ kubectl describe cronjob nightly-report -n finance
Name:                          nightly-report
Namespace:                     finance
Schedule:                      30 1 * * *
Starting Deadline Seconds:     120s
Events:
  Type     Reason        Age   From                Message
  ----     ------        ----  ----                -------
  Warning  MissSchedule  6h    cronjob-controller  Missed scheduled time to start a job: Wed, 18 Mar 2026 01:30:00 +0000
`, []evidence.Change{upgrade}, nil, []string{"run scheduled for 2026-03-18T01:30:00Z was never created", "startingDeadlineSeconds 120", "EKS control plane upgrade"}},
		{"get events table, the controller manager failing on its host", `$ kubectl get events -n finance
LAST SEEN   TYPE      REASON         OBJECT                   MESSAGE
6h          Warning   MissSchedule   cronjob/nightly-report   Missed scheduled time to start a job: Wed, 18 Mar 2026 01:30:00 +0000
`, nil, []LogSet{hostLog}, []string{"kube-controller-manager on cp-2 was failing to start", "MissSchedule"}},
		{"an exporter's JSON, no cause found", `$ kubectl logs -n monitoring deploy/event-exporter
{"metadata":{"name":"nightly-report.1","namespace":"finance"},"involvedObject":{"kind":"CronJob","namespace":"finance","name":"nightly-report"},"reason":"MissSchedule","message":"Missed scheduled time to start a job: Wed, 18 Mar 2026 01:30:00 +0000","source":{"component":"cronjob-controller"},"lastTimestamp":"2026-03-18T01:52:00Z","type":"Warning"}
`, nil, nil, []string{"22m0s after the scheduled time", "its last run: 2026-03-17T01:30:00Z"}},
		{"runs created on time: nothing", `$ kubectl get events -n finance
LAST SEEN   TYPE     REASON             OBJECT                   MESSAGE
7h          Normal   SuccessfulCreate   cronjob/nightly-report   Created job nightly-report-29563290
`, []evidence.Change{upgrade}, []LogSet{hostLog}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(cron+c.events), now)
			ev := &Gathered{Changes: c.changes, Logs: c.logs, Window: Window{BaselineStart: now.Add(-24 * time.Hour), Start: now.Add(-12 * time.Hour), End: now}}
			for _, o := range res.Objects {
				if cj, ok := o.(*batchv1.CronJob); ok {
					ev.K8s.CronJobs = append(ev.K8s.CronJobs, *cj)
				}
			}
			ev.K8s.Events = append([]corev1.Event(nil), res.Events...)
			if len(ev.K8s.CronJobs) != 1 {
				t.Fatalf("%d CronJobs read", len(ev.K8s.CronJobs))
			}
			fs := detectCronJobMissed(ev, nil)
			wantWritten(t, KindCronMissed, fs, c.says)
			if len(fs) == 1 && (c.changes != nil || c.logs != nil) && fs[0].Weight < 0.9 {
				t.Errorf("weight %.2f with the controller's absence explained", fs[0].Weight)
			}
		})
	}
}
