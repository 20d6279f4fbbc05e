package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestBacklog(t *testing.T) {
	stall := &Finding{Kind: KindConsumerStall, Subject: "order-events", Facts: map[string]string{"line": "[Consumer clientId=consumer-orders-1, groupId=orders] Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group."}}
	cases := []struct {
		facts   map[string]string
		support []*Finding
		want    []string
	}{
		{map[string]string{"what": "consumer lag", "topic": "orders", "baseline": "120", "peak": "48.3k"}, []*Finding{stall},
			[]string{"the consumer lag of group order-events on topic orders grows steadily from 120 to 48.3k: the consumers fall behind (backlog)", "poll loop is too slow", "Offset commit cannot be completed"}},
		{map[string]string{"what": "queue depth", "baseline": "3", "peak": "9100"}, nil, []string{"the queue depth of order-events grows steadily from 3 to 9100"}},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindBacklog, Subject: "order-events", Primary: []*Finding{{Kind: KindBacklog, Subject: "order-events", Facts: c.facts}}, Support: c.support}
		d := describe(h, Scope{})
		for _, s := range c.want {
			if !strings.Contains(d, s) {
				t.Errorf("description %q lacks %q", d, s)
			}
		}
		if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Let the consumers of order-events catch up") {
			t.Errorf("recommendations %v", recs)
		}
	}
}

// TestBacklogConsumer: a queue's consumer (named after it) timing out or
// slowing down is why the queue backs up; the backlog's description
// follows that hop. The dead-letter queue and unrelated services are not
// consumers.
func TestBacklogConsumer(t *testing.T) {
	for _, c := range []struct {
		subject, queue string
		want           bool
	}{
		{"order-events-consumer", "order-events", true},
		{"invoices-worker", "invoices", true},
		{"order-events-dlq", "order-events", false},
		{"order-events", "order-events", false},
		{"orders-api", "order-events", false},
		{"thumbnail-gen", "order-events", false},
	} {
		if got := consumerOf(c.subject, c.queue); got != c.want {
			t.Errorf("consumerOf(%q, %q) = %v, want %v", c.subject, c.queue, got, c.want)
		}
	}
	h := &Hypothesis{Kind: KindBacklog, Subject: "order-events", Primary: []*Finding{{Kind: KindBacklog, Subject: "order-events",
		Facts: map[string]string{"what": "queue backlog", "baseline": "13", "peak": "10101"}}}}
	timeout := &Finding{Kind: KindTimeout, Subject: "order-events-consumer", Facts: map[string]string{"line": "2026-04-27T21:32:51.931Z 97d9154a-4b3c-40de-959c-1f388beb0d89 Task timed out after 30.03 seconds"}}
	slow := &Finding{Kind: KindSlowOperation, Subject: "order-events-consumer", Facts: map[string]string{"line": "2026-04-27T21:33:22.750Z\t1a7d13a7-41ca-4ec8-b434-6138a2670e0b\tWARN\tfulfillment API slow: 8158ms (p50 budget 500ms)"}}
	dlq := &Finding{Kind: KindSaturation, Subject: "order-events-dlq"}
	for _, f := range []*Finding{timeout, slow} {
		if !backlogM.related(h, f) {
			t.Errorf("%s of %s not related to the backlog", f.Kind, f.Subject)
		}
	}
	if backlogM.related(h, dlq) {
		t.Errorf("the dead-letter queue related to the backlog")
	}
	h.Support = []*Finding{timeout, slow}
	d := describe(h, Scope{})
	for _, s := range []string{"its consumer order-events-consumer times out", "Task timed out after 30.03 seconds", "slow call it waits for", "fulfillment API slow: 8158ms"} {
		if !strings.Contains(d, s) {
			t.Errorf("description %q lacks %q", d, s)
		}
	}
}

// TestStuckPartition checks that a lag held by one partition while the
// others are drained is told from consumers lagging everywhere.
func TestStuckPartition(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	pts := func(vs ...float64) []evidence.Point {
		var out []evidence.Point
		for i, v := range vs {
			out = append(out, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
		}
		return out
	}
	stuck := map[string][]evidence.Point{"0": pts(3, 0), "1": pts(12, 2), "2": pts(0, 1), "7": pts(17200, 18021)}
	f := Finding{Kind: KindBacklog, Subject: "shipment-notifier"}
	stuckPartition(&f, stuck)
	if f.fact("partition") != "7" || f.fact("other_partitions") != "3" || len(f.Evidence) != 1 {
		t.Errorf("stuck partition: facts %v, evidence %v; want partition 7 of 4", f.Facts, f.Evidence)
	}
	h := &Hypothesis{Kind: KindBacklog, Subject: "shipment-notifier", Primary: []*Finding{&f}}
	if d := describeBacklog(h); !strings.Contains(d, "partition 7") || !strings.Contains(d, "stuck") {
		t.Errorf("describe = %q", d)
	}
	slow := map[string][]evidence.Point{"0": pts(3000, 4100), "1": pts(2800, 3900), "2": pts(3100, 4300)}
	g := Finding{Kind: KindBacklog, Subject: "order-events"}
	stuckPartition(&g, slow)
	if g.fact("partition") != "" {
		t.Errorf("lag on every partition read as partition %s stuck", g.fact("partition"))
	}
}
