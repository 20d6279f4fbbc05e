package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A volume's expansion refused, as the resizer and the kubelet report it:
// EBS's modification cooldown (the AWS SDK v2 error of the EBS CSI
// driver), a GCE PD the cloud refuses (googleapi), Azure's disk that
// cannot grow while attached, the kubelet failing to grow the filesystem
// on the pod. With the workload's writes failing for space the refusal is
// the cause; without them it is only a warning; a successful resize is
// not this cause.
func TestDetectVolumeResizeFailed(t *testing.T) {
	at := win.Start.Add(10 * time.Minute)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pg-0", Namespace: "db", OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "pg"}}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-pg-0"}}}}}}
	ev := func(kind, name, reason, msg string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "db"}, Reason: reason, Message: msg, Type: "Warning",
			Count: 4, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at.Add(20 * time.Minute))}
	}
	ebs := ev("PersistentVolumeClaim", "data-pg-0", "VolumeResizeFailed", `resize volume "pvc-9c3f1a7e" by resizer "ebs.csi.aws.com" failed: rpc error: code = Internal desc = Could not resize volume "vol-0e5a91c3d7b24f18a": rpc error: code = Internal desc = could not modify AWS volume "vol-0e5a91c3d7b24f18a": operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 7c1f9e2a, api error VolumeModificationRateExceeded: You've reached the maximum modification rate per volume limit. Wait at least 6 hours between modifications per EBS volume.`)
	gce := ev("PersistentVolumeClaim", "data-pg-0", "VolumeResizeFailed", `resize volume "pvc-1b2c" by resizer "pd.csi.storage.gke.io" failed: rpc error: code = Internal desc = ControllerExpandVolume failed to resize disk: googleapi: Error 403: Quota 'SSD_TOTAL_GB' exceeded. Limit: 4096.0 in region europe-west1., quotaExceeded`)
	azure := ev("PersistentVolumeClaim", "data-pg-0", "VolumeResizeFailed", `resize volume "pvc-77aa" by resizer "disk.csi.azure.com" failed: rpc error: code = Internal desc = failed to resize disk: Retriable: false, RetryAfter: 0s, HTTPStatusCode: 409, RawError: {"error":{"code":"OperationNotAllowed","message":"Cannot resize disk pvc-77aa while it is attached to running VM"}} Code="OperationNotAllowed" Message="Cannot resize disk pvc-77aa while it is attached to running VM"`)
	kubelet := ev("Pod", "pg-0", "FileSystemResizeFailed", `MountVolume.NodeExpandVolume failed for volume "pvc-9c3f1a7e" requested read-only file system`)
	ok := ev("PersistentVolumeClaim", "data-pg-0", "FileSystemResizeSuccessful", `MountVolume.NodeExpandVolume succeeded for volume "pvc-9c3f1a7e" pg-0`)
	full := Finding{Kind: KindDiskFull, Subject: "pg", Severity: SevCritical, Facts: map[string]string{"line": `2026-11-25 10:12:01 UTC [311] PANIC:  could not write to file "pg_wal/xlogtemp.311": No space left on device`}}
	cases := []struct {
		name   string
		event  corev1.Event
		found  []Finding
		weight float64 // 0: no finding
		want   []string
	}{
		{"EBS cooldown, disk full", ebs, []Finding{full}, 0.97, []string{"PersistentVolumeClaim data-pg-0", "VolumeModificationRateExceeded", "6 hours", "still full", "No space left on device"}},
		{"GCE quota, disk full", gce, []Finding{full}, 0.97, []string{"Error 403", "SSD_TOTAL_GB", "still full"}},
		{"Azure attached disk, no disk full", azure, nil, 0.6, []string{"OperationNotAllowed", "while it is attached"}},
		{"kubelet filesystem expansion on the pod", kubelet, []Finding{full}, 0.97, []string{"data-pg-0", "FileSystemResizeFailed", "read-only file system"}},
		{"a successful resize is not this cause", ok, []Finding{full}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod}, Events: []corev1.Event{c.event}}, Window: win}
			fs := detectVolumeResizeFailed(g, c.found)
			if c.weight == 0 {
				if len(fs) != 0 {
					t.Fatalf("finding %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "pg" || fs[0].Weight != c.weight {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindVolumeResizeFailed, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) != 3 {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
