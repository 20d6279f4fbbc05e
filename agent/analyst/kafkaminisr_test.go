package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestKafkaMinISR reads producers' NOT_ENOUGH_REPLICAS (the Java client's
// Sender and exception, a partition leader's own error) with the brokers'
// failed log directories into one finding on the cluster, names the
// retention change that grew the brokers' data, and leaves producers'
// other Kafka errors alone.
func TestKafkaMinISR(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(5 * time.Minute)
	set := func(src string, ls ...string) LogSet {
		s := LogSet{Source: src + ".log", Subject: src, Origin: SrcLogs, Host: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 6, Incident: 6, FirstSeen: at, FirstIncident: at, LastSeen: w.End})
		}
		return s
	}
	producer := set("order-service",
		`2026-04-14T02:34:00.761Z  WARN 1 --- [order-service] [kafka-producer-network-thread | order-service-producer-1] o.a.k.c.p.i.Sender                       : [Producer clientId=order-service-producer-1] Got error produce response with correlation id 48213 on topic-partition orders.events-4, retrying (2147483646 attempts left). Error: NOT_ENOUGH_REPLICAS`,
		`Caused by: org.apache.kafka.common.errors.NotEnoughReplicasException: Messages are rejected since there are fewer in-sync replicas than required.`,
		`2026-04-14T02:34:40.471Z ERROR 1 --- [order-service] [nio-8080-exec-32] c.a.o.api.OrderController                : order confirmation failed orderId=ORD-52647383: event publish to orders.events timed out after 30000 ms`)
	leader := set("kafka-1-server",
		`2026-04-14T02:34:10.654541950Z [2026-04-14 02:34:10,654] ERROR [ReplicaManager broker=1] Error processing append operation on partition orders.events-7 (kafka.server.ReplicaManager)`,
		`org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition orders.events-7`)
	full := set("kafka-2-server",
		`2026-04-14T02:31:12.526132368Z [2026-04-14 02:31:12,526] ERROR Error while appending records to clickstream.raw-3 in dir /var/lib/kafka/data (org.apache.kafka.storage.internals.log.LogDirFailureChannel)`,
		`java.io.IOException: No space left on device`,
		`2026-04-14T02:31:12.010132447Z [2026-04-14 02:31:12,010] ERROR [ReplicaManager broker=2] Stopping serving replicas in dir /var/lib/kafka/data (kafka.server.ReplicaManager)`,
		`2026-04-14T02:31:12.200133951Z [2026-04-14 02:31:12,200] ERROR Shutdown broker because all log dirs in /var/lib/kafka/data have failed (kafka.log.LogManager)`)
	retention := evidence.Change{Timestamp: at.Add(-5 * 24 * time.Hour), Service: "kafka", Kind: "config", Description: "topic clickstream.raw: retention.ms 86400000 -> 604800000 (analytics asked for 7 days of replay)"}
	timeout := Finding{Kind: KindTimeout, Subject: "orders", Related: []string{"order-service"},
		Facts: map[string]string{"caller": "order-service", "line": "order confirmation failed orderId=ORD-52647383: event publish to orders.events timed out after 30000 ms"}}
	// Brokers restarted one at a time (a provider's patching, a rolling
	// restart), their lines folded into one template over the brokers.
	restarts := func(src string, offset time.Duration, down, up string) LogSet {
		s := LogSet{Source: src, Subject: src, Origin: SrcLogs}
		s.Templates = append(s.Templates,
			analysis.LogTemplate{Template: down, Example: down, Last: strings.Replace(strings.Replace(down, "id=2", "id=3", 1), "id=4", "id=5", 1), Count: 3, Incident: 3, FirstSeen: at.Add(offset), FirstIncident: at.Add(offset), LastSeen: at.Add(offset + 30*time.Minute)},
			analysis.LogTemplate{Template: up, Example: up, Count: 3, Incident: 3, FirstSeen: at.Add(offset + 12*time.Minute), LastSeen: at.Add(offset + 42*time.Minute)})
		return s
	}
	zk := restarts("b-2.orders-prod.kafka.eu-west-1.amazonaws.com", -30*time.Second,
		`[2026-11-27 03:04:02,118] INFO [KafkaServer id=2] shutting down (kafka.server.KafkaServer)`,
		`[2026-11-27 03:16:55,770] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)`)
	kraft := restarts("kafka-broker", -time.Minute,
		`2026-04-14T02:33:00.010Z [2026-04-14 02:33:00,010] INFO [BrokerServer id=4] Transition from STARTED to SHUTTING_DOWN (kafka.server.BrokerServer)`,
		`2026-04-14T02:36:10.200Z [2026-04-14 02:36:10,200] INFO [BrokerServer id=4] Transition from STARTING to STARTED (kafka.server.BrokerServer)`)
	oldRestart := restarts("kafka-broker", -3*time.Hour,
		`[2026-04-13 23:34:00,010] INFO [KafkaServer id=2] shutting down (kafka.server.KafkaServer)`,
		`[2026-04-13 23:36:10,200] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)`)
	mskNotice := evidence.CommandOutput{Command: "aws health describe-event-details --event-arns arn:aws:health:eu-west-1::event/KAFKA/AWS_KAFKA_PLANNED_LIFECYCLE_EVENT/x --output text", Lines: []string{
		"Amazon MSK will apply security patches to the brokers of your cluster orders-prod between 03:00 and 05:00 GMT. During patching, Amazon MSK restarts brokers one at a time."}}
	describeRF2 := evidence.CommandOutput{Command: "kafka-topics.sh --bootstrap-server b-1:9092 --describe --topic orders.events", Lines: []string{
		"Topic: orders.events\tTopicId: 9rWq3lF0T8mYc2bq7n1XkA\tPartitionCount: 12\tReplicationFactor: 2\tConfigs: min.insync.replicas=2,cleanup.policy=delete",
		"\tTopic: orders.events\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2"}}
	describeRF3 := evidence.CommandOutput{Command: "kafka-topics --bootstrap-server kafka:9092 --describe --topic orders.events", Lines: []string{
		"Topic: orders.events\tTopicId: Xc0p4Rk2S6aVb1Lw9m3QzE\tPartitionCount: 12\tReplicationFactor: 3\tConfigs: min.insync.replicas=2"}}
	cases := []struct {
		name    string
		logs    []LogSet
		earlier []evidence.Change
		says    []string
		related []string
		cmds    []evidence.CommandOutput
		not     []string
	}{
		{"MSK patching restarts brokers one at a time, RF 2 with min.insync 2", []LogSet{producer, zk}, nil,
			[]string{"Kafka brokers 2, 3 and others (3 restarts) were restarted one at a time by the provider's broker patching (maintenance)", "Amazon MSK will apply security patches", "topic orders.events has replication factor 2 with min.insync.replicas=2", "order-service's sends fail"},
			[]string{"order-service"}, []evidence.CommandOutput{mskNotice, describeRF2}, nil},
		{"KRaft rolling restart, RF 3", []LogSet{producer, kraft}, nil,
			[]string{"Kafka brokers 4, 5 and others (3 restarts) were restarted one at a time by a rolling restart", "order-service's sends fail"},
			[]string{"order-service"}, []evidence.CommandOutput{describeRF3}, []string{"replication factor 3", "patching"}},
		{"a restart hours before the onset is not it", []LogSet{producer, oldRestart}, nil,
			[]string{"partitions of orders.events on kafka are left with fewer in-sync replicas"},
			[]string{"order-service"}, nil, []string{"restarted"}},
		{"brokers' disks full", []LogSet{producer, leader, full}, []evidence.Change{retention},
			[]string{"Kafka broker kafka-2-server took its log directory /var/lib/kafka/data offline", `"No space left on device" (disk full)`, "partitions of orders.events on kafka", "min.insync.replicas = 2", "order-service's sends fail", "retention.ms 86400000 -> 604800000"},
			[]string{"order-service", "kafka-2-server", "orders"}, nil, nil},
		{"the producer's log alone", []LogSet{producer}, nil,
			[]string{"partitions of orders.events on kafka are left with fewer in-sync replicas", "order-service's sends fail"}, []string{"order-service"}, nil, nil},
		{"Sarama and librdkafka producers", []LogSet{set("order-service",
			`{"level":"error","ts":"2026-04-14T02:34:00Z","msg":"publish failed","topic":"orders.events","error":"kafka server: Messages are rejected since there are fewer in-sync replicas than required."}`,
			`%3|1776133200.123|ERROR|rdkafka#producer-1| [thrd:app]: Delivery failed for orders.events [4]: Broker: Not enough in-sync replicas`)}, nil,
			[]string{"fewer in-sync replicas (ISR) than min.insync.replicas", "order-service's sends fail"}, []string{"order-service"}, nil, nil},
		{"other producer errors are not this", []LogSet{set("order-service",
			`[Producer clientId=p-1] Got error produce response with correlation id 1 on topic-partition orders.events-4, retrying. Error: NOT_LEADER_OR_FOLLOWER`,
			`org.apache.kafka.common.errors.TimeoutException: Expiring 1 record(s) for orders.events-4:30001 ms has passed since batch creation`)}, nil, nil, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectKafkaMinISR(&Gathered{Logs: c.logs, Earlier: c.earlier, Commands: c.cmds, Window: w}, []Finding{timeout})
			wantWrittenOn(t, KindKafkaMinISR, "kafka", fs, c.says)
			if c.says == nil {
				return
			}
			for _, r := range c.related {
				if !fs[0].relates(r) {
					t.Errorf("%v does not relate to %s", fs[0].Related, r)
				}
			}
			h := &Hypothesis{Kind: KindKafkaMinISR, Subject: "kafka", Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
			for _, n := range c.not {
				if strings.Contains(describe(h, Scope{}), n) {
					t.Errorf("description says %q", n)
				}
			}
		})
	}
	deploy := &Finding{Kind: KindDeploy, Facts: map[string]string{"description": "order-service 7.3.1: bump jackson-databind 2.17.0"}}
	change := &Finding{Kind: KindConfigChange, Facts: map[string]string{"description": retention.Description}}
	if kafkaMinISR.fitsChange(nil, deploy) || !kafkaMinISR.fitsChange(nil, change) || !kafkaMinISR.strictTriggers {
		t.Errorf("only a change to what the brokers keep may trigger it")
	}
}
