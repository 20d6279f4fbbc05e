package analyst

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestHostPathFiller checks that a node under disk pressure names the
// workload whose hostPath directory holds most of its disk, read from du
// inside kubectl debug's chroot wrapper or over ssh, and from the mount as
// a pod template, a printed jsonpath, a describe page or a change says it;
// a directory nobody mounts, the kubelet's own directories and a small
// directory name nobody.
func TestHostPathFiller(t *testing.T) {
	node := "ip-10-9-20-61.eu-west-1.compute.internal"
	debugDu := evidence.CommandOutput{Command: "kubectl debug node/" + node + " -it --image=busybox:1.36 -- chroot /host sh -c 'df -h / ; du -xsh /var/lib/* 2>/dev/null | sort -h | tail -5'",
		Target: "node/" + node, Run: "chroot /host sh -c 'df -h / ; du -xsh /var/lib/* 2>/dev/null | sort -h | tail -5'",
		Lines: []string{"Filesystem      Size  Used Avail Use% Mounted on", "/dev/nvme0n1p1  100G   91G  9.4G  91% /", "3.2G\t/var/lib/kubelet", "14G\t/var/lib/containerd", "71G\t/var/lib/ml-dataset-cache"}}
	sshDu := evidence.CommandOutput{Command: "ssh 10.9.20.61 sudo du -sh /data/*", Host: "10.9.20.61", Run: "sudo du -sh /data/*",
		Lines: []string{"38G\t/data/scratch", "1.2G\t/data/tmp"}}
	smallDu := evidence.CommandOutput{Command: "kubectl debug node/" + node + " -- chroot /host du -sh /var/lib/*", Target: "node/" + node, Run: "chroot /host du -sh /var/lib/*",
		Lines: []string{"2.1G\t/var/lib/ml-dataset-cache", "40G\t/var/lib/containerd"}}
	jsonpath := evidence.CommandOutput{Command: "kubectl -n ml get deploy dataset-cache-warmer -o jsonpath='{.spec.template.spec.volumes}'",
		Lines: []string{`[{"hostPath":{"path":"/var/lib/ml-dataset-cache","type":"DirectoryOrCreate"},"name":"dataset-cache"}]`}}
	describe := evidence.CommandOutput{Command: "kubectl describe pod -n video render-worker-6d8f7c9b5-x2k4p",
		Lines: []string{"Volumes:", "  scratch:", "    Type:          HostPath (bare host directory volume)", "    Path:          /data/scratch", "    HostPathType:  DirectoryOrCreate"}}
	template := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "image-prefetcher", Namespace: "platform"}}
	template.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/ml-dataset-cache"}}}}
	change := evidence.Change{Service: "dataset-cache-warmer", Kind: "deploy", Description: "dataset-cache-warmer 0.3.0 pre-warms the dataset into a hostPath cache /var/lib/ml-dataset-cache"}
	cases := []struct {
		name     string
		cmds     []evidence.CommandOutput
		sets     []appsv1.DaemonSet
		changes  []evidence.Change
		want, ns string
	}{
		{"kubectl debug chroot, a printed jsonpath", []evidence.CommandOutput{debugDu, jsonpath}, nil, nil, "dataset-cache-warmer", "ml"},
		{"ssh, a describe page", []evidence.CommandOutput{sshDu, describe}, nil, nil, "render-worker", "video"},
		{"a DaemonSet's template", []evidence.CommandOutput{debugDu}, []appsv1.DaemonSet{template}, nil, "image-prefetcher", "platform"},
		{"a change", []evidence.CommandOutput{debugDu}, nil, []evidence.Change{change}, "dataset-cache-warmer", ""},
		{"nobody mounts it", []evidence.CommandOutput{debugDu}, nil, nil, "", ""},
		{"too small, the runtime's larger", []evidence.CommandOutput{smallDu, jsonpath}, nil, nil, "", ""},
	}
	for _, c := range cases {
		ev := &Gathered{Commands: c.cmds, Changes: c.changes}
		ev.K8s.DaemonSets = c.sets
		f := Finding{Kind: KindNodePressure, Subject: node}
		f.setFact("resource", "disk")
		hostPathFiller(ev, &f)
		if got := f.fact("hostpath_workload"); got != c.want || f.fact("hostpath_namespace") != c.ns {
			t.Errorf("%s: workload %q namespace %q, want %q %q (%+v)", c.name, got, f.fact("hostpath_namespace"), c.want, c.ns, f.Facts)
			continue
		}
		if c.want == "" {
			continue
		}
		h := &Hypothesis{Kind: KindNodePressure, Subject: node, Primary: []*Finding{&f}}
		if d := describeHostPathFiller(h); !strings.Contains(d, c.want) || !strings.Contains(d, "hostPath") || !f.relates(c.want) || len(f.Evidence) != 2 {
			t.Errorf("%s: %q, finding %+v", c.name, d, f)
		}
	}
}
