package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestNodeNotReady(t *testing.T) {
	testEvents(t, nodeNotReady, []eventCase{
		{"Node", "worker-2", "NodeNotReady", corev1.EventTypeNormal, "Node worker-2 status is now: NodeNotReady",
			KindNodeNotReady, []string{"node worker-2 is NotReady, so the pods it runs fail or are evicted"}},
		{"Node", "worker-2", "NodeReady", corev1.EventTypeNormal, "Node worker-2 status is now: NodeReady", "", nil},
	})
}
