package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHeapFlagsIgnored reads the heap a JVM out of heap actually runs
// with (jcmd VM.flags, -XX:+PrintFlagsFinal, the unified GC log) against
// the -Xmx its container sets, and why the option was lost: JAVA_OPTS,
// which the JVM never reads, under an image entrypoint that runs java
// directly (crane config, docker inspect). A heap as configured, an
// entrypoint whose shell expands the variable and a variable the JVM
// reads itself are not this.
func TestHeapFlagsIgnored(t *testing.T) {
	pod := func(env, value string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "billing-7c9d8f6b5-q2m4x", Namespace: "fin"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/fin/billing:3.1.0",
				Env:       []corev1.EnvVar{{Name: env, Value: value}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}}}}}}
	}
	exec := func(run string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl -n fin exec billing-7c9d8f6b5-q2m4x -- " + run, Exec: true, Pod: "billing-7c9d8f6b5-q2m4x", Lines: lines}
	}
	vmFlags := exec("jcmd 1 VM.flags", "1:", "-XX:CICompilerCount=4 -XX:InitialHeapSize=134217728 -XX:MaxHeapSize=2147483648 -XX:+UseG1GC")
	flagsFinal := exec("java -XX:+PrintFlagsFinal -version", "   size_t MaxHeapSize                              = 2147483648                                {product} {ergonomic}")
	gcLog := exec("cat /tmp/gc.log", "[0.011s][info][gc,init] Heap Max Capacity: 2G")
	asConfigured := exec("jcmd 1 VM.flags", "-XX:MaxHeapSize=6442450944 -XX:+UseG1GC")
	craneDirect := evidence.CommandOutput{Command: "crane config registry.example.com/fin/billing:3.1.0 | jq .config", Lines: []string{
		"{", `  "Entrypoint": [`, `    "java",`, `    "-cp",`, `    "@/app/jib-classpath-file",`, `    "com.example.billing.Main"`, "  ],", `  "Cmd": null`, "}"}}
	dockerDirect := evidence.CommandOutput{Command: "docker inspect registry.example.com/fin/billing:3.1.0 --format '{{json .Config}}'", Lines: []string{
		`{"Env":["PATH=/usr/bin"],"Entrypoint":["/opt/java/openjdk/bin/java","-jar","/app/billing.jar"],"Cmd":null}`}}
	shellForm := evidence.CommandOutput{Command: "crane config registry.example.com/fin/billing:3.1.0", Lines: []string{
		`  "Entrypoint": ["/bin/sh", "-c", "exec java $JAVA_OPTS -jar /app/billing.jar"],`}}
	cases := []struct {
		name     string
		env, val string
		cmds     []evidence.CommandOutput
		want     []string
		lost     bool
		entry    bool
	}{
		{"jcmd VM.flags and a Jib entrypoint", "JAVA_OPTS", "-Xms6g -Xmx6g", []evidence.CommandOutput{vmFlags, craneDirect},
			[]string{"heap limit of 2.0 GiB", "25% (MaxRAMPercentage) of the container's 8Gi", "not the one configured (JAVA_OPTS=-Xmx6g)", "never reads JAVA_OPTS", "runs java directly", "jib-classpath-file"}, true, true},
		{"PrintFlagsFinal and docker inspect", "JVM_OPTS", "-Xmx6g", []evidence.CommandOutput{flagsFinal, dockerDirect},
			[]string{"heap limit of 2.0 GiB", "never reads JVM_OPTS", "/opt/java/openjdk/bin/java -jar /app/billing.jar"}, true, true},
		{"the GC log, no image inspected", "JAVA_OPTS", "-Xmx6g", []evidence.CommandOutput{gcLog},
			[]string{"heap limit of 2.0 GiB", "never reads JAVA_OPTS"}, true, false},
		{"a shell entrypoint expands it", "JAVA_OPTS", "-Xmx6g", []evidence.CommandOutput{vmFlags, shellForm},
			[]string{"heap limit of 2.0 GiB"}, true, false},
		{"a variable the JVM reads", "JAVA_TOOL_OPTIONS", "-Xmx6g", []evidence.CommandOutput{vmFlags, craneDirect},
			[]string{"heap limit of 2.0 GiB", "not the one configured (JAVA_TOOL_OPTIONS=-Xmx6g)"}, true, false},
		{"the heap as configured", "JAVA_OPTS", "-Xmx6g", []evidence.CommandOutput{asConfigured, craneDirect},
			[]string{"(JAVA_OPTS=-Xmx6g)"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Finding{Kind: KindHeapExhausted, Subject: "billing"}
			f.setFact("line", "java.lang.OutOfMemoryError: Java heap space")
			fs := []Finding{f}
			heapExhausted.detect(&Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod(c.env, c.val)}}, Commands: c.cmds}, fs)
			h := &Hypothesis{Kind: KindHeapExhausted, Subject: "billing", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			d := describe(h, Scope{})
			if lost := strings.Contains(d, "not the one configured"); lost != c.lost {
				t.Errorf("heap lost = %v, want %v: %s", lost, c.lost, d)
			}
			if entry := strings.Contains(d, "runs java directly"); entry != c.entry {
				t.Errorf("entrypoint named = %v, want %v: %s", entry, c.entry, d)
			}
		})
	}
}
