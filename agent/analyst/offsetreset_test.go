package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A consumer that skipped records after its committed offsets went out of
// range, as the Java client (Spring Kafka), librdkafka and kafka-python
// log it, with the broker's retention deletes, kafka-configs' retention.ms
// and the changes that stopped the consumer and cut the retention; a
// consumer that resumed from its committed offsets is none.
func TestDetectOffsetReset(t *testing.T) {
	at := func(min int) string {
		return win.Start.Add(time.Duration(min) * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	javaCommitted := at(30) + `  INFO 1 --- [ledger-aggregator] [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-ledger-aggregator-1, groupId=ledger-aggregator] Setting offset for partition payments.settled-0 to the committed offset FetchPosition{offset=5512231, offsetEpoch=Optional[17], currentLeader=LeaderAndEpoch{leader=Optional[kafka-pay-1.internal:9094 (id: 1 rack: euw1-az1)], epoch=17}}`
	javaReset := at(30) + `  INFO 1 --- [ledger-aggregator] [ntainer#0-0-C-1] o.a.k.c.c.internals.SubscriptionState    : [Consumer clientId=consumer-ledger-aggregator-1, groupId=ledger-aggregator] Resetting offset for partition payments.settled-0 to position FetchPosition{offset=5700231, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[kafka-pay-1.internal:9094 (id: 1 rack: euw1-az1)], epoch=17}}.`
	javaConfig := `	auto.offset.reset = latest`
	rdkafka := at(31) + ` %4|1794815512.690|OFFSET|rdkafka#consumer-1| [thrd:main]: orders.created [3]: offset reset (at offset 88120, broker 2) to END (90411): fetch failed due to requested offset not available on the broker: Broker: Offset out of range`
	pyReset := at(32) + ` WARNING kafka.consumer.fetcher Fetch offset 4411 is out of range for topic-partition TopicPartition(topic='invoices', partition=1)`
	javaResumed := at(30) + `  INFO 1 --- [billing] [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-billing-1, groupId=billing] Setting offset for partition invoices-0 to the committed offset FetchPosition{offset=1200, offsetEpoch=Optional[3], currentLeader=LeaderAndEpoch{leader=Optional[kafka-1:9092 (id: 1 rack: null)], epoch=3}}`
	broker := `[2026-11-16 06:01:58,162] INFO [UnifiedLog partition=payments.settled-3, dir=/var/lib/kafka/data] Deleting segment LogSegment(baseOffset=5631199, size=119537664, lastModifiedTime=1794805100000, largestRecordTimestamp=Some(1794805099000)) due to retention time 3600000ms breach based on the largest record timestamp in the segment (kafka.log.UnifiedLog)`
	broker2 := `[2026-11-16 06:01:58,162] INFO [Log partition=orders.created-3, dir=/kafka/data] Found deletable segments with base offsets [88000] due to retention time 7200000ms breach (kafka.log.Log)`
	configs := evidence.CommandOutput{Command: "/opt/kafka/bin/kafka-configs.sh --bootstrap-server kafka-pay-1.internal:9094 --describe --entity-type topics --entity-name payments.settled",
		Lines: []string{"Dynamic configs for topic payments.settled are:", "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}"}}
	changes := []evidence.Change{
		{Timestamp: win.BaselineStart.Add(-20 * time.Hour), Service: "kafka-pay", Kind: "infra", Description: "terraform kafka-topics: apply module v2 defaults to payments topics (retention.ms=3600000 for 'event' class topics)"},
		{Timestamp: win.Start.Add(-3 * time.Hour), Service: "ledger-aggregator", Kind: "config", Description: "ledger-aggregator scaled to 0 for payments-db maintenance window"},
		{Timestamp: win.Start.Add(29 * time.Minute), Service: "ledger-aggregator", Kind: "config", Description: "ledger-aggregator scaled back to 1 after maintenance"},
	}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		subject string
		why     bool
		want    []string
	}{
		{"Spring Kafka reset to latest after a pause longer than a 1h retention", []LogSet{minedSet("ledger-aggregator", false, 0, javaConfig, javaCommitted, javaReset), minedSet("kafka-pay-1", true, 0, broker)},
			[]evidence.CommandOutput{configs}, changes, "ledger-aggregator", true,
			[]string{"out of range", "payments.settled", "retention.ms=3600000, 1h", "auto.offset.reset=latest", "188000 records never read", "scaled to 0", "terraform"}},
		{"librdkafka offset reset to END, broker 2.x retention", []LogSet{minedSet("orders-sink", false, 0, rdkafka), minedSet("kafka-1", true, 0, broker2)}, nil, nil, "orders-sink", true,
			[]string{"orders.created", "2291 records never read (orders.created-3 from 88120 to 90411)", "retention.ms=7200000, 2h"}},
		{"kafka-python out of range", []LogSet{minedSet("invoice-indexer", false, 0, pyReset)}, nil, nil, "invoice-indexer", false, []string{"invoices", "out of range"}},
		{"resumed from its committed offsets", []LogSet{minedSet("billing", false, 0, javaResumed)}, nil, nil, "", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := onlyFinding(t, detectOffsetReset(&Gathered{Logs: tc.sets, Commands: tc.cmds, Changes: tc.changes, Window: win}, nil), tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindOffsetReset, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
			if tc.why != (f.fact("why") != "") {
				t.Errorf("why %q", f.fact("why"))
			}
		})
	}
}
