package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestNodePressure(t *testing.T) {
	testEvents(t, nodePressure, []eventCase{
		{"Node", "worker-3", "NodeHasDiskPressure", corev1.EventTypeNormal, "Node worker-3 status is now: NodeHasDiskPressure",
			KindNodePressure, []string{"node worker-3 is under"}},
		{"Node", "worker-3", "EvictionThresholdMet", corev1.EventTypeWarning, "Attempting to reclaim ephemeral-storage",
			KindNodePressure, []string{"node worker-3 is under", "the kubelet evicts pods to reclaim it"}},
		{"Node", "worker-3", "NodeHasNoDiskPressure", corev1.EventTypeNormal, "Node worker-3 status is now: NodeHasNoDiskPressure", "", nil},
	})
}

// TestLargestConsumer checks that node pressure names what fills the node:
// the container the kubelet's eviction message says uses the most.
func TestLargestConsumer(t *testing.T) {
	ev := func(subject, msg string) *Finding {
		return &Finding{Kind: KindEviction, Subject: subject, Facts: map[string]string{"message": msg}}
	}
	h := &Hypothesis{Kind: KindNodePressure, Subject: "ip-10-44-12-87.ec2.internal",
		Primary: []*Finding{{Kind: KindNodePressure, Subject: "ip-10-44-12-87.ec2.internal", Facts: map[string]string{"resource": "disk"}}},
		Support: []*Finding{
			ev("audit-shipper", "The node was low on resource: ephemeral-storage. Threshold quantity: 8385118637, available: 6906804Ki. Container shipper was using 61341208Ki, request is 0, has larger consumption of ephemeral-storage. "),
			ev("thumbnailer", "The node was low on resource: ephemeral-storage. Threshold quantity: 8385118637, available: 6906804Ki. Container thumbs was using 1048576Ki, request is 2Gi, has larger consumption of ephemeral-storage. "),
		}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "container shipper of audit-shipper, using 58.5 GiB with no request") {
		t.Errorf("description %q does not name the largest consumer", d)
	}
}

// TestTopMemoryPod checks that a node under memory pressure names the pod
// using most memory on it from kubectl top pod readings (Mi and Gi as
// kubectl prints them), on that node only, and not a pod using a small
// share of the node.
func TestTopMemoryPod(t *testing.T) {
	node := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("15Gi")}}}
	use := func(ns, name, mem, on string) PodUsage {
		return PodUsage{Usage: evidence.Usage{Kind: "Pod", Namespace: ns, Name: name, Memory: resource.MustParse(mem)}, Node: on}
	}
	cases := []struct {
		name  string
		usage []PodUsage
		want  string
	}{
		{"Mi, on the node", []PodUsage{use("ml", "scorer-6c9d7b5f8-tk2q8", "13187Mi", "node-a"), use("web", "cache-6d8b7c9f5-4xw7t", "918Mi", "node-a"), use("ml", "scorer-6c9d7b5f8-8wvb3", "14000Mi", "node-b")},
			"pod ml/scorer-6c9d7b5f8-tk2q8 of scorer, using 12.9 GiB (85% of the node's allocatable memory)"},
		{"Gi", []PodUsage{use("batch", "etl-0", "9Gi", "node-a")}, "pod batch/etl-0 of etl, using 9.0 GiB"},
		{"a small share: none", []PodUsage{use("web", "cache-6d8b7c9f5-4xw7t", "918Mi", "node-a")}, ""},
		{"node unknown: none", []PodUsage{use("ml", "scorer-6c9d7b5f8-tk2q8", "13187Mi", "")}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Finding{Kind: KindNodePressure, Subject: "node-a", Facts: map[string]string{"resource": "memory"}}
			topMemoryPod(&Gathered{K8s: K8sEvidence{Usage: c.usage, Nodes: []corev1.Node{node}}}, f)
			h := &Hypothesis{Kind: KindNodePressure, Subject: "node-a", Primary: []*Finding{f}}
			d := describe(h, Scope{})
			if c.want == "" && strings.Contains(d, "largest consumer of memory on the node") || c.want != "" && !strings.Contains(d, c.want) {
				t.Errorf("description %q, want %q", d, c.want)
			}
			// The consumer's workload is among the systems affected.
			if w := f.fact("affected"); c.want != "" && !strings.Contains(c.want, " of "+w+",") {
				t.Errorf("affected %q, want the workload of %q", w, c.want)
			}
		})
	}
}
