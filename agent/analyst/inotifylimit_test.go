package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestInotifyLimit reads a node's inotify limit behind a watcher's
// failure, in the forms a node prints it: sysctl fs.inotify through
// kubectl debug, cat /proc/sys/fs/inotify/... over ssh, sysctl -n; EMFILE
// from inotify_init names max_user_instances, ENOSPC from
// inotify_add_watch max_user_watches. The failing pods on the low nodes
// and the node image change that rolled them make the cause; a failing
// pod on a node with the higher limit, or one reading alone, is none.
func TestInotifyLimit(t *testing.T) {
	fail := func(line string) Finding {
		f := Finding{Kind: KindFDExhaustion, Subject: "rules-api", Time: now.Add(-10 * time.Minute), Weight: 0.9}
		f.setFact("line", line)
		return f
	}
	emfile := fail(`{"level":"fatal","msg":"cannot watch rules directory","error":"too many open files"}`)
	enospc := fail(`E1126 10:01:02.000 main.go:88] failed to create fsnotify watcher: no space left on device`)
	cmd := func(command string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: command, Run: command, Lines: lines}
	}
	debugLow := cmd("kubectl debug node/ip-10-0-2-9.ec2.internal -it --image=busybox -- chroot /host sysctl fs.inotify", "fs.inotify.max_queued_events = 16384", "fs.inotify.max_user_instances = 128", "fs.inotify.max_user_watches = 8192")
	debugHigh := cmd("kubectl debug node/ip-10-0-1-4.ec2.internal -it --image=busybox -- chroot /host sysctl fs.inotify", "fs.inotify.max_queued_events = 16384", "fs.inotify.max_user_instances = 8192", "fs.inotify.max_user_watches = 524288")
	sshLow := cmd("ssh ec2-user@gke-pool-b-7d2f cat /proc/sys/fs/inotify/max_user_instances", "128")
	sshHigh := cmd("ssh ec2-user@gke-pool-a-1c9e sysctl -n fs.inotify.max_user_instances", "1024")
	pod := func(name, node string, restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Ready: restarts == 0, RestartCount: restarts}}}}
	}
	node := func(name, os string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: os}}}
	}
	image := evidence.Change{Timestamp: now.Add(-3 * time.Hour), Service: "eks/pool-b", Kind: "infra", Description: "node group pool-b rolling update to AMI ami-0a1b2c3d (Amazon Linux 2023)"}
	deploy := evidence.Change{Timestamp: now.Add(-30 * time.Minute), Service: "rules-api", Kind: "deploy", Revision: "2.4.1"}
	cases := []struct {
		name string
		fail Finding
		cmds []evidence.CommandOutput
		k8s  K8sEvidence
		want []string
	}{
		{"kubectl debug sysctl, EMFILE, node images", emfile, []evidence.CommandOutput{debugLow, debugHigh},
			K8sEvidence{Pods: []corev1.Pod{pod("rules-api-6b8d9-abcde", "ip-10-0-2-9.ec2.internal", 12), pod("rules-api-6b8d9-fghij", "ip-10-0-1-4.ec2.internal", 0)},
				Nodes: []corev1.Node{node("ip-10-0-2-9.ec2.internal", "Amazon Linux 2023.6"), node("ip-10-0-1-4.ec2.internal", "Amazon Linux 2")}},
			[]string{"fs.inotify.max_user_instances is 128", "have 8192", "inotify_init", "EMFILE", "Amazon Linux 2023.6", "ami-0a1b2c3d", "(ip-10-0-1-4.ec2.internal) run the same version"}},
		{"ENOSPC, watches", enospc, []evidence.CommandOutput{debugLow, debugHigh}, K8sEvidence{},
			[]string{"fs.inotify.max_user_watches is 8192", "have 524288", "inotify_add_watch", "ENOSPC"}},
		{"ssh cat and sysctl -n", emfile, []evidence.CommandOutput{sshLow, sshHigh}, K8sEvidence{},
			[]string{"nodes gke-pool-b-7d2f", "is 128, where nodes gke-pool-a-1c9e have 1024"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, K8s: c.k8s, Window: win, Earlier: []evidence.Change{image}, Changes: []evidence.Change{deploy}}
			fs := detectInotifyLimit(ev, []Finding{c.fail})
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindInotifyLimit, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "fs.inotify.") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
	badOnHigh := K8sEvidence{Pods: []corev1.Pod{pod("rules-api-6b8d9-fghij", "ip-10-0-1-4.ec2.internal", 7)}}
	if fs := detectInotifyLimit(&Gathered{Commands: []evidence.CommandOutput{debugLow, debugHigh}, K8s: badOnHigh, Window: win}, []Finding{emfile}); len(fs) != 0 {
		t.Errorf("a pod failing on a node with the higher limit: %+v", fs)
	}
	if fs := detectInotifyLimit(&Gathered{Commands: []evidence.CommandOutput{debugLow}, Window: win}, []Finding{emfile}); len(fs) != 0 {
		t.Errorf("one reading alone: %+v", fs)
	}
	plain := fail("2026/04/18 02:31:06 http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s")
	if fs := detectInotifyLimit(&Gathered{Commands: []evidence.CommandOutput{debugLow, debugHigh}, Window: win}, []Finding{plain}); len(fs) != 0 {
		t.Errorf("no watcher: %+v", fs)
	}
}
