package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A memory-backed emptyDir filling the memory limit, shown by the
// cgroup's memory.stat (v2 and v1), by df of the tmpfs, or by the working
// set growing while the RSS stays flat; a disk-backed emptyDir, or a
// memory volume with nothing growing, is none.
func TestTmpfsMemory(t *testing.T) {
	pod := func(name string, medium corev1.StorageMedium) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "billing"},
			Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: medium}}}},
				Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}}}},
			}}
	}
	memPod := pod("statement-builder-6f9c7d8b5-rj4xk", corev1.StorageMediumMemory)
	diskPod := pod("statement-builder-6f9c7d8b5-rj4xk", corev1.StorageMediumDefault)
	exec := func(lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: "kubectl exec statement-builder-6f9c7d8b5-rj4xk -- sh -c ...", Exec: true, Pod: "statement-builder-6f9c7d8b5-rj4xk", Lines: lines}
	}
	v2 := exec("anon 668426240", "file 1381171200", "shmem 1288699904", "inactive_file 9437184")
	v1 := exec("cache 1402000000", "rss 640000000", "total_rss 640000000", "total_shmem 1290000000")
	df := exec("Filesystem      Size  Used Avail Use% Mounted on", "tmpfs            15G  1.2G   14G   8% /scratch")
	series := func(name string, from, to float64) MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"container": "statement-builder", "pod": "statement-builder-6f9c7d8b5-rj4xk"}}
		for i := 0; i <= 60; i++ {
			s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i) * time.Minute), V: from + (to-from)*float64(i)/60})
		}
		return MetricSet{Name: name, Class: MetricSaturation, Unit: "bytes", Series: []evidence.Series{s}}
	}
	wsUp := series("container_memory_working_set_bytes", 1.0e9, 1.9e9)
	rssFlat := series("container_memory_rss", 6.5e8, 6.7e8)
	rssUp := series("container_memory_rss", 6.5e8, 1.5e9)
	growing := Finding{Kind: KindSaturation, Subject: "statement-builder", Time: win.Start.Add(-time.Hour), Facts: map[string]string{"metric": "container_memory_working_set_bytes", "leak_rate": "9.4 MiB/min"}}
	change := evidence.Change{Timestamp: win.Start.Add(-3 * time.Hour), Service: "statement-builder", Kind: "config", Description: "statement-builder values: scratch volume emptyDir -> emptyDir{medium: Memory}"}
	cases := []struct {
		name    string
		pods    []corev1.Pod
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		found   []Finding
		changes []evidence.Change
		subject string
		why     bool
		want    []string
	}{
		{"cgroup v2 memory.stat shmem", []corev1.Pod{memPod}, []evidence.CommandOutput{v2}, nil, []Finding{growing}, nil,
			"statement-builder", true, []string{"medium: Memory", "/scratch", "shmem 1.2 GiB", "memory limit of 2Gi", "no sizeLimit"}},
		{"cgroup v1 total_shmem", []corev1.Pod{memPod}, []evidence.CommandOutput{v1}, nil, nil, nil,
			"statement-builder", true, []string{"tmpfs", "shmem 1.2 GiB"}},
		{"df of the tmpfs", []corev1.Pod{memPod}, []evidence.CommandOutput{df}, nil, nil, nil,
			"statement-builder", true, []string{"1.2G used on the tmpfs"}},
		{"working set up, RSS flat", []corev1.Pod{memPod}, nil, []MetricSet{wsUp, rssFlat}, nil, nil,
			"statement-builder", true, []string{"RSS stays flat"}},
		{"no pod read: the change that put the volume in memory, and shmem", nil, []evidence.CommandOutput{v2}, nil, nil, []evidence.Change{change},
			"statement-builder", true, []string{"emptyDir{medium: Memory}"}},
		{"memory volume, growth only from a leak finding: no why", []corev1.Pod{memPod}, nil, []MetricSet{wsUp, rssUp}, []Finding{growing}, nil,
			"statement-builder", false, []string{"medium: Memory"}},
		{"disk-backed emptyDir is none", []corev1.Pod{diskPod}, nil, []MetricSet{wsUp, rssFlat}, []Finding{growing}, nil, "", false, nil},
		{"memory volume, nothing growing", []corev1.Pod{memPod}, nil, nil, nil, nil, "", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Metrics: c.metrics, Changes: c.changes, Window: win, Scope: Scope{Service: "statement-builder", Namespace: "billing"}}
			ev.K8s.Pods = c.pods
			f := onlyFinding(t, detectTmpfsMemory(ev, c.found), c.subject)
			if f == nil {
				return
			}
			if got := f.fact("why") != ""; got != c.why {
				t.Errorf("why %v, want %v: %+v", got, c.why, f.Facts)
			}
			h := &Hypothesis{Kind: KindTmpfsMemory, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
	h := &Hypothesis{Kind: KindTmpfsMemory, Subject: "statement-builder", Primary: []*Finding{{Kind: KindTmpfsMemory}}}
	if !tmpfsMemory.fitsChange(h, &Finding{Kind: KindConfigChange, Summary: "config change: " + change.Description}) ||
		tmpfsMemory.fitsChange(h, &Finding{Kind: KindDeploy, Summary: "deploy of statement-builder 3.4.1"}) {
		t.Error("only a change that puts a volume in memory triggers it")
	}
}
