package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimEvents classifies PersistentVolumeClaim events as the
// persistent-volume controller prints them, and follows a Pending
// StatefulSet pod to its claim's missing StorageClass.
func TestClaimEvents(t *testing.T) {
	cases := []struct {
		reason, msg    string
		problem, class string
	}{
		{"ProvisioningFailed", `storageclass.storage.k8s.io "fast-ssd" not found`, "class_missing", "fast-ssd"},
		{"ProvisioningFailed", `failed to provision volume with StorageClass "gp3": rpc error: code = Internal desc = Could not create volume: UnauthorizedOperation`, "provisioner", "gp3"},
		{"FailedBinding", "no persistent volumes available for this claim and no storage class is set", "no_class", ""},
		{"ExternalProvisioning", `Waiting for a volume to be created either by the external provisioner 'ebs.csi.aws.com' or manually by the system administrator`, "", ""},
	}
	for _, c := range cases {
		p, cl := classifyClaimEvent(&corev1.Event{Reason: c.reason, Message: c.msg})
		if p != c.problem || cl != c.class {
			t.Errorf("%s %q: (%q, %q), want (%q, %q)", c.reason, c.msg, p, cl, c.problem, c.class)
		}
	}
	t0 := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-db-0", Namespace: "finance",
		OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: "ledger-db"}}},
		Spec:   corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-ledger-db-0"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	ev := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "finance", Name: "data-ledger-db-0"},
		Reason: "ProvisioningFailed", Message: `storageclass.storage.k8s.io "fast-ssd" not found`, Count: 98, Type: "Warning",
		FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0.Add(20 * time.Minute))}
	for _, pods := range [][]corev1.Pod{{pod}, nil} {
		fs := detectClaimFailures(K8sEvidence{Pods: pods, Events: []corev1.Event{ev}})
		if len(fs) != 1 || fs[0].Subject != "ledger-db" || fs[0].fact("storage_class") != "fast-ssd" {
			t.Errorf("%d pods: findings %+v, want ledger-db's claim with class fast-ssd", len(pods), fs)
		}
	}
}
