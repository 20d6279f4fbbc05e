package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestProbeFailure(t *testing.T) {
	testEvents(t, probeFailure, []eventCase{
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, "Readiness probe failed: HTTP probe failed with statuscode: 503",
			KindProbeFailure, []string{"api fails its readiness probe, so its pods are taken out of service or restarted", "statuscode: 503"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Unhealthy", corev1.EventTypeWarning, `Readiness probe failed: Get "http://10.0.3.17:8080/ready": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
			KindProbeFailure, []string{"api fails its readiness probe"}},
		{"Pod", "api-6b7c9d8f4-k2x9z", "Started", corev1.EventTypeNormal, "Started container api", "", nil},
	})
}
