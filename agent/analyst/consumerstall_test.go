package analyst

import (
	"strings"
	"testing"
)

func TestConsumerStall(t *testing.T) {
	testLines(t, consumerStall, []lineCase{
		{`[Consumer clientId=consumer-orders-1, groupId=orders] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages.`, KindConsumerStall},
		{`org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member.`, KindConsumerStall},
		{`[Consumer clientId=consumer-orders-1, groupId=orders] Attempt to heartbeat failed since group is rebalancing`, KindConsumerStall},
		{`[Consumer clientId=consumer-orders-1, groupId=orders] Successfully joined group with generation Generation{generationId=42}`, ""},
	})
	h := &Hypothesis{Kind: KindConsumerStall, Subject: "orders-consumer", Primary: []*Finding{{Kind: KindConsumerStall, Subject: "orders-consumer",
		Facts: map[string]string{"line": "Attempt to heartbeat failed since group is rebalancing"}}}}
	if d := describe(h, Scope{}); !strings.Contains(d, "the consumers of orders-consumer fall behind: their poll loop is too slow") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Let the consumers of orders-consumer catch up") {
		t.Errorf("recommendations %v", recs)
	}
}
