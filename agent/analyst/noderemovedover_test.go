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
	// A planned drain read from its change, the workload's pod stopped
	// minutes after it, the autoscaler's scale-up for the replacement and
	// the replacement scheduled on the new node (the pods' events).
	planned := []evidence.LogLine{
		{Time: at, Text: `planned drain of node ip-10-0-3-41.ec2.internal: infra change of nodes at 02:40: "patch window: cordon+drain ip-10-0-3-41.ec2.internal"`},
		{Time: at.Add(2 * time.Minute), Text: "stopped pod search/search-api-7c4d9b8f6-t4bnh"},
		{Time: at.Add(2 * time.Minute), Text: "pod triggered scale-up: [{eks-general-m6i-2xl-6cc4f1a2 5->6 (max: 10)}]"},
		{Time: at.Add(3 * time.Minute), Text: "0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient cpu."},
		{Time: at.Add(20 * time.Minute), Text: "Successfully assigned search/search-api-7c4d9b8f6-q9z4d to ip-10-0-6-208.ec2.internal"},
		{Time: at.Add(50 * time.Minute), Text: "stopped pod search/search-api-7c4d9b8f6-zzzzz"},
	}
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
		{"a planned drain, the replacement scheduled on the autoscaler's new node", planned, "search-api", "search", true, "ip-10-0-3-41.ec2.internal", 1, "ip-10-0-6-208.ec2.internal", ""},
		{"a planned drain that stopped none of the workload's pods", planned, "search-indexer", "search", false, "", 0, "", ""},
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

// A workload's error and latency series that stayed within their range
// before the node went are no user impact; one that rose above it is.
func TestSubjectSeriesFlat(t *testing.T) {
	since := win.Start.Add(20 * time.Minute)
	series := func(vals ...float64) []MetricSet {
		s := evidence.Series{Labels: evidence.Labels{"service": "search-api"}}
		for i, v := range vals {
			s.Points = append(s.Points, evidence.Point{T: win.Start.Add(time.Duration(i*4) * time.Minute), V: v})
		}
		return []MetricSet{{Name: "search_api:error_ratio:5m", Class: MetricErrors, Series: []evidence.Series{s}}}
	}
	if flat, words := subjectSeriesFlat(series(0, 0.0003, 0, 0.0002, 0, 0.0001, 0.0003, 0, 0.0002, 0, 0.0001), "search-api", since); !flat || !strings.Contains(words, "usual range") {
		t.Errorf("noise at its usual level is flat: %v %q", flat, words)
	}
	if flat, _ := subjectSeriesFlat(series(0, 0.0003, 0, 0.0002, 0, 0.0001, 0.02, 0.05, 0.04, 0.03, 0.01), "search-api", since); flat {
		t.Error("errors that rose above their range are user impact")
	}
	if flat, _ := subjectSeriesFlat(series(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "checkout", since); flat {
		t.Error("no series of the workload says nothing")
	}
}
