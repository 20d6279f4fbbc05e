package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestMemcgOOM reads a pod's memory-cgroup OOM kills from the kernel's
// report in the forms a node prints it (dmesg -T with the cgroupfs
// driver's path, journalctl -k with the systemd driver's slice) and names
// the pod by its UID, from a custom-columns listing with its limit or
// from the pod object; a node-wide OOM (CONSTRAINT_NONE) or an unknown UID
// names none.
func TestMemcgOOM(t *testing.T) {
	const uid = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
	dmesg := []string{
		"[Thu Nov 26 14:02:11 2026] python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=999",
		"[Thu Nov 26 14:02:11 2026] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=ab12,mems_allowed=0,oom_memcg=/kubepods/burstable/pod" + uid + "/ab12,task_memcg=/kubepods/burstable/pod" + uid + "/ab12,task=python,pid=4411,uid=1000",
		"[Thu Nov 26 14:02:11 2026] Memory cgroup out of memory: Killed process 4411 (python) total-vm:2834212kB, anon-rss:2002392kB, file-rss:10232kB, shmem-rss:0kB, UID:1000 pgtables:4244kB oom_score_adj:999",
	}
	slice := "kubepods-burstable-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	journal := []string{
		"Nov 26 14:02:11 ip-10-0-3-7 kernel: oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-ab12.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/" + slice + "/cri-containerd-ab12.scope,task_memcg=/kubepods.slice/kubepods-burstable.slice/" + slice + "/cri-containerd-ab12.scope,task=node,pid=981,uid=1000",
		"Nov 26 14:02:11 ip-10-0-3-7 kernel: Memory cgroup out of memory: Killed process 981 (node) total-vm:1434212kB, anon-rss:502392kB, file-rss:0kB, shmem-rss:0kB, UID:1000",
	}
	listing := evidence.CommandOutput{Command: "kubectl get pods -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,UID:.metadata.uid,LIMIT:.spec.containers[0].resources.limits.memory", Lines: []string{
		"NS      NAME                          UID                                    LIMIT",
		"batch   pdf-render-5d8f7c9b6-q2w3e    " + uid + "   2Gi",
		"web     shop-web-7b9c8d6f5-a1s2d      11111111-2222-4333-8444-555555555555   512Mi",
	}}
	podObj := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pdf-render-5d8f7c9b6-q2w3e", Namespace: "batch", UID: types.UID(uid)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "render", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("768Mi")}}}}}}
	cases := []struct {
		name string
		ev   *Gathered
		want []string
	}{
		{"dmesg -T, cgroupfs, custom-columns listing", &Gathered{Commands: []evidence.CommandOutput{{Command: "kubectl debug node/n -- chroot /host dmesg -T", Lines: dmesg}, listing}},
			[]string{"memory-cgroup OOM kills inside pdf-render", "CONSTRAINT_MEMCG", "its python process", "memory limit of 2Gi", "1.9 GiB resident"}},
		{"journalctl -k, systemd slice, pod object", &Gathered{Commands: []evidence.CommandOutput{{Command: "journalctl -k --since -1h", Lines: journal}}, K8s: K8sEvidence{Pods: []corev1.Pod{podObj}}},
			[]string{"inside pdf-render", "its node process", "memory limit of 768Mi", "490.6 MiB resident"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectMemcgOOM(c.ev, nil)
			if len(fs) != 1 || fs[0].Subject != "pdf-render" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindMemcgOOM, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Raise the memory limit of pdf-render") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	global := []string{"[Thu Nov 26 14:02:11 2026] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/kubepods/burstable/pod" + uid + "/ab12,task=python,pid=4411,uid=1000"}
	if fs := detectMemcgOOM(&Gathered{Commands: []evidence.CommandOutput{{Lines: global}, listing}}, nil); len(fs) != 0 {
		t.Errorf("a node-wide OOM: %+v", fs)
	}
	if fs := detectMemcgOOM(&Gathered{Commands: []evidence.CommandOutput{{Lines: dmesg}}}, nil); len(fs) != 0 {
		t.Errorf("an unknown pod: %+v", fs)
	}
}
