package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestReadinessBlipOnReadyRow checks that a pod known only from a kubectl
// get pods row ("1/1 Running", no conditions) counts as ready, so the one
// readiness failure it had while starting is history, not a fault.
func TestReadinessBlipOnReadyRow(t *testing.T) {
	row := func(ready bool) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "catalog-web-79c5d8f6b4-4gxkq", Namespace: "storefront"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "catalog-web", Ready: ready,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	}
	at := win.End.Add(-38 * time.Minute)
	e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "storefront", Name: "catalog-web-79c5d8f6b4-4gxkq"},
		Reason: "Unhealthy", Type: corev1.EventTypeWarning, Count: 1, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
		Message: `Readiness probe failed: Get "http://10.120.4.61:3000/api/health": dial tcp 10.120.4.61:3000: connect: connection refused`}
	for _, ready := range []bool{true, false} {
		p := row(ready)
		if podReady(&p) != ready {
			t.Errorf("podReady(1/1=%v) = %v", ready, !ready)
		}
		fs := DetectEvents([]corev1.Event{e}, []corev1.Pod{p}, win)
		if len(fs) != 1 || (fs[0].fact("resolved") != "") != ready {
			t.Errorf("ready %v: findings %+v, want resolved only when ready", ready, fs)
		}
	}
}
