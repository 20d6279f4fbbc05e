package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEphemeralLimitEvents: the kubelet's evictions of a pod over its own
// limits (a container's, the pod's total, an emptyDir's sizeLimit) are
// this cause; an eviction for the node's pressure is not.
func TestEphemeralLimitEvents(t *testing.T) {
	testEvents(t, ephemeralLimit, []eventCase{
		{"Pod", "encoder-7d8c9b6f5-h6tzr", "Evicted", corev1.EventTypeWarning, `Container encoder exceeded its local ephemeral storage limit "2Gi". `,
			KindEphemeralLimit, []string{"encoder pods are evicted by the kubelet for exceeding their own ephemeral-storage limit", "container encoder, limit 2Gi", "not because the node's disk is short"}},
		{"Pod", "encoder-7d8c9b6f5-h6tzr", "Evicted", corev1.EventTypeWarning, `Pod ephemeral local storage usage exceeds the total limit of containers 4Gi. `,
			KindEphemeralLimit, []string{"the pod's containers' total limit 4Gi"}},
		{"Pod", "encoder-7d8c9b6f5-h6tzr", "Evicted", corev1.EventTypeWarning, `Usage of EmptyDir volume "scratch" exceeds the limit "10Gi". `,
			KindEphemeralLimit, []string{"emptyDir volume scratch, sizeLimit 10Gi"}},
		{"Pod", "encoder-7d8c9b6f5-h6tzr", "Evicted", corev1.EventTypeWarning, `The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 8Gi. Container encoder was using 40Gi, request is 0, has larger consumption of ephemeral-storage. `,
			"", nil},
	})
}

// TestEphemeralLimitFiller: what fills the container is read from du and
// ls run in one of its pods (one sh -c, or separate execs), outside its
// volume mounts; a log file is followed to the change that set a debug
// level, or to the workload's own line naming the file; a volume's use
// does not count against a container's limit.
func TestEphemeralLimitFiller(t *testing.T) {
	pod := func(name string, evicted bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "media", Labels: map[string]string{"app": "encoder"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "encoder-7d8c9b6f5"}}},
			Spec: corev1.PodSpec{NodeName: "node-3", Containers: []corev1.Container{{Name: "encoder", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}}}}
		if evicted {
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: `Container encoder exceeded its local ephemeral storage limit "2Gi". `}
		}
		return p
	}
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-3"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"}}}}
	oneShell := evidence.CommandOutput{Command: "kubectl exec -n media encoder-7d8c9b6f5-lx7cd -- sh -c 'du -sh /scratch /tmp /var/log/encoder; ls -la /var/log/encoder'",
		Exec: true, Namespace: "media", Pod: "encoder-7d8c9b6f5-lx7cd", Run: "sh -c 'du -sh /scratch /tmp /var/log/encoder; ls -la /var/log/encoder'",
		Lines: []string{"3.1G\t/scratch", "4.0K\t/tmp", "1.6G\t/var/log/encoder", "total 1677724", "-rw-r--r--    1 enc enc 1717993472 Nov 26 07:39 encoder.log"}}
	separate := []evidence.CommandOutput{
		{Command: "kubectl exec deploy/encoder -n media -- du -sh /app/cache /scratch", Exec: true, Namespace: "media", Target: "deploy/encoder", Run: "du -sh /app/cache /scratch",
			Lines: []string{"1.9G\t/app/cache", "12G\t/scratch"}},
	}
	volumeOnly := evidence.CommandOutput{Command: "kubectl exec -n media encoder-7d8c9b6f5-lx7cd -- du -sh /scratch", Exec: true, Namespace: "media", Pod: "encoder-7d8c9b6f5-lx7cd", Run: "du -sh /scratch",
		Lines: []string{"3.1G\t/scratch"}}
	debugChange := evidence.Change{Service: "encoder", Kind: "config", Description: "encoder-config: LOG_LEVEL=debug, LOG_FILE=/var/log/encoder/encoder.log", Timestamp: win.Start.Add(-20 * 60 * 1e9)}
	ownLine := minedSet("encoder", false, 0, "2026-03-01T11:02:03.120Z INFO  logging: level=DEBUG output=/var/log/encoder/encoder.log")
	cases := []struct {
		name    string
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		logs    []LogSet
		path    string
		want    []string
	}{
		{"one shell, a debug change", []evidence.CommandOutput{oneShell}, []evidence.Change{debugChange}, nil, "/var/log/encoder",
			[]string{"/var/log/encoder inside the container (1.6 GiB, the file encoder.log)", "a log file written into the container's filesystem", "at DEBUG level since the config change of encoder", "node node-3 reports no DiskPressure"}},
		{"one shell, the workload's own line", []evidence.CommandOutput{oneShell}, nil, []LogSet{ownLine}, "/var/log/encoder",
			[]string{"a log file written", "its log: \"", "output=/var/log/encoder/encoder.log"}},
		{"an exec through the Deployment, a cache", separate, nil, nil, "/app/cache", []string{"what fills it is /app/cache inside the container (1.9 GiB)"}},
		{"only the volume measured", []evidence.CommandOutput{volumeOnly}, nil, nil, "", []string{"not because the node's disk is short"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evicted := pod("encoder-7d8c9b6f5-h6tzr", true)
			ev := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{evicted, pod("encoder-7d8c9b6f5-lx7cd", false)}, Nodes: []corev1.Node{node}},
				Commands: c.cmds, Changes: c.changes, Logs: c.logs, Window: win}
			base := Finding{Subject: WorkloadOfPod(&evicted), Object: "pod media/" + evicted.Name, Namespace: "media", Source: SrcKubernetes}
			fs, whole := ephemeralLimitPod(&evicted, base)
			if !whole || len(fs) != 1 || fs[0].Subject != "encoder" {
				t.Fatalf("findings %+v", fs)
			}
			if _, whole := evictedPod(&evicted, base); whole {
				t.Fatal("the eviction for the pod's own limit is also a node-pressure eviction")
			}
			detectEphemeralFiller(ev, fs)
			if fs[0].fact("filler_path") != c.path {
				t.Fatalf("filler %q, want %q (evidence %q)", fs[0].fact("filler_path"), c.path, fs[0].Evidence)
			}
			h := &Hypothesis{Kind: KindEphemeralLimit, Subject: "encoder", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			if len(recs) == 0 || c.path == "/var/log/encoder" && !strings.Contains(recs[0].Action, "stdout") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
