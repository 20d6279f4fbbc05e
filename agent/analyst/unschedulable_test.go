package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestUnschedulable(t *testing.T) {
	testEvents(t, unschedulableM, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedScheduling", corev1.EventTypeWarning,
			"0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
			KindUnschedulable, []string{"api pods are unschedulable and stay Pending (FailedScheduling)", "Insufficient cpu"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "FailedScheduling", corev1.EventTypeWarning,
			"0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match Pod's node affinity/selector.",
			KindUnschedulable, []string{"node affinity/selector"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Scheduled", corev1.EventTypeNormal, "Successfully assigned shop/api-6b7c9d8f4-k2x9z to worker-1", "", nil},
	})
}
