package analyst

import (
	"fmt"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestOneMessageGroup reads the message group ids of a producer's sends to
// a FIFO queue (an application's JSON log, Go logfmt, the AWS SDK for
// Java's request as it prints it, the JavaScript SDK's input object): all
// of them under one group serialise the queue. The queue's depth dates
// the onset; the consumers' empty receives are named. Sends spread over
// many groups, or too few to tell, are not this.
func TestOneMessageGroup(t *testing.T) {
	w := testWindow()
	sends := func(format func(i int) string) []evidence.LogLine {
		var ls []evidence.LogLine
		for i := range 30 {
			ls = append(ls, evidence.LogLine{Time: w.Start.Add(time.Duration(40+i) * time.Second), Text: format(i)})
		}
		return ls
	}
	producer := func(lines []evidence.LogLine) LogSet {
		return LogSet{Source: "orders-api-6d7c-4rkwz", Subject: "orders-api", Origin: SrcLogs, Lines: lines}
	}
	consumer := func(empty bool) LogSet {
		n := `{"msg":"receive","queue":"orders-out.fifo","messages":0}`
		s := LogSet{Source: "fulfil-worker-5c9f-ghz5l", Subject: "fulfil-worker", Origin: SrcLogs, HasBaseline: true}
		s.Templates = append(s.Templates, analysis.LogTemplate{Template: n, Example: n, Count: 40, Incident: 40, FirstSeen: w.Start, FirstIncident: w.Start})
		if !empty {
			b := `{"msg":"receive","queue":"orders-out.fifo","messages":10}`
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: b, Example: b, Count: 60, Incident: 60, FirstSeen: w.Start, FirstIncident: w.Start})
		}
		return s
	}
	depth := MetricSet{Name: "ApproximateNumberOfMessagesVisible", Series: []evidence.Series{{Labels: evidence.Labels{"__name__": "ApproximateNumberOfMessagesVisible", "QueueName": "orders-out.fifo"}}}}
	for i, v := range []float64{2, 4, 1, 3, 2, 900, 2100, 3300, 4600, 5900} {
		depth.Series[0].Points = append(depth.Series[0].Points, evidence.Point{T: w.BaselineStart.Add(time.Duration(i) * 10 * time.Minute), V: v})
	}
	jsonSend := func(group func(i int) string) []evidence.LogLine {
		return sends(func(i int) string {
			return fmt.Sprintf(`2026-05-01T11:00:%02d.301Z {"level":"info","logger":"messaging.sqs","msg":"message sent","queue":"orders-out.fifo","message_group_id":"%s","message_deduplication_id":"o_%d"}`, i, group(i), 4000+i)
		})
	}
	constant := func(int) string { return "orders" }
	for _, c := range []struct {
		name    string
		logs    []LogSet
		metrics []MetricSet
		says    []string
	}{
		{"json log, depth and idle consumers", []LogSet{producer(jsonSend(constant)), consumer(true)}, []MetricSet{depth},
			[]string{`orders-api sends every message to orders-out.fifo with the same message group id "orders" (30 of 30 sends read)`, "consumed serially", "most receives of fulfil-worker come back empty"}},
		{"logfmt", []LogSet{producer(sends(func(i int) string {
			return fmt.Sprintf(`time=2026-05-01T11:00:%02dZ level=debug msg="sqs send" queue_url=https://sqs.eu-west-1.amazonaws.com/123456789012/orders-out.fifo message_group_id=tenant-eu dedup_id=%d`, i, i)
		})), consumer(false)}, nil,
			[]string{`orders-api sends every message to orders-out.fifo with the same message group id "tenant-eu"`}},
		{"aws sdk for java request", []LogSet{producer(sends(func(i int) string {
			return fmt.Sprintf(`2026-05-01 11:00:%02d.112 DEBUG 1 --- [exec-3] c.e.o.OutboxPublisher : sending SendMessageRequest(QueueUrl=https://sqs.us-east-1.amazonaws.com/123456789012/orders-out.fifo, MessageBody={"id":%d}, MessageDeduplicationId=%d, MessageGroupId=default)`, i, i, i)
		}))}, nil,
			[]string{`orders-api sends every message to orders-out.fifo with the same message group id "default"`}},
		{"aws sdk for javascript input", []LogSet{producer(sends(func(i int) string {
			return fmt.Sprintf(`{"level":30,"msg":"publish","input":"{ QueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-out.fifo', MessageGroupId: 'orders', MessageDeduplicationId: '%d' }"}`, i)
		}))}, nil,
			[]string{`message group id "orders"`}},
		{"a group per order", []LogSet{producer(jsonSend(func(i int) string { return fmt.Sprintf("ord_%d", 9100+i) })), consumer(true)}, []MetricSet{depth}, nil},
		{"too few sends to tell", []LogSet{producer(jsonSend(constant)[:8])}, []MetricSet{depth}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := detectOneMessageGroup(&Gathered{Logs: c.logs, Metrics: c.metrics, Window: w}, nil)
			wantWritten(t, KindOneMessageGroup, fs, c.says)
			if c.metrics != nil && len(fs) == 1 && !fs[0].Time.Equal(w.BaselineStart.Add(50*time.Minute)) {
				t.Errorf("onset %s, want the depth's rise at %s", fs[0].Time, w.BaselineStart.Add(50*time.Minute))
			}
		})
	}
}
