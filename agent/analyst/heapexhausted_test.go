package analyst

import (
	"slices"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/finding"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHeapExhausted reads a runtime out of its own heap in each runtime's
// words (HotSpot's Java heap space and GC overhead limit, V8's fatal
// error with its "Reached heap limit" line) as its own cause, labelled by
// what the container's end says: an exit code of the runtime (1, 3, 134)
// is not a kernel OOM kill; a container the kernel OOMKilled says so. The
// kernel's own kill and Metaspace stay with their mechanisms.
func TestHeapExhausted(t *testing.T) {
	pod := func(name string, env []corev1.EnvVar, exit int32, reason string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: env,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason}}}}}}
	}
	// The LimitRanger admission plugin's annotation, as the API server
	// writes it, on a pod whose workload sets no limit of its own.
	ranged := func(p corev1.Pod, ann string) corev1.Pod {
		p.Annotations = map[string]string{"kubernetes.io/limit-ranger": ann}
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		return p
	}
	jvm75 := []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:MaxRAMPercentage=75.0 -XX:+ExitOnOutOfMemoryError"}}
	cases := []struct {
		name, line string
		kind       Kind
		p          corev1.Pod
		want       []string
	}{
		{"HotSpot heap space, exit 3", `Exception in thread "http-nio-8080-exec-4" java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			pod("orders-5d8f7c6b9-x2k4q", []corev1.EnvVar{{Name: "JAVA_TOOL_OPTIONS", Value: "-XX:MaxRAMPercentage=75 -XX:+ExitOnOutOfMemoryError"}}, 3, "Error"),
			[]string{"its JVM reached its own heap limit", "MaxRAMPercentage=75", "exits with code 3", "not OOMKilled"}},
		{"GC overhead limit", `java.lang.OutOfMemoryError: GC overhead limit exceeded`, KindHeapExhausted,
			pod("orders-5d8f7c6b9-x2k4q", nil, 1, "Error"), []string{"exits with code 1"}},
		{"V8 at its old-space cap, exit 134", `FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory`, KindHeapExhausted,
			pod("orders-5d8f7c6b9-x2k4q", []corev1.EnvVar{{Name: "NODE_OPTIONS", Value: "--max-old-space-size=1536"}}, 134, "Error"),
			[]string{"Node.js (V8)", "--max-old-space-size=1536", "exits with code 134"}},
		{"the kernel killed it after", `java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			pod("orders-5d8f7c6b9-x2k4q", nil, 137, "OOMKilled"), []string{"OOMKilled by the kernel"}},
		{"a heap share of a LimitRange default limit", `Terminating due to java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			ranged(pod("orders-5d8f7c6b9-x2k4q", jvm75, 3, "Error"), "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"),
			[]string{"LimitRange default memory limit of 512Mi", "75% of the container's memory limit", "384.0 MiB"}},
		{"the JVM's default share of it, the plugin's older words", `java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			ranged(pod("orders-5d8f7c6b9-x2k4q", nil, 1, "Error"), "LimitRanger plugin set: memory limit for container app"),
			[]string{"25% of the container's memory limit", "128.0 MiB"}},
		{"an -Xmx heap does not follow the limit", `java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			ranged(pod("orders-5d8f7c6b9-x2k4q", []corev1.EnvVar{{Name: "JAVA_OPTS", Value: "-Xmx400m"}}, 1, "Error"), "LimitRanger plugin set: memory limit for container app"),
			[]string{"-Xmx400m"}},
		{"only the cpu limit defaulted", `java.lang.OutOfMemoryError: Java heap space`, KindHeapExhausted,
			ranged(pod("orders-5d8f7c6b9-x2k4q", jvm75, 3, "Error"), "LimitRanger plugin set: cpu request for container app; cpu limit for container app"),
			[]string{"MaxRAMPercentage=75.0"}},
		{"the kernel's own kill", `kernel: Out of memory: Killed process 1187 (java)`, KindOOMKilled, corev1.Pod{}, nil},
		{"Metaspace", `java.lang.OutOfMemoryError: Metaspace`, KindMetaspace, corev1.Pod{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if k, _ := ClassifyLine(c.line); k != c.kind {
				t.Fatalf("ClassifyLine = %s, want %s", k, c.kind)
			}
			if c.kind != KindHeapExhausted {
				return
			}
			f := Finding{Kind: KindHeapExhausted, Subject: "orders"}
			f.setFact("line", c.line)
			fs := []Finding{f}
			heapExhausted.detect(&Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{c.p}}}, fs)
			h := &Hypothesis{Kind: KindHeapExhausted, Subject: "orders", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if ranged := strings.Contains(c.name, "LimitRange") || strings.Contains(c.name, "default share"); ranged != strings.Contains(describe(h, Scope{}), "LimitRange") {
				t.Errorf("LimitRange named %v, want %v", !ranged, ranged)
			}
			if recs := recommend(h, Scope{}); len(recs) < 2 || !slices.ContainsFunc(recs, func(r finding.Recommendation) bool { return strings.Contains(r.Action, "heap dump") }) {
				t.Errorf("recommendations: %+v", recs)
			}
		})
	}
}
