package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMountFailure(t *testing.T) {
	testEvents(t, mountFailure, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedMount", corev1.EventTypeWarning,
			"Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data kube-api-access-5x7kq]: timed out waiting for the condition",
			KindMountFailure, []string{"api pods are stuck because a volume mount fails (FailedMount)", "unmounted volumes=[data]"}},
		// A missing ConfigMap is a configuration error, not a storage one.
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedMount", corev1.EventTypeWarning, `MountVolume.SetUp failed for volume "config" : configmap "app-config" not found`, "", nil},
		{"Pod", "db-0", "FailedAttachVolume", corev1.EventTypeWarning, `Multi-Attach error for volume "pvc-3f1d9a7e" Volume is already exclusively attached to one node and can't be attached to another`,
			KindMountFailure, []string{"db pods are stuck", "Multi-Attach"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "SuccessfulMountVolume", corev1.EventTypeNormal, `MountVolume.SetUp succeeded for volume "config"`, "", nil},
	})
}
