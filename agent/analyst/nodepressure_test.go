package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
