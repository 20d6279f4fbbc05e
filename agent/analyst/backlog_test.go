package analyst

import (
	"strings"
	"testing"
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
