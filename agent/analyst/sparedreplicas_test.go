package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMarkSparedReplicas(t *testing.T) {
	now := time.Date(2026, 11, 26, 16, 30, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-time.Hour), End: now}
	// pod makes a replica of ReplicaSet rs in namespace pay: by owner,
	// by label or by name alone.
	pod := func(name, rs, how, node string, created time.Time, restarts int32, oom bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pay", CreationTimestamp: mt(created)},
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		switch how {
		case "owner":
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs}}
		case "label":
			p.Labels = map[string]string{"app": strings.TrimSuffix(rs, rs[strings.LastIndexByte(rs, '-'):]), "pod-template-hash": rs[strings.LastIndexByte(rs, '-')+1:]}
		}
		cs := corev1.ContainerStatus{Name: "app", RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt(now.Add(-5 * time.Minute))}}}
		if oom {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137,
				StartedAt: mt(now.Add(-25 * time.Minute)), FinishedAt: mt(now.Add(-6 * time.Minute))}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		return p
	}
	old := now.Add(-85 * time.Minute)
	cases := []struct {
		name   string
		pods   []corev1.Pod
		spared string // the fact on the first kill, "" for none
	}{
		{"killed on the new pool, the same ReplicaSet spared on the old one (owner references)",
			[]corev1.Pod{
				pod("ledger-api-7c9d5f8b6-k2x9q", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 4, true),
				pod("ledger-api-7c9d5f8b6-p8m3z", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-42-9.eu-west-1.compute.internal", old, 3, true),
				pod("ledger-api-7c9d5f8b6-t5v7n", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-12-4.eu-west-1.compute.internal", old.Add(time.Minute), 0, false),
			},
			"ledger-api-7c9d5f8b6-t5v7n on ip-10-0-12-4.eu-west-1.compute.internal"},
		{"read from a kubectl table: the ReplicaSet from the pod names",
			[]corev1.Pod{
				pod("quotes-6f4b8d7c9-abc12", "quotes-6f4b8d7c9", "name", "gke-prod-pool-b-1a2b3c4d-x1y2", old, 2, true),
				pod("quotes-6f4b8d7c9-def34", "quotes-6f4b8d7c9", "name", "gke-prod-pool-a-9f8e7d6c-q9w8", old, 0, false),
			},
			"quotes-6f4b8d7c9-def34 on gke-prod-pool-a-9f8e7d6c-q9w8"},
		{"pod-template-hash label",
			[]corev1.Pod{
				pod("search-5d8c7b9f4-aaaa1", "search-5d8c7b9f4", "label", "node-b", old, 1, true),
				pod("search-5d8c7b9f4-bbbb2", "search-5d8c7b9f4", "label", "node-a", old, 0, false),
			},
			"search-5d8c7b9f4-bbbb2 on node-a"},
		{"every replica killed: a leak of the release hits them all",
			[]corev1.Pod{
				pod("ledger-api-7c9d5f8b6-k2x9q", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 4, true),
				pod("ledger-api-7c9d5f8b6-t5v7n", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-12-4.eu-west-1.compute.internal", old, 2, true),
			},
			""},
		{"the replica that ran on is younger than the killed container lived",
			[]corev1.Pod{
				pod("ledger-api-7c9d5f8b6-k2x9q", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 4, true),
				pod("ledger-api-7c9d5f8b6-t5v7n", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-12-4.eu-west-1.compute.internal", now.Add(-4*time.Minute), 0, false),
			},
			""},
		{"the replica that ran on shares a node with a killed one",
			[]corev1.Pod{
				pod("ledger-api-7c9d5f8b6-k2x9q", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 4, true),
				pod("ledger-api-7c9d5f8b6-t5v7n", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 0, false),
			},
			""},
		{"another release of the workload ran on (the old ReplicaSet)",
			[]corev1.Pod{
				pod("ledger-api-7c9d5f8b6-k2x9q", "ledger-api-7c9d5f8b6", "owner", "ip-10-0-41-7.eu-west-1.compute.internal", old, 4, true),
				pod("ledger-api-59f6c4d8b-t5v7n", "ledger-api-59f6c4d8b", "owner", "ip-10-0-12-4.eu-west-1.compute.internal", old, 0, false),
			},
			""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := DetectPods(c.pods, nil, w)
			var got string
			found := false
			for _, f := range fs {
				if f.Kind == KindOOMKilled {
					got, found = f.fact("spared_replicas"), true
					break
				}
			}
			if !found {
				t.Fatalf("no OOM kill found in %d findings", len(fs))
			}
			if got != c.spared {
				t.Errorf("spared_replicas %q, want %q", got, c.spared)
			}
		})
	}
}
