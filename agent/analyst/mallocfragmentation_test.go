package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMallocFragmentation reads the allocator lost (a Dockerfile diff, an
// env diff, the process's mappings) for a workload whose memory grows to
// OOM kills, and stays silent when the allocator is still there or the
// memory does not grow.
func TestMallocFragmentation(t *testing.T) {
	at := time.Date(2026, 3, 4, 14, 0, 0, 0, time.UTC)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mailer-6b9d7c5f4-q8rtx", Namespace: "shop"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mailer",
			Env:       []corev1.EnvVar{{Name: "RAILS_MAX_THREADS", Value: "16"}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
	}
	oom := Finding{Kind: KindOOMKilled, Subject: "mailer", Time: at, Weight: 0.85}
	series := func(name string, from, to float64) MetricSet {
		var pts []evidence.Point
		for i := 0; i < 10; i++ {
			pts = append(pts, evidence.Point{T: at.Add(time.Duration(i) * 10 * time.Minute), V: from + (to-from)*float64(i)/9})
		}
		return MetricSet{Name: name, Series: []evidence.Series{{Labels: evidence.Labels{"pod": "mailer-6b9d7c5f4-q8rtx", "container": "mailer"}, Points: pts}}}
	}
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		metrics  []MetricSet
		found    []Finding
		want     string // "" for no finding
		heapFlat bool
	}{
		{
			name: "base image with jemalloc replaced (Dockerfile diff)",
			commands: []evidence.CommandOutput{{Run: "git diff v2.3.0 v2.4.0 -- Dockerfile", Lines: []string{
				"--- a/Dockerfile", "+++ b/Dockerfile", "@@ -1,5 +1,4 @@",
				"-FROM ruby:3.2-slim AS base", "-RUN apt-get install -y libjemalloc2", "-ENV LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
				"+FROM ruby:3.3-slim AS base"}}},
			metrics: []MetricSet{series("ruby_heap_live_slots", 1.2e6, 1.25e6), series("container_memory_working_set_bytes", 300e6, 1000e6)},
			found:   []Finding{oom}, want: "libjemalloc2", heapFlat: true,
		},
		{
			name: "MALLOC_ARENA_MAX dropped from the deployment's env (kubectl diff)",
			commands: []evidence.CommandOutput{{Run: "kubectl diff -f deploy/mailer.yaml", Lines: []string{
				"         - name: WEB_CONCURRENCY", "-        - name: MALLOC_ARENA_MAX", `-          value: "2"`}}},
			found: []Finding{oom}, want: "MALLOC_ARENA_MAX",
		},
		{
			name:     "jemalloc not mapped in the process",
			commands: []evidence.CommandOutput{{Exec: true, Pod: "mailer-6b9d7c5f4-q8rtx", Run: "grep -c jemalloc /proc/1/maps", Lines: []string{"0"}, ExitCode: 1}},
			found:    []Finding{oom}, want: "no allocator library mapped",
		},
		{
			name:     "jemalloc still mapped",
			commands: []evidence.CommandOutput{{Exec: true, Pod: "mailer-6b9d7c5f4-q8rtx", Run: "grep -c jemalloc /proc/1/maps", Lines: []string{"14"}}},
			found:    []Finding{oom},
		},
		{
			name: "allocator moved, not dropped",
			commands: []evidence.CommandOutput{{Run: "git diff -- Dockerfile", Lines: []string{
				"-ENV LD_PRELOAD=/usr/lib/libjemalloc.so.2", "+ENV LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}}},
			found: []Finding{oom},
		},
		{
			name:     "allocator dropped but no memory grows",
			commands: []evidence.CommandOutput{{Exec: true, Pod: "mailer-6b9d7c5f4-q8rtx", Run: "grep -c jemalloc /proc/1/maps", Lines: []string{"0"}}},
		},
	}
	for _, c := range cases {
		ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Commands: c.commands, Metrics: c.metrics,
			Changes: []evidence.Change{{Timestamp: at.Add(-20 * time.Hour), Service: "mailer", Kind: "deploy", Revision: "2.4.0", Description: "mailer 2.4.0: Ruby 3.3 slim base image"}}}
		fs := detectMallocFragmentation(ev, c.found)
		if c.want == "" {
			if len(fs) > 0 {
				t.Errorf("%s: found %q, want nothing", c.name, fs[0].fact("allocator"))
			}
			continue
		}
		if len(fs) != 1 {
			t.Errorf("%s: %d findings, want 1", c.name, len(fs))
			continue
		}
		f := fs[0]
		if !strings.Contains(f.fact("allocator"), c.want) {
			t.Errorf("%s: allocator %q lacks %q", c.name, f.fact("allocator"), c.want)
		}
		if (f.fact("heap_flat") != "") != c.heapFlat {
			t.Errorf("%s: heap flat %q, want %v", c.name, f.fact("heap_flat"), c.heapFlat)
		}
		h := &Hypothesis{Kind: KindMallocFragmentation, Subject: "mailer", Onset: at, Primary: []*Finding{&f}}
		wantDescribed(t, h, Scope{}, "fragmentation in glibc malloc", "not a leak", "RAILS_MAX_THREADS=16", "1Gi", "2.4.0")
	}
}
