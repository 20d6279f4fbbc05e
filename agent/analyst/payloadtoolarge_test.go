package analyst

import (
	"testing"
	"time"
)

// TestPayloadTooLargeLines: a payload refused for its size as Kafka's
// producer and broker, gRPC, nginx and HTTP servers, SQS, RabbitMQ, NATS
// and MySQL say it, with the size and the limit when stated; a JVM's
// circuit breaker ("Data too large") and a large-but-accepted message are
// not it.
func TestPayloadTooLargeLines(t *testing.T) {
	cases := []struct {
		line        string
		match       bool
		size, limit string
	}{
		{`org.apache.kafka.common.errors.RecordTooLargeException: The message is 1880291 bytes when serialized which is larger than 1048576, which is the value of the max.request.size configuration.`, true, "1880291", "1048576"},
		{`[2026-03-02 11:00:01,204] ERROR [Producer clientId=producer-1] Got error produce response in correlation id 87 on topic-partition orders-0, splitting and retrying (2147483647 attempts left). Error: MESSAGE_TOO_LARGE (org.apache.kafka.clients.producer.internals.Sender)`, true, "", ""},
		{`level=error msg="publish failed" err="kafka server: Message was too large, server rejected it to avoid allocation error: RecordTooLargeException"`, true, "", ""},
		{`rpc error: code = ResourceExhausted desc = grpc: received message larger than max (5242880 vs. 4194304)`, true, "5242880", "4194304"},
		{`2026/03/02 11:00:01 [error] 31#31: *8812 client intended to send too large body: 12582912 bytes, client: 10.0.3.4, server: api, request: "POST /upload HTTP/1.1"`, true, "", ""},
		{`upload failed: Request failed with status code 413 (413 Request Entity Too Large)`, true, "", ""},
		{`An error occurred (InvalidParameterValue) when calling the SendMessage operation: One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.`, true, "", ""},
		{`operation basic.publish caused a channel exception precondition_failed: message size 157286400 is larger than configured max size 134217728`, true, "157286400", "134217728"},
		{`nats: maximum payload exceeded`, true, "", ""},
		{`com.mysql.cj.jdbc.exceptions.PacketTooBigException: Packet for query is too large (20,971,565 > 16,777,216). You can change this value on the server by setting the 'max_allowed_packet' variable.`, true, "", ""},
		{`[2026-03-02T11:00:01,000][WARN ][o.e.i.b.HierarchyCircuitBreakerService] [parent] Data too large, data for [<http_request>] would be [1020000000/972.7mb]`, false, "", ""},
		{`published OrderConfirmed ORD-1 (912004 bytes) to orders.events`, false, "", ""},
	}
	for _, c := range cases {
		if got := payloadTooLargeRE.MatchString(c.line); got != c.match {
			t.Errorf("%.70q: match %v, want %v", c.line, got, c.match)
			continue
		}
		if s, l := payloadSizes(c.line); c.size != "" && (s != c.size || l != c.limit) {
			t.Errorf("%.70q: size %q limit %q, want %q %q", c.line, s, l, c.size, c.limit)
		}
		if c.match {
			if k, _ := ClassifyLine(c.line); k != KindPayloadTooLarge {
				t.Errorf("%.70q classified %q", c.line, k)
			}
		}
	}
}

// TestPayloadTooLargeDescribed: the description names the size against the
// limit and its setting, and says the class explains the errors it causes;
// a deploy (what is sent changed) or a change of the limit fits it, a
// feature flag of something else does not.
func TestPayloadTooLargeDescribed(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	f := Finding{Kind: KindPayloadTooLarge, Subject: "orders-api", Time: t0, Weight: 0.92}
	f.setFact("line", `org.apache.kafka.common.errors.RecordTooLargeException: The message is 1158335 bytes when serialized which is larger than 1048576, which is the value of the max.request.size configuration.`)
	h := &Hypothesis{Kind: KindPayloadTooLarge, Subject: "orders-api", Onset: t0, Primary: []*Finding{&f}}
	wantDescribed(t, h, Scope{}, "1158335 bytes", "limit of 1048576", "max.request.size", "explains the others")
	deploy := &Finding{Kind: KindDeploy, Subject: "orders-api"}
	deploy.setFact("description", "orders-api 5.12.0: event carries the catalog snapshot")
	limit := &Finding{Kind: KindConfigChange, Subject: "kafka"}
	limit.setFact("description", "topic orders.events max.message.bytes 2097152 -> 1048576")
	flag := &Finding{Kind: KindFeatureFlag, Subject: "search"}
	flag.setFact("description", "fuzzy matching on")
	for c, want := range map[*Finding]bool{deploy: true, limit: true, flag: false} {
		if got := payloadTooLarge.fitsChange(h, c); got != want {
			t.Errorf("%s fits: %v, want %v", c.fact("description"), got, want)
		}
	}
}
