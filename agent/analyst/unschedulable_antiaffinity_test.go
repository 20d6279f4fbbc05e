package analyst

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Pods refused by anti-affinity get their workload's rule: from the
// Deployment's spec or a YAML projection of it handed over as text, with
// the zones the nodes span and the earlier change that added it; a rule
// selecting other pods is named without the one-pod-per-zone bound, and a
// refusal for another reason gets nothing.
func TestExplainAntiAffinity(t *testing.T) {
	msg := "0/9 nodes are available: 9 node(s) didn't match pod anti-affinity rules. preemption: 0/9 nodes are available: 9 No preemption victims found for incoming pod."
	var nodes []corev1.Node
	for i, z := range []string{"us-east-1a", "us-east-1a", "us-east-1b", "us-east-1c"} {
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + string(rune('a'+i)), Labels: map[string]string{"topology.kubernetes.io/zone": z}}})
	}
	deploy := func(sel string, required bool) appsv1.Deployment {
		term := corev1.PodAffinityTerm{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": sel}}}
		aa := &corev1.PodAntiAffinity{}
		if required {
			aa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			aa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}
		}
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pricer", Namespace: "shop"}}
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: aa}
		return d
	}
	yaml := evidence.CommandOutput{Command: "kubectl -n shop get deploy pricer -o yaml | sed -n '/^    spec:/,/^      containers:/p'", Lines: strings.Split(`    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector:
              matchLabels:
                app.kubernetes.io/name: pricer
            topologyKey: topology.kubernetes.io/zone
      containers:`, "\n")}
	change := evidence.Change{Timestamp: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Service: "pricer", Kind: "deploy", Description: "pricer 2.0: spread replicas with podAntiAffinity per zone"}
	cases := []struct {
		name string
		ev   Gathered
		msg  string
		want []string
		none bool
	}{
		{"Deployment spec, required on its own pods", Gathered{K8s: K8sEvidence{Nodes: nodes, Deployments: []appsv1.Deployment{deploy("pricer", true)}}, Earlier: []evidence.Change{change}}, msg,
			[]string{"required (requiredDuringSchedulingIgnoredDuringExecution)", "topology.kubernetes.io/zone", "at most 3 pods can run (3 zones)", "the rule came with \"pricer 2.0"}, false},
		{"YAML projection kept as text", Gathered{K8s: K8sEvidence{Nodes: nodes}, Commands: []evidence.CommandOutput{yaml}}, msg,
			[]string{"on its own pods with topologyKey topology.kubernetes.io/zone", "at most 3 pods"}, false},
		{"preferred: no bound", Gathered{K8s: K8sEvidence{Nodes: nodes, Deployments: []appsv1.Deployment{deploy("pricer", false)}}}, msg,
			[]string{"preferred podAntiAffinity on its own pods"}, false},
		{"selector of other pods", Gathered{K8s: K8sEvidence{Nodes: nodes, Deployments: []appsv1.Deployment{deploy("ledger-db", true)}}}, msg,
			[]string{"sets a required (requiredDuringSchedulingIgnoredDuringExecution) podAntiAffinity with topologyKey"}, false},
		{"refused for CPU: nothing", Gathered{K8s: K8sEvidence{Nodes: nodes, Deployments: []appsv1.Deployment{deploy("pricer", true)}}},
			"0/9 nodes are available: 9 Insufficient cpu.", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := []Finding{{Kind: KindUnschedulable, Subject: "pricer", Namespace: "shop", Facts: map[string]string{"message": c.msg}}}
			explainAntiAffinity(&c.ev, found)
			f := found[0]
			if (f.fact("anti_key") == "") != c.none {
				t.Fatalf("anti_key %q, want none=%v", f.fact("anti_key"), c.none)
			}
			if c.none {
				return
			}
			h := &Hypothesis{Kind: KindUnschedulable, Subject: "pricer", Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if !strings.Contains(c.name, "required on its own") && !strings.Contains(c.name, "YAML") && strings.Contains(describe(h, Scope{}), "at most") {
				t.Errorf("a bound without a required rule on its own pods: %s", describe(h, Scope{}))
			}
		})
	}
}
