package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// TestTopicMissing reads a producer's publishes to a destination that does
// not exist, as the Java Kafka client, librdkafka, kafkajs, RabbitMQ and
// SQS clients say it, names the destination, and quotes the producer
// holding the messages behind the failing one.
func TestTopicMissing(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(5 * time.Minute)
	set := func(ls ...string) []LogSet {
		s := LogSet{Source: "relay-7c9d-x2k4q", Subject: "relay", Origin: SrcLogs}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 6, Incident: 6, FirstSeen: at, FirstIncident: at, LastSeen: w.End})
		}
		return []LogSet{s}
	}
	for _, c := range []struct {
		name string
		logs []LogSet
		says []string
	}{
		{"java client, ordered relay", set(
			`2026-04-14T10:07:42.018Z  WARN 1 --- [relay] [ad | producer-1] org.apache.kafka.clients.NetworkClient   : [Producer clientId=producer-1] Error while fetching metadata with correlation id 9120417 : {invoice.voided=UNKNOWN_TOPIC_OR_PARTITION}`,
			`org.apache.kafka.common.errors.TimeoutException: Topic invoice.voided not present in metadata after 60000 ms.`,
			`2026-04-14T10:08:42.031Z ERROR 1 --- [relay] [poller-1] c.e.relay.Publisher : publishing event 5512 (topic=invoice.voided) failed, attempt 3; retrying in 5000 ms, later events are held`),
			[]string{"relay publishes to topic invoice.voided, which does not exist", "UNKNOWN_TOPIC_OR_PARTITION", "holds the messages queued behind it", "later events are held"}},
		{"librdkafka", set(
			`%3|1776161262.123|ERROR|rdkafka#producer-1| [thrd:app]: Delivery failed for topic=invoice.voided: Broker: Unknown topic or partition`),
			[]string{"publishes to topic invoice.voided", "Unknown topic or partition"}},
		{"kafkajs", set(
			`{"level":"ERROR","timestamp":"2026-04-14T10:07:42.018Z","logger":"kafkajs","message":"[Connection] Response Metadata(key: 3, version: 6)","broker":"kafka-0:9092","clientId":"relay","error":"This server does not host this topic-partition","topic":"invoice.voided"}`),
			[]string{"publishes to topic invoice.voided", "does not host this topic-partition"}},
		{"rabbitmq", set(
			`2026-04-14 10:07:42,018 ERROR pika.channel: Channel closed: (404, "NOT_FOUND - no exchange 'billing.events' in vhost '/'")`),
			[]string{"publishes to exchange 'billing.events'", "NOT_FOUND - no exchange"}},
		{"sqs", set(
			`level=error msg="send failed" queue=https://sqs.eu-west-1.amazonaws.com/123456789012/invoices-v2 err="operation error SQS: SendMessage, https response error StatusCode: 400, RequestID: 1d2c, AWS.SimpleQueueService.NonExistentQueue: The specified queue does not exist for this wsdl version."`),
			[]string{"publishes to https://sqs.eu-west-1.amazonaws.com/123456789012/invoices-v2", "NonExistentQueue"}},
		{"other producer errors are not this", set(
			`[Producer clientId=p-1] Got error produce response with correlation id 1 on topic-partition orders.events-4, retrying. Error: NOT_LEADER_OR_FOLLOWER`),
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectTopicMissing(&Gathered{Logs: c.logs, Window: w}, nil)
			wantWritten(t, KindTopicMissing, fs, c.says)
		})
	}
}
