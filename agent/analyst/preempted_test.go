package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

func preemptedEvent(pod, msg string, at time.Time) corev1.Event {
	return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "etl", Name: pod}, Reason: "Preempted", Type: corev1.EventTypeNormal,
		Message: msg, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1}
}

func TestPreemption(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 1, 0, 0, 0, time.UTC)
	podTable := evidence.CommandOutput{Run: "kubectl get pods -n gpu -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,PRIORITYCLASS:.spec.priorityClassName,NODE:.spec.nodeName", Lines: []string{
		"NAME               UID                                    PRIORITYCLASS   NODE",
		"trainer-0          0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e   gpu-critical    node-a",
		"idle-7c9d8-x2k4p   5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9   <none>          node-b"}}
	pcTable := evidence.CommandOutput{Run: "kubectl get pc", Lines: []string{
		"NAME                      VALUE        GLOBAL-DEFAULT   AGE     PREEMPTIONPOLICY",
		"gpu-critical              500000       false            1d      PreemptLowerPriority",
		"etl-default               1000         false            200d    PreemptLowerPriority"}}
	cron := batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "etl-load", Namespace: "etl"}}
	cron.Spec.JobTemplate.Spec.Template.Spec.PriorityClassName = "etl-default"
	failed := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "etl-load-29920000", Namespace: "etl"}, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}}
	cases := []struct {
		name   string
		ev     Gathered
		want   []string
		nFound int
	}{
		{"preemptors by UID, classes and values listed, the Job at its backoff limit",
			Gathered{K8s: K8sEvidence{
				Events: []corev1.Event{
					preemptedEvent("etl-load-29920000-8kq2w", "Preempted by pod 0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e on node node-a", t0),
					preemptedEvent("etl-load-29920000-p4m7z", "Preempted by pod 0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e on node node-a", t0.Add(time.Hour))},
				CronJobs: []batchv1.CronJob{cron}, Jobs: []batchv1.Job{failed}},
				Commands: []evidence.CommandOutput{podTable, pcTable},
				Earlier:  []evidence.Change{{Service: "gpu-platform", Description: "add PriorityClass gpu-critical for training pods", Timestamp: t0.Add(-48 * time.Hour)}},
				Scope:    Scope{Namespace: "etl"}},
			[]string{"the pods of etl-load were preempted 2 times", "gpu/trainer-0 of PriorityClass gpu-critical, value 500000", "above etl-load's own PriorityClass etl-default (value 1000)",
				"the Job etl-load-29920000 reached its backoff limit", "the higher class is new: gpu-platform"}, 1},
		{"the older message names the preemptor",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{preemptedEvent("batch-6f8d7c9b5-x2k4p", "Preempted by gpu/trainer-0 on node node-a", t0)}}, Scope: Scope{Namespace: "etl"}},
			[]string{"the pods of batch were preempted once", "(by gpu/trainer-0)"}, 1},
		{"another namespace's pods", Gathered{K8s: K8sEvidence{Events: []corev1.Event{preemptedEvent("batch-6f8d7c9b5-x2k4p", "Preempted by gpu/trainer-0 on node node-a", t0)}}, Scope: Scope{Namespace: "web"}}, nil, 0},
		{"not a preemption", Gathered{K8s: K8sEvidence{Events: []corev1.Event{preemptedEvent("batch-6f8d7c9b5-x2k4p", "Stopping container batch", t0)}}}, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectPreemptions(&c.ev, nil)
			if len(fs) != c.nFound {
				t.Fatalf("%d findings, want %d: %+v", len(fs), c.nFound, fs)
			}
			if len(fs) == 0 {
				return
			}
			h := &Hypothesis{Kind: KindPreempted, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := preemptionM.describe(h, c.ev.Scope)
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
		})
	}
}
