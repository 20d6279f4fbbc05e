package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A node removal read from the cluster autoscaler's klog lines and from
// the pods' ScaleDown events: the node, why, the workload's pods evicted,
// the wait for a node; a removal that evicted only other workloads' pods,
// and a scale-up alone, are none.
func TestReadNodeRemoval(t *testing.T) {
	at := time.Date(2026, 11, 26, 2, 40, 0, 0, time.UTC)
	lines := func(texts ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for _, x := range texts {
			tm, ok := evidence.LineTime([]byte(x), at.Add(6*time.Hour))
			if !ok {
				tm = at.Add(time.Duration(len(out)) * time.Minute)
			}
			out = append(out, evidence.LogLine{Time: tm, Text: x})
		}
		return out
	}
	ca := lines(
		`I1126 02:40:12.331498       1 cluster.go:236] Node ip-10-90-2-115.eu-west-1.compute.internal - cpu requested is 41.25% of allocatable`,
		`I1126 02:51:13.902211       1 nodes.go:84] ip-10-90-2-115.eu-west-1.compute.internal is unneeded since 2026-11-26 02:40:12.330911 +0000 UTC duration 11m1.571300s`,
		`I1126 02:51:14.011847       1 actuator.go:212] Scale-down: removing node ip-10-90-2-115.eu-west-1.compute.internal, utilization: {0.4125 0.3019 0 cpu 0.4125}, pods to reschedule: web/storefront-7b9c8d6f5-kx2bq,web/storefront-7b9c8d6f5-9lwfd,payments/ledger-writer-5c7f9d6b8-9gq1c`,
		`I1126 02:51:21.440917       1 delete.go:193] Successfully evicted web/storefront-7b9c8d6f5-kx2bq`,
		`I1126 02:52:05.118210       1 klogx.go:87] Pod web/storefront-7b9c8d6f5-m4zt2 is unschedulable`,
		`W1126 02:57:06.442180       1 clusterstate.go:297] Disabling scale-up for node group eks-apps-b until 2026-11-26 03:02:06.442109 +0000 UTC; errorClass=OutOfResource; errorCode=placeholder-cannot-be-fulfilled`,
		`I1126 03:24:01.771520       1 clusterstate.go:1101] Node ip-10-90-2-207.eu-west-1.compute.internal ready, registered 4m21s after scale-up`,
	)
	drain := lines(
		`I0412 11:02:40.118210       1 drain.go:151] Draining node gke-pool-1-6f2c-x9k2: evicting pods shop/cart-api-6d5c4b3a2-abcde, shop/cart-api-6d5c4b3a2-fghij`,
		`I0412 11:02:48.440917       1 delete.go:193] Successfully evicted shop/cart-api-6d5c4b3a2-abcde`,
	)
	events := lines("Scale-down: deleting pod for node scale down; evicted pod shop/cart-api-6d5c4b3a2-abcde", "0/6 nodes are available: 6 Insufficient cpu.")
	cases := []struct {
		name     string
		lines    []evidence.LogLine
		workload string
		ns       string
		want     bool
		node     string
		evicted  int
		joined   string
		fail     string
	}{
		{"cluster-autoscaler scale-down, wait, new node", ca, "storefront", "web", true, "ip-10-90-2-115.eu-west-1.compute.internal", 2, "ip-10-90-2-207.eu-west-1.compute.internal", "OutOfResource"},
		{"another workload's pods evicted", ca, "checkout", "web", false, "", 0, "", ""},
		{"the same name in another namespace", ca, "ledger-writer", "web", false, "", 0, "", ""},
		{"a drain's evictions", drain, "cart-api", "shop", true, "gke-pool-1-6f2c-x9k2", 2, "", ""},
		{"the pods' ScaleDown events", events, "cart-api", "shop", true, "", 1, "", ""},
		{"a scale-up alone", ca[4:], "storefront", "web", false, "", 0, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := readNodeRemoval(c.lines, c.workload, c.ns)
			if ok != c.want {
				t.Fatalf("found %v, want %v: %+v", ok, c.want, r)
			}
			if !ok {
				return
			}
			if r.node != c.node || len(r.evicted) != c.evicted || r.joined != c.joined || r.scaleUpFail != c.fail {
				t.Errorf("node %q evicted %v joined %q fail %q, want %q %d %q %q", r.node, r.evicted, r.joined, r.scaleUpFail, c.node, c.evicted, c.joined, c.fail)
			}
			for _, p := range r.evicted {
				if !strings.Contains(p, c.workload) {
					t.Errorf("evicted %q is not of %s", p, c.workload)
				}
			}
		})
	}
}
