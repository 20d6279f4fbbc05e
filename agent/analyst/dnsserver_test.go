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

func TestDNSServer(t *testing.T) {
	end := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	pod := func(name string, crashing bool) corev1.Pod {
		cs := corev1.ContainerStatus{Name: "coredns", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if crashing {
			cs = corev1.ContainerStatus{Name: "coredns", RestartCount: 7,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1,
					StartedAt: metav1.NewTime(end.Add(-31 * time.Minute)), FinishedAt: metav1.NewTime(end.Add(-30 * time.Minute))}}}
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "coredns-5d78c9869d"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionStatus(map[bool]string{true: "False", false: "True"}[crashing])}}}}
	}
	loop := `[FATAL] plugin/loop: Loop (127.0.0.1:34725 -> :53) detected for zone ".", see https://coredns.io/plugins/loop#troubleshooting. Query: "HINFO 4547991504243258144.3688648895315093531."`
	logs := map[string][]evidence.LogLine{
		"kube-system/coredns-5d78c9869d-4xk2p/coredns": {{Text: ".:53"}, {Text: "CoreDNS-1.10.1"}, {Text: loop}},
		"kube-system/coredns-5d78c9869d-9bq7n/coredns": {{Text: loop}},
	}
	cases := []struct {
		name string
		pods []corev1.Pod
		want []string // description words; nil: no finding
	}{
		{"both pods crash on a forward loop", []corev1.Pod{pod("coredns-5d78c9869d-4xk2p", true), pod("coredns-5d78c9869d-9bq7n", true)},
			[]string{"the cluster DNS (coredns) is failing", "plugin/loop: Loop"}},
		{"one of three pods", []corev1.Pod{pod("coredns-5d78c9869d-4xk2p", true), pod("coredns-5d78c9869d-9bq7n", false), pod("coredns-5d78c9869d-zz8wq", false)}, nil},
		{"healthy", []corev1.Pod{pod("coredns-5d78c9869d-4xk2p", false), pod("coredns-5d78c9869d-9bq7n", false)}, nil},
		// A pod a transcript shows only in "kubectl logs -n kube-system
		// coredns-…": its name, no state; unknown, not failing.
		{"seen only by name", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "coredns-5d78c9869d-4xk2p", Namespace: "kube-system"}}}, nil},
		{"seen by name beside a crashing pod", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "coredns-5d78c9869d-9bq7n", Namespace: "kube-system"}}, pod("coredns-5d78c9869d-4xk2p", true)},
			[]string{"the cluster DNS (coredns) is failing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := DetectDNSServer(c.pods, logs, w)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Kind != KindDNSServer {
				t.Fatalf("findings %v", fs)
			}
			h := &Hypothesis{Kind: KindDNSServer, Subject: fs[0].Subject, Onset: fs[0].Time, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Restore the cluster DNS") {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}

// TestDNSScaledDown: the cluster DNS's Deployment scaled down to half its
// replicas or fewer (the deployment controller's event, as kubectl get
// events prints it) leaves its pods too few for the lookups; a scale-down
// by one, or of another Deployment, is not that.
func TestDNSScaledDown(t *testing.T) {
	now := time.Date(2026, 11, 17, 15, 5, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-160 * time.Minute), Start: now.Add(-80 * time.Minute), End: now}
	table := func(row string) string {
		return "$ kubectl get events -n kube-system\nLAST SEEN   TYPE     REASON              OBJECT               MESSAGE\n" + row + "\n"
	}
	cases := []struct {
		name, row string
		want      bool
	}{
		{"4 to 1", "71m         Normal   ScalingReplicaSet   deployment/coredns   Scaled down replica set coredns-6f9b8d7c5 to 1 from 4", true},
		{"older kubectl wording", "71m         Normal   ScalingReplicaSet   deployment/coredns   Scaled down replica set coredns-6f9b8d7c5 from 4 to 2", true},
		{"one less", "71m         Normal   ScalingReplicaSet   deployment/coredns   Scaled down replica set coredns-6f9b8d7c5 to 3 from 4", false},
		{"another deployment", "71m         Normal   ScalingReplicaSet   deployment/web       Scaled down replica set web-6f9b8d7c5 to 1 from 4", false},
	}
	for _, c := range cases {
		res := kubetext.Parse([]byte(table(c.row)), now)
		fs := dnsScaledDown(res.Events, w)
		if !c.want {
			if len(fs) != 0 {
				t.Errorf("%s: findings %+v", c.name, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != "coredns" || !fs[0].Time.Equal(now.Add(-71*time.Minute)) {
			t.Fatalf("%s: findings %+v from %d events", c.name, fs, len(res.Events))
		}
		h := &Hypothesis{Kind: KindDNSServer, Subject: "coredns", Primary: []*Finding{&fs[0]}}
		if d := describe(h, Scope{}); !strings.Contains(d, "cluster DNS (coredns)") || !strings.Contains(d, "scaled down from 4 to") {
			t.Errorf("%s: %q", c.name, d)
		}
		if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "back to 4 replicas") {
			t.Errorf("%s: recommendations %v", c.name, recs)
		}
	}
}
