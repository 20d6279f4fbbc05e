package kubetext_test

import (
	"testing"
	"time"
)

// An events table whose header a pipe cut off is read even when its
// columns are narrower than kubectl's header would make them (copied into
// a ticket, re-aligned by hand): each row shows itself an event by its
// type and its kind/name object. Rows that are not events are not read.
func TestHeaderlessNarrowEvents(t *testing.T) {
	ref := time.Date(2026, 11, 5, 14, 50, 0, 0, time.UTC)
	cases := []struct {
		name, text string
		want       []string // kind/namespace/name reason @time of each event read, in order
	}{
		{"tail, narrow first column", `$ kubectl get events -n shop --sort-by=.lastTimestamp | tail -3
44m     Normal    ScalingReplicaSet   deployment/web                Scaled up replica set web-7d9c8b6f5 to 10 from 6
12m     Warning   BackOff             pod/indexer-6f8d9c7b5-8kq4n   Back-off restarting failed container
2m10s   Warning   FailedCreate        replicaset/web-7d9c8b6f5      Error creating: pods "web-7d9c8b6f5-p8w6r" is forbidden: exceeded quota: compute, requested: requests.cpu=800m, used: requests.cpu=11500m, limited: requests.cpu=12
`, []string{"Deployment/shop/web ScalingReplicaSet @14:06", "Pod/shop/indexer-6f8d9c7b5-8kq4n BackOff @14:38", "ReplicaSet/shop/web-7d9c8b6f5 FailedCreate @14:47"}},
		{"grep, all namespaces", `$ kubectl get events -A | grep Warning
shop   5m    Warning   FailedScheduling   pod/api-1   0/3 nodes are available: 3 Insufficient cpu.
ops    1m    Warning   FailedMount        pod/db-0    MountVolume.SetUp failed for volume "data"
`, []string{"Pod/shop/api-1 FailedScheduling @14:45", "Pod/ops/db-0 FailedMount @14:49"}},
		{"not an events table", `$ kubectl get events -n shop | grep -i quota
quota is fine   really   nothing/here   at all
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := parseEvents(t, c.text, ref, c.want)
			if len(c.want) > 0 && len(res.Events) > 0 && res.Events[len(res.Events)-1].Message == "" {
				t.Errorf("last event %+v", res.Events[len(res.Events)-1])
			}
		})
	}
}
