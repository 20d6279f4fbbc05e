package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestSessionOutlived explains a failed run's expired token by the run's
// length against the session lifetime the evidence states: botocore's
// ExpiredToken with the process's own "after Ns" and the role's
// MaxSessionDuration (get-role's JSON); the Java SDK's "security token
// included in the request is expired" with the entrypoint's
// --duration-seconds and the Job's start and failure; the Go SDK's
// ExpiredToken with CloudTrail's requestParameters durationSeconds and the
// span of its dated lines. A run shorter than the session, a session
// lifetime nowhere stated, or a denial that is no expiry are not it.
func TestSessionOutlived(t *testing.T) {
	getRole := evidence.CommandOutput{Command: "aws iam get-role --role-name export-writer --query Role", Lines: []string{"{", `    "Arn": "arn:aws:iam::111122223333:role/export-writer",`, `    "MaxSessionDuration": 3600`, "}"}}
	entry := evidence.CommandOutput{Command: "kubectl exec deploy/backup -- cat /entrypoint.sh", Lines: []string{"creds=$(aws sts assume-role --role-arn \"$ROLE\" --role-session-name backup \\", "  --duration-seconds 7200 --query Credentials)"}}
	trail := LogSet{Source: "cloudtrail", Subject: "cloudtrail", Lines: []evidence.LogLine{{Text: `{"eventName": "AssumeRole", "requestParameters": {"roleArn": "arn:aws:iam::111122223333:role/etl", "roleSessionName": "etl-1", "durationSeconds": 900}}`}}}
	job := func(name string, ran time.Duration) batchv1.Job {
		start := metav1.NewTime(win.Start)
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "data"}}
		j.Status.StartTime = &start
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, LastTransitionTime: metav1.NewTime(win.Start.Add(ran))}}
		return j
	}
	boto := []string{
		"2026-11-19 02:00:58,000 WARNING export: retrying UploadPart part-00197.parquet (attempt 2/5) after ExpiredToken",
		"botocore.exceptions.ClientError: An error occurred (ExpiredToken) when calling the UploadPart operation: The provided token has expired.",
		"2026-11-19 02:01:34,000 ERROR export: export aborted after 3687s: 11/14 tables exported",
	}
	java := []string{"com.amazonaws.services.s3.model.AmazonS3Exception: The security token included in the request is expired (Service: Amazon S3; Status Code: 400; Error Code: ExpiredToken; Request ID: 8B4C2F)"}
	goSDK := []string{
		"2026-03-14T01:00:02Z INFO starting etl run",
		"2026-03-14T01:10:00Z INFO loaded 4 partitions",
		"2026-03-14T01:15:07Z ERROR put object: operation error S3: PutObject, https response error StatusCode: 400, api error ExpiredToken: The security token included in the request is expired",
	}
	cases := []struct {
		name  string
		ev    Gathered
		job   string
		lines []string
		life  string
	}{
		{"botocore, its own elapsed, the role's MaxSessionDuration", Gathered{Commands: []evidence.CommandOutput{getRole}}, "export-1", boto, "3600s"},
		{"Java SDK, --duration-seconds, the Job's start and failure", Gathered{Commands: []evidence.CommandOutput{entry}, K8s: K8sEvidence{Jobs: []batchv1.Job{job("backup-1", 2*time.Hour+time.Minute)}}}, "backup-1", java, "7200s"},
		{"Go SDK, CloudTrail durationSeconds, dated lines", Gathered{Logs: []LogSet{trail}}, "etl-1", goSDK, "900s"},
		{"a run shorter than its session", Gathered{Commands: []evidence.CommandOutput{entry}, K8s: K8sEvidence{Jobs: []batchv1.Job{job("backup-1", 20*time.Minute)}}}, "backup-1", java, ""},
		{"no session lifetime stated", Gathered{}, "export-1", boto, ""},
		{"a denial, not an expiry", Gathered{Commands: []evidence.CommandOutput{getRole}}, "export-1", []string{"2026-11-19 02:01:34,000 ERROR export: AccessDenied after 3687s"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := c.ev
			ev.Window = win
			f := Finding{Kind: KindJobFailed, Subject: "export", Namespace: "data", Facts: map[string]string{"job": c.job, "line": c.lines[len(c.lines)-1]}}
			ok := sessionOutlived(&ev, &f, c.lines)
			if ok != (c.life != "") || ok && f.fact("session_lifetime") != c.life {
				t.Fatalf("ok %v facts %v", ok, f.Facts)
			}
			if !ok {
				return
			}
			h := &Hypothesis{Kind: KindJobFailed, Subject: "export", Primary: []*Finding{&f}}
			d := describeSessionOutlived(h)
			for _, w := range []string{c.life, "session", "expired", f.fact("run_elapsed")} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}
