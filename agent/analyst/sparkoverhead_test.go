package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Spark executors on Kubernetes as spark-submit and the Spark operator
// create them (SPARK_EXECUTOR_MEMORY with the default 10% or 384 MiB
// overhead), in each of Spark's memory spellings; an executor given a
// large overhead already, and a container that is no Spark executor, are
// not explained by it.
func TestSparkExecutorOverhead(t *testing.T) {
	executor := func(heap, limit string) *corev1.Container {
		return &corev1.Container{Name: "spark-kubernetes-executor", Args: []string{"executor"},
			Env:       []corev1.EnvVar{{Name: "SPARK_EXECUTOR_CORES", Value: "4"}, {Name: "SPARK_EXECUTOR_MEMORY", Value: heap}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(limit)}}}
	}
	plain := &corev1.Container{Name: "api", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}
	for _, tc := range []struct {
		name string
		c    *corev1.Container
		want string // the overhead read; "" none
	}{
		{"operator executor, 6g and the default 10%", executor("6g", "6758Mi"), "614 MiB (10% of the heap)"},
		{"spark-submit executor, 2048m and the 384 MiB minimum", executor("2048m", "2432Mi"), "384 MiB (19% of the heap)"},
		{"heap in plain MiB, limit in bytes", executor("8192", "9019431321"), "409 MiB"},
		{"overhead raised to 4 GiB already", executor("8g", "12Gi"), ""},
		{"no Spark executor", plain, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &Finding{Kind: KindOOMKilled, Subject: "sessionize-exec"}
			sparkExecutorOverhead(f, tc.c)
			got := f.fact("spark_overhead")
			if tc.want == "" {
				if got != "" {
					t.Fatalf("want none, got %q", got)
				}
				return
			}
			if len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Fatalf("overhead %q, want %q", got, tc.want)
			}
			h := &Hypothesis{Kind: KindOOMKilled, Subject: "sessionize", Primary: []*Finding{f}}
			f.setFact("memory_limit", tc.c.Resources.Limits.Memory().String())
			wantDescribed(t, h, Scope{}, "Spark executors are OOMKilled", "memoryOverhead", "Python worker processes")
		})
	}
}
