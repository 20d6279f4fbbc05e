package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodePressure(t *testing.T) {
	testEvents(t, nodePressure, []eventCase{
		{"Node", "worker-3", "NodeHasDiskPressure", corev1.EventTypeNormal, "Node worker-3 status is now: NodeHasDiskPressure",
			KindNodePressure, []string{"node worker-3 is under"}},
		{"Node", "worker-3", "EvictionThresholdMet", corev1.EventTypeWarning, "Attempting to reclaim ephemeral-storage",
			KindNodePressure, []string{"node worker-3 is under", "the kubelet evicts pods to reclaim it"}},
		{"Node", "worker-3", "NodeHasNoDiskPressure", corev1.EventTypeNormal, "Node worker-3 status is now: NodeHasNoDiskPressure", "", nil},
	})
}
