package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStartMechanism explains runtime start errors as runc and containerd
// print them.
func TestStartMechanism(t *testing.T) {
	cases := []struct{ msg, want string }{
		{`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/app/server": stat /app/server: no such file or directory: unknown`, "does not exist in the image"},
		{`OCI runtime create failed: runc create failed: unable to start container process: exec: "gunicorn": executable file not found in $PATH: unknown`, "executable file not found"},
		{`exec /usr/local/bin/entrypoint.sh: exec format error`, "another CPU architecture"},
		{`OCI runtime create failed: unable to start container process: exec: "/entrypoint.sh": permission denied: unknown`, "not executable"},
	}
	for _, c := range cases {
		if got := startMechanism(c.msg); !strings.Contains(got, c.want) {
			t.Errorf("startMechanism(%q) = %q, want it to say %q", c.msg, got, c.want)
		}
	}
	if !IsStartFailure("StartError", "exec: \"x\": executable file not found in $PATH", 128) || IsStartFailure("Error", "", 1) {
		t.Error("IsStartFailure misjudges a start error or an application exit")
	}
}

func TestIsStartFailure(t *testing.T) {
	tests := []struct {
		reason, msg string
		code        int32
		want        bool
		mech        string
	}{
		{"StartError", `failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "gunicorn": executable file not found in $PATH: unknown`, 128, true, "does not exist in the image"},
		{"ContainerCannotRun", `exec /app/server: exec format error`, 128, true, "another CPU architecture"},
		{"RunContainerError", `exec: "/entrypoint.sh": permission denied`, 0, true, "not executable"},
		{"Error", `OCI runtime exec failed: exec: "/bin/start": stat /bin/start: no such file or directory`, 127, true, "no such file or directory"},
		{"Error", `panic: runtime error: invalid memory address`, 2, false, ""},
		{"Error", `open /etc/app/config.yaml: no such file or directory`, 1, false, ""}, // the app started and exited
		{"OOMKilled", ``, 137, false, ""},
	}
	for _, tc := range tests {
		if got := IsStartFailure(tc.reason, tc.msg, tc.code); got != tc.want {
			t.Errorf("IsStartFailure(%q, %q, %d) = %v, want %v", tc.reason, tc.msg, tc.code, got, tc.want)
		}
		if tc.want && !strings.Contains(startMechanism(tc.msg), tc.mech) {
			t.Errorf("startMechanism(%q) = %q, want it to mention %q", tc.msg, startMechanism(tc.msg), tc.mech)
		}
	}
}

func TestDetectPodsStartError(t *testing.T) {
	w := testWindow()
	created := metav1.NewTime(w.Start.Add(5 * time.Minute))
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "reconciler-7d4f9c6b5x-2sbgf", Namespace: "finance", CreationTimestamp: created,
			Labels: map[string]string{"app": "reconciler"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "reconciler", Image: "reg/reconciler:4.0.0", Command: []string{"gunicorn"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &created, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "reconciler", RestartCount: 6,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 128, Reason: "StartError",
				Message:    `OCI runtime create failed: runc create failed: unable to start container process: exec: "gunicorn": executable file not found in $PATH: unknown`,
				StartedAt:  metav1.NewTime(time.Unix(0, 0).UTC()),
				FinishedAt: metav1.NewTime(w.Start.Add(20 * time.Minute)),
			}},
		}}},
	}
	fs := DetectPods([]corev1.Pod{p}, nil, w)
	var start, loop *Finding
	for i := range fs {
		switch fs[i].Kind {
		case KindStartFailure:
			start = &fs[i]
		case KindCrashLoop:
			loop = &fs[i]
		}
	}
	if start == nil || loop == nil {
		t.Fatalf("want a start_failure and a crash_loop finding, got %+v", fs)
	}
	if start.Time.Year() < 2000 || loop.Time.Year() < 2000 {
		t.Errorf("the kubelet's 1970 startedAt leaked into the onset: start %v, loop %v", start.Time, loop.Time)
	}
	a := Reason(fs, Scope{Service: "reconciler", Window: w})
	d := describe(a.Hypotheses[0], Scope{})
	if a.Hypotheses[0].Kind != KindStartFailure || !strings.Contains(d, "executable file not found") || !strings.Contains(d, "command/entrypoint") {
		t.Errorf("winner %s: %s", a.Hypotheses[0].Kind, d)
	}
}
