package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A consumer that started under a group with no committed offsets and
// reset to the earliest record, as the Java client (Spring Kafka),
// kafka-python and librdkafka log it, with kafka-consumer-groups'
// describe of the new and the abandoned group; the same start under
// auto.offset.reset=latest, and a consumer resuming from its committed
// offsets, are none.
func TestDetectGroupReplay(t *testing.T) {
	at := func(min int) string {
		return win.Start.Add(time.Duration(min) * time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	javaNone := at(20) + `  INFO 1 --- [billing-events-v3] [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-billing-events-v3-1, groupId=billing-events-v3] Found no committed offset for partition invoices.issued-2`
	javaReset := at(20) + `  INFO 1 --- [billing-events-v3] [ntainer#0-0-C-1] o.a.k.c.c.internals.SubscriptionState    : [Consumer clientId=consumer-billing-events-v3-1, groupId=billing-events-v3] Resetting offset for partition invoices.issued-2 to position FetchPosition{offset=1204, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[kafka-2:9092 (id: 2 rack: null)], epoch=4}}.`
	javaEarliest := `	auto.offset.reset = earliest`
	javaLatest := `	auto.offset.reset = latest`
	pyNone := at(21) + ` INFO kafka.coordinator.consumer No committed offset for partition TopicPartition(topic='push.requests', partition=0)`
	pyConf := at(21) + ` INFO notifier starting consumer group_id=push-notifier-2 auto_offset_reset=earliest`
	rdkafka := at(22) + ` %7|1794815512.690|OFFSET|rdkafka#consumer-1| [thrd:main]: orders.created [3]: offset reset (at offset INVALID, broker 2) to BEGINNING: no previously committed offset available: Local: No offset stored`
	javaResumed := at(20) + `  INFO 1 --- [billing] [ntainer#0-0-C-1] o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-billing-1, groupId=billing] Setting offset for partition invoices-0 to the committed offset FetchPosition{offset=1200, offsetEpoch=Optional[3], currentLeader=LeaderAndEpoch{leader=Optional[kafka-1:9092 (id: 1 rack: null)], epoch=3}}`
	describe := evidence.CommandOutput{Command: "kafka-consumer-groups.sh --bootstrap-server kafka:9092 --describe --all-groups", Lines: []string{
		"Consumer group 'billing-events' has no active members.",
		"",
		"GROUP           TOPIC            PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG     CONSUMER-ID     HOST            CLIENT-ID",
		"billing-events  invoices.issued  2          880112          880190          78      -               -               -",
		"",
		"GROUP              TOPIC            PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG     CONSUMER-ID                                    HOST         CLIENT-ID",
		"billing-events-v3  invoices.issued  2          20311           880190          859879  consumer-billing-events-v3-1-0a1b2c3d-4e5f    /10.1.2.3    consumer-billing-events-v3-1",
	}}
	configs := evidence.CommandOutput{Command: "kafka-configs.sh --bootstrap-server kafka:9092 --describe --entity-type topics --entity-name invoices.issued",
		Lines: []string{"Dynamic configs for topic invoices.issued are:", "  retention.ms=259200000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=259200000}"}}
	for _, tc := range []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"Spring Kafka under a new group.id, earliest, old group left without members", []LogSet{minedSet("billing-consumer", false, 0, javaEarliest, javaNone, javaReset)},
			[]evidence.CommandOutput{describe, configs}, "billing-consumer",
			[]string{"consumer group billing-events-v3", "no committed offsets on invoices.issued", "auto.offset.reset=earliest", "retention.ms=259200000, 72h", "859879 records behind", "previous group billing-events"}},
		{"kafka-python, group_id in its own start line", []LogSet{minedSet("push-notifier", false, 0, pyConf, pyNone)}, nil, "push-notifier",
			[]string{"consumer group push-notifier-2", "push.requests", "re-reads"}},
		{"librdkafka reset to BEGINNING for want of a stored offset", []LogSet{minedSet("orders-sink", false, 0, rdkafka)}, nil, "orders-sink",
			[]string{"orders.created", "auto.offset.reset=earliest"}},
		{"a new group starting at the end replays nothing", []LogSet{minedSet("billing-consumer", false, 0, javaLatest, javaNone, javaReset)}, nil, "", nil},
		{"resumed from its committed offsets", []LogSet{minedSet("billing", false, 0, javaEarliest, javaResumed)}, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Logs: tc.sets, Commands: tc.cmds, Window: win}
			f := onlyFinding(t, detectGroupReplay(ev, nil), tc.subject)
			if f == nil {
				return
			}
			// The reset that follows is a new group's start, not an
			// out-of-range offset.
			if got := detectOffsetReset(ev, nil); len(got) != 0 {
				t.Errorf("offset reset found too: %s", got[0].Summary)
			}
			h := &Hypothesis{Kind: KindGroupReplay, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}
