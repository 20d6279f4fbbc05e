package kubetext

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestProbe reads the probe lines kubectl describe prints (its
// describeProbe) back into the probe's handler and timings.
func TestProbe(t *testing.T) {
	svc := "health.v1"
	timings := corev1.Probe{InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	with := func(h corev1.ProbeHandler) *corev1.Probe { p := timings; p.ProbeHandler = h; return &p }
	const tail = " delay=5s timeout=1s period=10s #success=1 #failure=3"
	for _, tc := range []struct {
		line string
		want *corev1.Probe
	}{
		{"http-get http://:8080/healthz" + tail, with(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "HTTP", Port: intstr.FromInt32(8080), Path: "/healthz"}})},
		{"http-get https://10.0.0.7:metrics/ready" + tail, with(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "HTTPS", Host: "10.0.0.7", Port: intstr.FromString("metrics"), Path: "/ready"}})},
		{"http-get http://[::1]:9090" + tail, with(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "HTTP", Host: "::1", Port: intstr.FromInt32(9090)}})},
		{"tcp-socket :5432" + tail, with(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5432)}})},
		{"tcp-socket db.local:postgres" + tail, with(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "db.local", Port: intstr.FromString("postgres")}})},
		{"grpc <pod>:9000 health.v1" + tail, with(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Service: &svc}})},
		{"grpc <pod>:9000 <service>" + tail, with(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}})},
		{"exec [cat /tmp/healthy]" + tail, with(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}})},
		{"not a probe", nil},
	} {
		if diff := cmp.Diff(tc.want, probe(tc.line)); diff != "" {
			t.Errorf("probe(%q) (-want +got):\n%s", tc.line, diff)
		}
	}
}
