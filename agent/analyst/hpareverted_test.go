package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An HPA's scale-ups undone by scale-downs it never asked for: events in
// kubectl 1.2x's wording ("to 9 from 4") and the older one ("from 9 to
// 4"), counted, or once with a self-healing Argo CD application or a
// change that sets replicas. A scale-down the HPA itself asked for, or a
// single one with nothing owning the count, is none.
func TestHPAReverted(t *testing.T) {
	ev := func(kind, reason, msg string, n int32) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: "basket"}, Reason: reason, Message: msg, Count: n}
	}
	up := ev("HorizontalPodAutoscaler", "SuccessfulRescale", "New size: 8; reason: cpu resource utilization (percentage of request) above target", 3)
	downNew := ev("Deployment", "ScalingReplicaSet", "Scaled down replica set basket-6b7c8d9f to 3 from 8", 3)
	downOld := ev("Deployment", "ScalingReplicaSet", "Scaled down replica set basket-6b7c8d9f from 8 to 3", 2)
	downOnce := ev("Deployment", "ScalingReplicaSet", "Scaled down replica set basket-6b7c8d9f to 3 from 8", 1)
	hpaDown := ev("HorizontalPodAutoscaler", "SuccessfulRescale", "New size: 3; reason: All metrics below target", 1)
	selfHeal := evidence.CommandOutput{Command: "kubectl get application shop-basket -n argocd -o jsonpath='{.spec.syncPolicy}'", Lines: []string{`{"automated":{"prune":true,"selfHeal":true}}`}}
	replicas := evidence.Change{Timestamp: win.Start.Add(-3 * 3600e9), Service: "basket", Kind: "config", Description: "set replicas: 3 in the base Deployment"}
	cases := []struct {
		name    string
		events  []corev1.Event
		cmds    []evidence.CommandOutput
		earlier []evidence.Change
		subject string
		want    []string
	}{
		{"counted, new wording", []corev1.Event{up, downNew}, nil, nil, "basket", []string{"HPA", "fixed replica count of 3", "8"}},
		{"counted, old wording", []corev1.Event{up, downOld}, nil, nil, "basket", []string{"fixed replica count of 3"}},
		{"once, argo cd self-heal", []corev1.Event{up, downOnce}, []evidence.CommandOutput{selfHeal}, nil, "basket", []string{"self-heal", "spec.replicas"}},
		{"once, a change setting replicas", []corev1.Event{up, downOnce}, nil, []evidence.Change{replicas}, "basket", []string{"set replicas: 3"}},
		{"the HPA asked for it: none", []corev1.Event{up, downNew, hpaDown}, nil, nil, "", nil},
		{"once, nothing owns the count: none", []corev1.Event{up, downOnce}, nil, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Events: c.events}, Commands: c.cmds, Earlier: c.earlier, Window: win, Scope: Scope{Service: "basket", Namespace: "shop"}}
			f := onlyFinding(t, detectHPAReverted(g, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindHPAReverted, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
