package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestEviction(t *testing.T) {
	testEvents(t, evictionM, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "Evicted", corev1.EventTypeWarning,
			"The node was low on resource: memory. Threshold quantity: 100Mi, available: 87316Ki. Container api was using 1523468Ki, request is 512Mi, has larger consumption of memory.",
			KindEviction, []string{"api pods are evicted by the kubelet", "low on resource: memory"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Evicted", corev1.EventTypeWarning,
			"The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1536Mi. Container api was using 3Gi, request is 0, has larger consumption of ephemeral-storage.",
			KindEviction, []string{"api pods are evicted", "ephemeral-storage"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Stopping container api", "", nil},
	})
}

// A pod read from a `get pods` row ("Evicted") has no start time: it is
// still an eviction, dated by its conditions if any.
func TestEvictedPodWithoutStartTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"evicted, no start time", corev1.Pod{Status: corev1.PodStatus{Reason: "Evicted", Message: "The node was low on resource: memory."}}, true},
		{"running, no start time", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, ok := evictedPod(&tc.pod, Finding{Object: "pod/api-1"})
			if ok != tc.want || len(fs) != map[bool]int{true: 1}[tc.want] {
				t.Fatalf("evictedPod = %d findings, %v; want %v", len(fs), ok, tc.want)
			}
			if ok && fs[0].Kind != KindEviction {
				t.Errorf("kind %s, want %s", fs[0].Kind, KindEviction)
			}
		})
	}
}
