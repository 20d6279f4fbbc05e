package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLivenessKill(t *testing.T) {
	testEvents(t, livenessKill, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Container api failed liveness probe, will be restarted",
			KindLivenessKill, []string{"api containers are killed by their failing liveness probe and restarted (exit code 143"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Container api failed startup probe, will be restarted",
			KindLivenessKill, []string{"api containers are killed"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Killing", corev1.EventTypeNormal, "Stopping container api", "", nil},
	})
}
