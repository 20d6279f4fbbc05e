package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// freeSeries is a free-space series falling then stepping up (the
// platform grew the volume) when grown, or still falling otherwise.
func freeSeries(name string, dims map[string]string, grown bool) MetricSet {
	var vals []float64
	v := 20e9
	for i := 0; i < 60; i++ {
		if i > 20 && i < 45 {
			v -= 0.4e9
		}
		if grown && i == 45 {
			v += 40e9
		}
		vals = append(vals, v)
	}
	return cwSeries(name, dims, vals...)
}

func TestStorageGrownAnswersHealthy(t *testing.T) {
	alert := func(name string, labels map[string]string, summary string) evidence.Alert {
		labels["alertname"] = name
		return evidence.Alert{Name: name, Status: "resolved", Labels: labels, Annotations: map[string]string{"summary": summary},
			StartsAt: win.Start.Add(30 * time.Minute), EndsAt: win.Start.Add(48 * time.Minute)}
	}
	rdsAlert := alert("AWSRDSFreeStorageSpaceLow", map[string]string{"dbinstance_identifier": "orders-db"}, "RDS orders-db free storage below 10 GiB")
	rdsText := evidence.CommandOutput{Command: "aws rds describe-events --source-type db-instance --source-identifier orders-db --query 'Events[].[Date,Message]' --output text",
		Lines: []string{win.Start.Add(31*time.Minute).Format(time.RFC3339) + "\tApplying autoscaling-initiated modification to allocated storage.",
			win.Start.Add(44*time.Minute).Format(time.RFC3339) + "\tFinished applying autoscaling-initiated modification to allocated storage."}}
	rdsJSON := evidence.CommandOutput{Command: "aws rds describe-events --source-identifier orders-db",
		Lines: []string{`{"Events": [{"SourceIdentifier": "orders-db", "Message": "Applying autoscaling-initiated modification to allocated storage.", "Date": "` + win.Start.Add(31*time.Minute).Format(time.RFC3339) + `"}]}`}}
	described := evidence.CommandOutput{Command: "aws rds describe-db-instances --db-instance-identifier orders-db --query 'DBInstances[].[DBInstanceStatus,AllocatedStorage,MaxAllocatedStorage,StorageType]' --output text",
		Lines: []string{"available\t240\t1000\tgp3"}}
	pvcAlert := alert("KubePersistentVolumeFillingUp", map[string]string{"persistentvolumeclaim": "data-search-0", "namespace": "search"}, "PersistentVolume is filling up")
	pvcEvent := corev1.Event{Reason: "FileSystemResizeSuccessful", Message: "MountVolume.NodeExpandVolume succeeded for volume \"pvc-1\" search-0",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "search-0"}, LastTimestamp: mt(win.Start.Add(40 * time.Minute))}
	cpuAlert := evidence.Alert{Name: "HighCPU", Status: "resolved", Labels: map[string]string{"alertname": "HighCPU"}, StartsAt: win.Start, EndsAt: win.Start.Add(10 * time.Minute)}

	cases := []struct {
		name    string
		alerts  []evidence.Alert
		ev      Gathered
		verdict string
		want    []string // in the answer; nil: not answered
	}{
		{"rds text events, step and allocation", []evidence.Alert{rdsAlert},
			Gathered{Commands: []evidence.CommandOutput{rdsText, described}, Metrics: []MetricSet{freeSeries("AWS/RDS/FreeStorageSpace", map[string]string{"DBInstanceIdentifier": "orders-db"}, true)}},
			finding.VerdictInconclusive, []string{"healthy", "self-resolved", "autoscaling-initiated", "stepped up", "AllocatedStorage 240 GiB", "MaxAllocatedStorage 1000 GiB"}},
		{"rds json events, no metrics", []evidence.Alert{rdsAlert},
			Gathered{Commands: []evidence.CommandOutput{rdsJSON}},
			finding.VerdictHealthy, []string{"healthy", "autoscaling-initiated"}},
		{"pvc expanded, kubelet volume stats", []evidence.Alert{pvcAlert},
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{pvcEvent}}, Metrics: []MetricSet{freeSeries("kubelet_volume_stats_available_bytes", map[string]string{"persistentvolumeclaim": "data-search-0"}, true)}},
			finding.VerdictInconclusive, []string{"healthy", "data-search-0", "FileSystemResizeSuccessful"}},
		{"no growth: not answered", []evidence.Alert{rdsAlert},
			Gathered{Metrics: []MetricSet{freeSeries("AWS/RDS/FreeStorageSpace", nil, false)}},
			finding.VerdictInconclusive, nil},
		{"a cause identified: left alone", []evidence.Alert{rdsAlert},
			Gathered{Commands: []evidence.CommandOutput{rdsText}},
			finding.VerdictIdentified, nil},
		{"not a storage alert", []evidence.Alert{cpuAlert},
			Gathered{Commands: []evidence.CommandOutput{rdsText}},
			finding.VerdictInconclusive, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ev.Window = win
			tc.ev.Scope = Scope{Service: "orders-api", Window: win, Alert: tc.alerts[0].Name}
			res := &finding.Result{Verdict: tc.verdict, RootCause: finding.RootCause{Description: "db CPU rose", Confidence: 28}}
			ok := answerStorageGrown(res, &tc.ev, tc.alerts)
			if ok != (tc.want != nil) {
				t.Fatalf("answered %v, want %v: %s", ok, tc.want != nil, res.RootCause.Description)
			}
			if !ok {
				return
			}
			if res.Verdict != finding.VerdictHealthy || res.RootCause.Confidence > 70 {
				t.Errorf("verdict %s confidence %v", res.Verdict, res.RootCause.Confidence)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.RootCause.Description+strings.Join(res.RootCause.Evidence, " "), w) {
					t.Errorf("answer lacks %q: %s", w, res.RootCause.Description)
				}
			}
		})
	}
}

func TestFailingElsewhere(t *testing.T) {
	pod := func(ns, name string, cs corev1.ContainerStatus) corev1.Pod {
		p := corev1.Pod{}
		p.Namespace, p.Name = ns, name
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	oom := corev1.ContainerStatus{Name: "feature-sync", RestartCount: 14,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}
	pull := corev1.ContainerStatus{Name: "worker", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}
	fine := corev1.ContainerStatus{Name: "api", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	starting := corev1.ContainerStatus{Name: "api", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	cases := []struct {
		name string
		pods []corev1.Pod
		want []string
	}{
		{"oom crash loop in another namespace", []corev1.Pod{pod("ml", "feature-sync-1", oom)}, []string{"ml/feature-sync-1 container feature-sync: CrashLoopBackOff, last terminated OOMKilled, 14 restarts"}},
		{"pull failure elsewhere", []corev1.Pod{pod("batch", "w-1", pull)}, []string{"batch/w-1 container worker: ImagePullBackOff, 0 restarts"}},
		{"the subject's own namespace is not elsewhere", []corev1.Pod{pod("shop", "api-1", oom)}, nil},
		{"running and starting pods are not failures", []corev1.Pod{pod("ml", "a", fine), pod("ml", "b", starting)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := failingElsewhere(tc.pods, "shop")
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
