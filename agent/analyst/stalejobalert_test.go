package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStaleJobFailure answers a failed-Job alert (KubeJobFailed's
// job_name label) or a question naming the Job, for one run of a CronJob
// whose later runs completed: the CronJob works, the run's log says why it
// failed, the alert stays for the failed Job kept in history. A CronJob
// whose latest run failed too, or a failed run with no run after it, is
// left to the failed-Job mechanism.
func TestStaleJobFailure(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	limit := int32(1)
	cron := batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "db-dump", Namespace: "ops"}, Spec: batchv1.CronJobSpec{FailedJobsHistoryLimit: &limit}}
	job := func(minute int, state batchv1.JobConditionType) batchv1.Job {
		name := "db-dump-" + itoa(t0.Unix()/60+int64(minute))
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops", CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute)),
			OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "db-dump"}}}}
		j.Status.Conditions = []batchv1.JobCondition{{Type: state, Status: corev1.ConditionTrue}}
		return j
	}
	failedPod := func(j batchv1.Job, suffix string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: j.Name + "-" + suffix, Namespace: "ops"}}
		p.Status.Phase = corev1.PodFailed
		return p
	}
	first, second, third := job(180, batchv1.JobFailed), job(240, batchv1.JobComplete), job(300, batchv1.JobComplete)
	thirdFailed := job(300, batchv1.JobFailed)
	s3 := "upload failed: /scratch/a.dump to s3://backups/a.dump An error occurred (RequestTimeout) when calling the UploadPart operation (reached max retries: 4): Your socket connection to the server was not read from or written to within the timeout period."
	gsutil := "ERROR: (gcloud.storage.cp) HTTPSConnectionPool(host='storage.googleapis.com', port=443): Read timed out. (read timeout=60)"
	logOf := func(pod, line string) []LogSet {
		tp := analysis.LogTemplate{Template: line, Example: line, Source: pod, Sources: []string{pod}, Incident: 1}
		return []LogSet{{Source: pod, Subject: "db-dump", Templates: []analysis.LogTemplate{tp}}}
	}
	kubeJobFailed := []evidence.Alert{{Name: "KubeJobFailed", Status: "firing", StartsAt: t0.Add(200 * time.Minute), Labels: map[string]string{"alertname": "KubeJobFailed", "job_name": first.Name, "namespace": "ops"}}}
	pod1 := failedPod(first, "x7k2p")
	cases := []struct {
		name   string
		k      K8sEvidence
		logs   []LogSet
		alerts []evidence.Alert
		msg    string
		want   bool
		says   []string
	}{
		{"KubeJobFailed label, aws-cli S3 timeout", K8sEvidence{CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{first, second, third}, Pods: []corev1.Pod{pod1}},
			logOf(pod1.Name, s3), kubeJobFailed, "is the backup broken?", true,
			[]string{"CronJob db-dump is not broken", first.Name, "RequestTimeout", "2 later runs since then completed", "KubeJobFailed keeps firing", "failedJobsHistoryLimit 1"}},
		{"Job named in the question, gcloud timeout in the previous log", K8sEvidence{CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{first, second}, Pods: []corev1.Pod{pod1},
			PreviousLogs: map[string][]evidence.LogLine{"ops/" + pod1.Name + "/dump": {{Text: gsutil}}}},
			nil, nil, "why did " + first.Name + " fail? we get a failed job alert", true,
			[]string{"only one run failed", "Read timed out", "1 later run since then completed"}},
		{"the latest run failed too", K8sEvidence{CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{first, second, thirdFailed}, Pods: []corev1.Pod{pod1}},
			logOf(pod1.Name, s3), kubeJobFailed, "", false, nil},
		{"no run after the failed one", K8sEvidence{CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{first}, Pods: []corev1.Pod{pod1}},
			logOf(pod1.Name, s3), kubeJobFailed, "", false, nil},
		{"the Job is not asked about", K8sEvidence{CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{first, second}, Pods: []corev1.Pod{pod1}},
			logOf(pod1.Name, s3), nil, "checkout is slow", false, nil},
	}
	for _, c := range cases {
		g := &gatherer{k8s: c.k, logSets: c.logs, sc: Scope{Message: c.msg}}
		res := &finding.Result{Summary: "Root cause: web: crash", RootCause: finding.RootCause{Description: "web crashes", Confidence: 90}, Verdict: finding.VerdictIdentified}
		got := g.answerStaleJobFailure(res, c.alerts)
		if got != c.want {
			t.Errorf("%s: answered %v, want %v", c.name, got, c.want)
			continue
		}
		if !got {
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(res.RootCause.Description, s) {
				t.Errorf("%s: description %q does not say %q", c.name, res.RootCause.Description, s)
			}
		}
		if res.RootCause.Confidence > 70 || len(res.RuledOut) == 0 || !strings.Contains(res.RuledOut[0].Hypothesis, "web") {
			t.Errorf("%s: confidence %v, ruled out %v", c.name, res.RootCause.Confidence, res.RuledOut)
		}
	}
}
