package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func jobPod(job, name string, created time.Time, phase corev1.PodPhase, exit int32) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", CreationTimestamp: metav1.NewTime(created),
		Labels:          map[string]string{"job-name": job},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Job", Name: job, APIVersion: "batch/v1"}}},
		Status: corev1.PodStatus{Phase: phase}}
	if phase == corev1.PodFailed || phase == corev1.PodSucceeded {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "backup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Reason: map[bool]string{true: "Error", false: "Completed"}[exit != 0],
			StartedAt: metav1.NewTime(created.Add(2 * time.Second)), FinishedAt: metav1.NewTime(created.Add(4 * time.Second))}}}}
	}
	return p
}

func TestFailedJobs(t *testing.T) {
	t0 := time.Date(2026, 9, 22, 2, 0, 0, 0, time.UTC)
	authLine := `pg_dump: error: connection to server at "orders-db.shop.svc.cluster.local" (10.100.62.14), port 5432 failed: FATAL:  password authentication failed for user "backup"`
	backoff := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "nightly-backup-29834040", Namespace: "ops"},
		Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", Type: "Warning",
		FirstTimestamp: metav1.NewTime(t0.Add(41 * time.Second))}
	cases := []struct {
		name     string
		pods     []corev1.Pod
		events   []corev1.Event
		logs     map[string][]evidence.LogLine
		want     int
		subject  string
		lineKind Kind
	}{
		{name: "backoff limit with the failing pod's log",
			pods:   []corev1.Pod{jobPod("nightly-backup-29834040", "nightly-backup-29834040-t6zvw", t0, corev1.PodFailed, 1)},
			events: []corev1.Event{backoff},
			logs:   map[string][]evidence.LogLine{"ops/nightly-backup-29834040-t6zvw/backup": {{Text: authLine}}},
			want:   1, subject: "nightly-backup", lineKind: KindAuth},
		{name: "event only (pods already deleted)", events: []corev1.Event{backoff}, want: 1, subject: "nightly-backup"},
		{name: "a later run of the CronJob succeeded: history",
			pods: []corev1.Pod{jobPod("nightly-backup-29834040", "nightly-backup-29834040-t6zvw", t0, corev1.PodFailed, 1),
				jobPod("nightly-backup-29835480", "nightly-backup-29835480-x2k9p", t0.Add(24*time.Hour), corev1.PodSucceeded, 0)},
			events: []corev1.Event{backoff}},
		{name: "a retry within the Job succeeded",
			pods: []corev1.Pod{jobPod("db-migrate", "db-migrate-abcde", t0, corev1.PodFailed, 1),
				jobPod("db-migrate", "db-migrate-fghij", t0.Add(time.Minute), corev1.PodSucceeded, 0)}},
		{name: "a running Job is not failed", pods: []corev1.Pod{jobPod("db-migrate", "db-migrate-abcde", t0, corev1.PodRunning, 0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectFailedJobs(K8sEvidence{Pods: c.pods, Events: c.events, PreviousLogs: c.logs}, nil)
			if len(fs) != c.want {
				t.Fatalf("%d findings %+v, want %d", len(fs), fs, c.want)
			}
			if c.want == 0 {
				return
			}
			f := fs[0]
			if f.Kind != KindJobFailed || f.Subject != c.subject || Kind(f.fact("line_kind")) != c.lineKind {
				t.Errorf("finding %s on %s (line kind %q), want job_failed on %s (%q)", f.Kind, f.Subject, f.fact("line_kind"), c.subject, c.lineKind)
			}
			h := &Hypothesis{Kind: f.Kind, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := describe(h, Scope{})
			if !strings.Contains(d, "nightly-backup-29834040") || c.lineKind != "" && !strings.Contains(d, "password authentication failed") {
				t.Errorf("description %q does not name the Job and its log's cause", d)
			}
		})
	}
}

// TestJobRetrySupersedesCrash checks that a Job pod's failure is history
// once a later pod of the same Job completed.
func TestJobRetrySupersedesCrash(t *testing.T) {
	t0 := time.Date(2026, 4, 28, 8, 45, 0, 0, time.UTC)
	failed := jobPod("nightly-export-29620710", "nightly-export-29620710-a1b2c", t0, corev1.PodFailed, 1)
	done := jobPod("nightly-export-29620710", "nightly-export-29620710-d3e4f", t0.Add(time.Minute), corev1.PodSucceeded, 0)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0.Add(-30 * time.Minute), End: t0.Add(30 * time.Minute)}
	for _, c := range []struct {
		pods     []corev1.Pod
		resolved bool
	}{{[]corev1.Pod{failed}, false}, {[]corev1.Pod{failed, done}, true}} {
		fs := DetectPods(c.pods, nil, w)
		if len(fs) == 0 {
			t.Fatalf("%d pods: no finding for the failed pod", len(c.pods))
		}
		if (fs[0].fact("resolved") != "") != c.resolved {
			t.Errorf("%d pods: resolved %q, want %v", len(c.pods), fs[0].fact("resolved"), c.resolved)
		}
	}
}

// TestJobCauseLine checks that a failed run's log is read for the
// mechanism behind the crash: a name that does not resolve before the
// fatal line it ends in, a throttled storage API before the deadline; and
// that a run whose pods are gone is read from its CronJob's log file.
func TestJobCauseLine(t *testing.T) {
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"DNS failure before the fatal line", []string{
			`time="2026-12-09T06:05:13Z" level=info msg="loaded 1184 due invoices from billing-db"`,
			`time="2026-12-09T06:05:18Z" level=error msg="smtp connect failed" addr="smtp-relay.mail.svc.cluster.local:587" error="dial tcp: lookup smtp-relay.mail.svc.cluster.local on 172.20.0.10:53: no such host"`,
			`time="2026-12-09T06:05:18Z" level=fatal msg="cannot send invoices: no SMTP connection" sent=0 pending=1184`,
		}, "no such host"},
		{"a Caused by line still wins", []string{
			`2026-03-14 02:00:09 ERROR [main] o.s.boot.SpringApplication : Application run failed`,
			`Caused by: org.postgresql.util.PSQLException: ERROR: relation "ledger_entries_v2" does not exist`,
		}, "Caused by"},
	}
	for _, c := range cases {
		if got := bestCauseLine(c.lines); !strings.Contains(got, c.want) {
			t.Errorf("%s: bestCauseLine = %q, want the line with %q", c.name, got, c.want)
		}
	}
	// A DeadlineExceeded run whose pod was deleted with the Job.
	t0 := time.Date(2027, 1, 7, 4, 0, 0, 0, time.UTC)
	k := K8sEvidence{Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "data", Name: "warehouse-etl-29913480"},
		Reason: "DeadlineExceeded", Type: "Warning", Message: "Job was active longer than specified deadline", FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0)}}}
	logs := []LogSet{logSet("warehouse-etl", false,
		`2027-01-07T02:00:44.000Z INFO [etl] extract done: 18,402,117 rows from orders-replica in 39.8s`,
		`2027-01-07T02:00:51.000Z WARN [etl] s3 PutObject warehouse/daily_orders/dt=2027-01-06/part-00001.parquet attempt 1/10 failed: SlowDown: Please reduce your request rate. (status code: 503, request id: A6A3A4506513270E)`)}
	fs := detectFailedJobs(k, logs)
	if len(fs) != 1 || !strings.Contains(fs[0].fact("line"), "SlowDown") {
		t.Fatalf("findings %+v, want the Job with the SlowDown line", fs)
	}
}

// TestFailedJobFromItsStatus: a Job known only as an object whose
// condition says Failed (a `kubectl get jobs` row, a describe page) is a
// failed run however long ago it ran, its pods' log gives the line, and a
// Job whose condition says Complete is not; the component the line's
// error names as answering with an HTTP error status is kept.
func TestFailedJobFromItsStatus(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC)
	job := func(name string, created time.Time, ct batchv1.JobConditionType, reason string) batchv1.Job {
		return batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "fin", CreationTimestamp: metav1.NewTime(created)},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: ct, Status: corev1.ConditionTrue, Reason: reason}}}}
	}
	logs := []LogSet{logSet("payout-sync-29920440", false,
		`time=2026-11-21T02:08:03.952Z level=WARN msg="request throttled" page=41 status=429 retry_after=60`,
		`time=2026-11-21T02:10:05.107Z level=ERROR msg="giving up on page" page=41 attempts=3 error="settleco: 429 Too Many Requests: rate limit exceeded"`)}
	k := K8sEvidence{Jobs: []batchv1.Job{
		job("payout-sync-29919000", t0.Add(-24*time.Hour), batchv1.JobComplete, ""),
		job("payout-sync-29920440", t0, batchv1.JobFailed, "BackoffLimitExceeded"),
		job("ledger-export-29920410", t0.Add(-30*time.Minute), batchv1.JobComplete, ""),
	}}
	fs := detectFailedJobs(k, logs)
	if len(fs) != 1 || fs[0].fact("job") != "payout-sync-29920440" || fs[0].fact("reason") != "BackoffLimitExceeded" {
		t.Fatalf("findings %+v, want the failed payout-sync run only", fs)
	}
	if !strings.Contains(fs[0].fact("line"), "429") || fs[0].fact("error_component") != "settleco" {
		t.Errorf("line %q dependency %q, want the 429 line and settleco", fs[0].fact("line"), fs[0].fact("error_component"))
	}
	// A later successful run of the same CronJob supersedes the failure.
	k.Jobs = append(k.Jobs, job("payout-sync-29921880", t0.Add(24*time.Hour), batchv1.JobComplete, ""))
	if fs := detectFailedJobs(k, logs); len(fs) != 0 {
		t.Errorf("findings %+v after a later success, want none", fs)
	}
}

func TestErrorComponent(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`level=ERROR msg="giving up" error="paystream: 429 Too Many Requests: {...}"`, "paystream"},
		{`level=error msg="upload failed" err="ledger-api: HTTP 503 Service Unavailable"`, "ledger-api"},
		{`ERROR sync aborted: error: billing-gw: status 502 bad gateway`, "billing-gw"},
		{`level=error error="dial tcp 10.0.0.4:443: connect: connection refused"`, ""},
		{`level=error error="post: 500 Internal Server Error"`, ""},
		{`level=error msg="payment declined" code=402`, ""},
	} {
		if got := errorComponent(c.line); got != c.want {
			t.Errorf("errorComponent(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}
