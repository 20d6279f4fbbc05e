package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// readNodes reads the nodes of a kubectl session.
func readNodes(t *testing.T, session string, now time.Time) []corev1.Node {
	t.Helper()
	var nodes []corev1.Node
	for _, o := range kubetext.Parse([]byte(session), now).Objects {
		if n, ok := o.(*corev1.Node); ok {
			nodes = append(nodes, *n)
		}
	}
	return nodes
}

func schedEvent(ns, pod, reason, from, msg string, at time.Time) corev1.Event {
	return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}, Reason: reason, Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: from}, Message: msg, FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1}
}

// TestCordonedOnly: pods Pending because the only nodes their selector
// and tolerations allow are cordoned, in the scheduler's wordings of
// several versions (were unschedulable; the unschedulable taint), with the
// change or logged command that cordoned the node; not when other nodes
// are ruled out for room, or the cordoned node is not one the pods may use.
func TestCordonedOnly(t *testing.T) {
	now := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
	const nodesEKS = `$ kubectl get nodes -L workload
NAME                                        STATUS                     ROLES    AGE   VERSION               WORKLOAD
ip-10-0-12-87.us-east-2.compute.internal    Ready                      <none>   12d   v1.30.4-eks-a737599   general
ip-10-0-21-15.us-east-2.compute.internal    Ready                      <none>   12d   v1.30.4-eks-a737599   general
ip-10-0-40-12.us-east-2.compute.internal    Ready,SchedulingDisabled   <none>   19d   v1.30.4-eks-a737599   gpu
`
	const nodesGKE = `$ kubectl get nodes -L pool
NAME                                   STATUS                     ROLES    AGE   VERSION            POOL
gke-prod-default-4f1c9a2e-0b1d         Ready                      <none>   40d   v1.29.8-gke.1031   default
gke-prod-highmem-7c2d1e4f-x9q2         Ready,SchedulingDisabled   <none>   40d   v1.29.8-gke.1031   highmem
gke-prod-highmem-7c2d1e4f-k3m8         Ready,SchedulingDisabled   <none>   40d   v1.29.8-gke.1031   highmem
`
	pod := func(ns, name string, sel map[string]string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeSelector: sel}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	for _, tc := range []struct {
		name   string
		nodes  string
		pods   []corev1.Pod
		events []corev1.Event
		change []evidence.Change
		cmds   []evidence.LogLine
		want   []string
		none   bool
	}{
		{"EKS, one GPU node cordoned by an investigation, the node group at its max", nodesEKS,
			[]corev1.Pod{pod("ml", "trainer-7d9c8b6f5-q4xzt", map[string]string{"workload": "gpu"})},
			[]corev1.Event{
				schedEvent("ml", "trainer-7d9c8b6f5-q4xzt", "FailedScheduling", "default-scheduler", "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", now.Add(-5*time.Minute)),
				schedEvent("ml", "trainer-7d9c8b6f5-q4xzt", "NotTriggerScaleUp", "cluster-autoscaler", "pod didn't trigger scale-up: 1 max node group size reached, 2 node(s) didn't match Pod's node affinity/selector", now.Add(-30*time.Minute))},
			[]evidence.Change{{Timestamp: now.Add(-70 * time.Hour), Service: "gpu-nodes", Kind: "infra", Description: "cordoned ip-10-0-40-12 to debug Xid errors, will uncordon after the driver upgrade"}},
			nil,
			[]string{"the only node they may run on, ip-10-0-40-12.us-east-2.compute.internal, is cordoned", "infrastructure change of gpu-nodes", "which meant to undo it (uncordon after the driver upgrade)", "max node group size reached"}, false},
		{"GKE, a pool drained by a logged command, the unschedulable taint wording", nodesGKE,
			[]corev1.Pod{pod("analytics", "spark-exec-0", map[string]string{"pool": "highmem"})},
			[]corev1.Event{
				schedEvent("analytics", "spark-exec-0", "FailedScheduling", "default-scheduler", "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint {node.kubernetes.io/unschedulable: }. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", now.Add(-2*time.Minute))},
			nil,
			[]evidence.LogLine{
				{Time: now.Add(-26 * time.Hour), Source: "logs/node-maintenance.log", Text: "2026-05-13T08:00:00Z kubectl drain gke-prod-highmem-7c2d1e4f-x9q2 --ignore-daemonsets --delete-emptydir-data"},
				{Time: now.Add(-25 * time.Hour), Source: "logs/node-maintenance.log", Text: "2026-05-13T09:00:00Z kubectl uncordon gke-prod-highmem-7c2d1e4f-x9q2"},
				{Time: now.Add(-24 * time.Hour), Source: "logs/node-maintenance.log", Text: "2026-05-13T10:00:00Z kubectl cordon gke-prod-highmem-7c2d1e4f-k3m8"}},
			[]string{"the only nodes they may run on, gke-prod-highmem-7c2d1e4f-k3m8, gke-prod-highmem-7c2d1e4f-x9q2, are cordoned", "command at 2026-05-13T10:00:00Z in node-maintenance"}, false},
		{"the other nodes are full: not the cordon alone", nodesEKS,
			[]corev1.Pod{pod("web", "shop-5b8f7c9d4-2kqnw", nil)},
			[]corev1.Event{schedEvent("web", "shop-5b8f7c9d4-2kqnw", "FailedScheduling", "default-scheduler", "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.", now.Add(-2*time.Minute))},
			nil, nil, nil, true},
		{"the cordoned node is not one the selector allows", nodesEKS,
			[]corev1.Pod{pod("web", "shop-5b8f7c9d4-2kqnw", map[string]string{"workload": "general"})},
			[]corev1.Event{schedEvent("web", "shop-5b8f7c9d4-2kqnw", "FailedScheduling", "default-scheduler", "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.", now.Add(-2*time.Minute))},
			nil, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{K8s: K8sEvidence{Nodes: readNodes(t, tc.nodes, now), Pods: tc.pods, Events: tc.events}, Earlier: tc.change, HostCommands: tc.cmds,
				Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}}
			fs := detectCordonedOnly(ev, nil)
			if tc.none {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings", len(fs))
			}
			f := fs[0]
			if !strings.Contains(f.fact("affected"), strings.Split(f.fact("nodes"), ", ")[0]) || f.fact("ready") != "true" {
				t.Errorf("facts %v", f.Facts)
			}
			h := &Hypothesis{Kind: KindCordonedOnly, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
