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
				"the Job etl-load-29920000 reached its backoff limit", "the higher class is new: gpu-platform"}, 2},
		{"a grep kept only the rows of a custom-columns table; the preemptors' class is the globalDefault; the Job's end read from its event",
			Gathered{K8s: K8sEvidence{
				Events: []corev1.Event{
					preemptedEvent("etl-load-29920000-8kq2w", "Preempted by pod 3c9e7b1f-2a4d-4e6b-8f0a-1b2c3d4e5f60 on node w-04", t0),
					{InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "etl", Name: "etl-load-29920000"}, Reason: "BackoffLimitExceeded", Type: corev1.EventTypeWarning,
						Message: "Job has reached the specified backoff limit", LastTimestamp: metav1.NewTime(t0.Add(time.Minute))}},
				CronJobs: []batchv1.CronJob{cron}},
				Commands: []evidence.CommandOutput{
					{Run: "kubectl get pods -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,UID:.metadata.uid,PRIO:.spec.priority,CLASS:.spec.priorityClassName | grep -E '3c9e7b1f'", Lines: []string{
						"feeds     catalog-feed-6d9c8b7f5-m4x2q   3c9e7b1f-2a4d-4e6b-8f0a-1b2c3d4e5f60   1000   default-priority"}},
					{Run: "kubectl get priorityclass", Lines: []string{
						"NAME               VALUE   GLOBAL-DEFAULT   AGE    PREEMPTIONPOLICY",
						"default-priority   1000    true             4d     PreemptLowerPriority",
						"etl-default        100     false            2y     PreemptLowerPriority"}}},
				Scope: Scope{Namespace: "etl"}},
			[]string{"feeds/catalog-feed-6d9c8b7f5-m4x2q of PriorityClass default-priority, value 1000", "above etl-load's own PriorityClass etl-default (value 100)",
				"the Job etl-load-29920000 reached its backoff limit", "default-priority is the cluster's globalDefault PriorityClass, so every pod created without a priorityClassName ranks above etl-load"}, 2},
		{"the classes as YAML",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{preemptedEvent("etl-load-29920000-8kq2w", "Preempted by pod 3c9e7b1f-2a4d-4e6b-8f0a-1b2c3d4e5f60 on node w-04", t0)}, CronJobs: []batchv1.CronJob{cron}},
				Commands: []evidence.CommandOutput{
					{Run: "kubectl get pods -A -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,PC:.spec.priorityClassName", Lines: []string{
						"NAME                           UID                                    PC",
						"catalog-feed-6d9c8b7f5-m4x2q   3c9e7b1f-2a4d-4e6b-8f0a-1b2c3d4e5f60   default-priority"}},
					{Run: "kubectl get priorityclass default-priority etl-default -o yaml", Lines: strings.Split(`apiVersion: v1
items:
- apiVersion: scheduling.k8s.io/v1
  description: unlabelled workloads
  globalDefault: true
  kind: PriorityClass
  metadata:
    name: default-priority
  preemptionPolicy: PreemptLowerPriority
  value: 1000
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata:
    name: etl-default
  value: 100`, "\n")}},
				Scope: Scope{Namespace: "etl"}},
			[]string{"catalog-feed-6d9c8b7f5-m4x2q of PriorityClass default-priority, value 1000", "(value 100)", "default-priority is the cluster's globalDefault"}, 2},
		{"UIDs from one listing, classes from another (custom-columns of priority and class), no Job",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{
				preemptedEvent("ingest-5d8c7b9f6-2nvbx", "Preempted by pod 9d3f1b7e-5c2a-4e68-8b0d-6a4c2e9f1b53 on node ip-10-50-21-96.us-west-2.compute.internal", t0),
				preemptedEvent("ingest-5d8c7b9f6-tc4lw", "Preempted by pod 2b8e6d4a-7f1c-4a39-9e2d-5c7b3a1f8e06 on node ip-10-50-33-77.us-west-2.compute.internal", t0.Add(8*time.Minute))}},
				Commands: []evidence.CommandOutput{
					{Run: "kubectl get pods -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,PRIORITY:.spec.priority,CLASS:.spec.priorityClassName,NODE:.spec.nodeName | grep -E 'scorer|ingest'", Lines: []string{
						"etl    ingest-5d8c7b9f6-4kq8n    0         <none>              ip-10-50-33-77.us-west-2.compute.internal",
						"risk   scorer-84b6d9c7f5-8kd2n   1000000   platform-critical   ip-10-50-21-96.us-west-2.compute.internal",
						"risk   scorer-84b6d9c7f5-q8mzb   1000000   platform-critical   ip-10-50-33-77.us-west-2.compute.internal"}},
					{Run: "kubectl get pods -n risk -o custom-columns=NAME:.metadata.name,UID:.metadata.uid | grep -E '9d3f1b7e|2b8e6d4a'", Lines: []string{
						"scorer-84b6d9c7f5-8kd2n   9d3f1b7e-5c2a-4e68-8b0d-6a4c2e9f1b53",
						"scorer-84b6d9c7f5-q8mzb   2b8e6d4a-7f1c-4a39-9e2d-5c7b3a1f8e06"}},
					{Run: "kubectl get priorityclass", Lines: []string{
						"NAME                VALUE     GLOBAL-DEFAULT   AGE    PREEMPTIONPOLICY",
						"platform-critical   1000000   false            390d   PreemptLowerPriority"}}},
				Scope: Scope{Namespace: "etl"}},
			[]string{"the pods of ingest were preempted 2 times", "risk/scorer-84b6d9c7f5-8kd2n, risk/scorer-84b6d9c7f5-q8mzb of PriorityClass platform-critical, value 1000000"}, 1},
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
			if a := fs[0].fact("affected"); a == "" || strings.Contains(a, fs[0].Subject) {
				t.Errorf("affected %q: want the preemptors' workloads, not %s", a, fs[0].Subject)
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
		})
	}
}

func TestPreemptorWorkload(t *testing.T) {
	for in, want := range map[string]string{
		"runtime-guard-8qmzd":           "runtime-guard",  // a DaemonSet's pod
		"fraud-scorer-6d5f8c7b9d-x2k4p": "fraud-scorer",   // a Deployment's pod
		"kafka-2":                       "kafka",          // a StatefulSet's pod
		"redis-cache":                   "redis-cache",    // "cache" has vowels: not generated
		"nightly-export-29929020-q7xzt": "nightly-export", // a CronJob's Job's pod
	} {
		if got := preemptorWorkload(in); got != want {
			t.Errorf("preemptorWorkload(%q) = %q, want %q", in, got, want)
		}
	}
}
