package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestDetectVisibilityTimeout finds a queue whose visibility timeout is
// shorter than its consumer's processing time, from the queue's attributes
// or a change setting the timeout, with the consumer's redeliveries in
// SQS's, RabbitMQ's and Service Bus's words; a consumer faster than the
// timeout, or no redelivery, is no finding.
func TestDetectVisibilityTimeout(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	attrs := evidence.CommandOutput{Command: "aws sqs get-queue-attributes --queue-url https://sqs.eu-central-1.amazonaws.com/418273645120/fulfilment-orders --attribute-names All", Lines: []string{
		`{`, `    "Attributes": {`,
		`        "QueueArn": "arn:aws:sqs:eu-central-1:418273645120:fulfilment-orders",`,
		`        "LastModifiedTimestamp": "1795163471",`,
		`        "VisibilityTimeout": "30",`,
		`        "RedrivePolicy": "{\"deadLetterTargetArn\":\"arn:aws:sqs:eu-central-1:418273645120:fulfilment-orders-dlq\",\"maxReceiveCount\":4}",`,
		`    }`, `}`}}
	textAttrs := evidence.CommandOutput{Command: "aws sqs get-queue-attributes --queue-url https://sqs.us-east-1.amazonaws.com/1234/invoices --attribute-names VisibilityTimeout --output text", Lines: []string{
		`ATTRIBUTES	VisibilityTimeout	60`}}
	setChange := evidence.Change{Timestamp: w.Start.Add(-time.Hour), Service: "emails", Kind: "infra", Description: "terraform: aws_sqs_queue.emails visibility_timeout_seconds 300 -> 20"}
	sqsWorker := LogSet{Source: "fulfilment-worker", Subject: "fulfilment-worker", Templates: []analysis.LogTemplate{
		tmpl("2026-11-20 08:01:28,744 INFO [fulfilment-worker-5d7b8c9f6-tx6mk] fulfilment.worker: done order=FO-4814888 total=40.4s deleted=True", 80, w.BaselineStart, w.End),
		tmpl("2026-11-20 08:33:19,302 ERROR [fulfilment-worker-5d7b8c9f6-tx6mk] fulfilment.worker: delete failed order=FO-4813502: botocore.errorfactory.ReceiptHandleIsInvalid: An error occurred (ReceiptHandleIsInvalid) when calling the DeleteMessage operation: The receipt handle has expired.", 40, at, w.End),
	}}
	javaWorker := LogSet{Source: "invoices-consumer", Subject: "invoices-consumer", Templates: []analysis.LogTemplate{
		tmpl(`{"level":"INFO","msg":"invoice rendered","took 95s"}`, 20, w.BaselineStart, w.End),
		tmpl(`{"level":"INFO","msg":"invoice rendered","duration=95000ms"}`, 20, w.BaselineStart, w.End),
		tmpl(`{"level":"WARN","msg":"message received again","ApproximateReceiveCount":"3"}`, 12, at, w.End),
	}}
	rabbitWorker := LogSet{Source: "emails-worker", Subject: "emails-worker", Templates: []analysis.LogTemplate{
		tmpl("pika.exceptions.ChannelClosedByBroker: (406, 'PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out. Timeout value used: 1800000 ms.')", 5, at, w.End),
		tmpl("email batch sent elapsed=31.5s", 30, w.BaselineStart, w.End),
	}}
	fast := LogSet{Source: "fulfilment-worker", Subject: "fulfilment-worker", Templates: []analysis.LogTemplate{
		tmpl("done order=FO-1 total=4.2s deleted=True", 80, w.BaselineStart, w.End),
		tmpl("delete failed order=FO-2: ReceiptHandleIsInvalid: The receipt handle has expired.", 2, at, w.End),
	}}
	quiet := LogSet{Source: "fulfilment-worker", Subject: "fulfilment-worker", Templates: []analysis.LogTemplate{
		tmpl("done order=FO-1 total=40.4s deleted=True", 80, w.BaselineStart, w.End)}}
	cases := []struct {
		name            string
		logs            []LogSet
		cmds            []evidence.CommandOutput
		changes         []evidence.Change
		want            bool
		queue, vt, proc string
		dlq, maxRecv    string
	}{
		{name: "SQS attributes and expired receipt handles", logs: []LogSet{sqsWorker}, cmds: []evidence.CommandOutput{attrs}, want: true,
			queue: "fulfilment-orders", vt: "30s", proc: "40s", dlq: "fulfilment-orders-dlq", maxRecv: "4"},
		{name: "text output and a receive count above one", logs: []LogSet{javaWorker}, cmds: []evidence.CommandOutput{textAttrs}, want: true,
			queue: "invoices", vt: "60s", proc: "95s"},
		{name: "a change set the timeout; RabbitMQ's consumer timeout", logs: []LogSet{rabbitWorker}, changes: []evidence.Change{setChange}, want: true,
			queue: "emails", vt: "20s", proc: "32s"},
		{name: "a consumer faster than the timeout", logs: []LogSet{fast}, cmds: []evidence.CommandOutput{attrs}},
		{name: "no redelivery", logs: []LogSet{quiet}, cmds: []evidence.CommandOutput{attrs}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := oneFinding(t, detectVisibilityTimeout(&Gathered{Logs: c.logs, Commands: c.cmds, Changes: c.changes, Window: w}, nil), c.want)
			if !ok {
				return
			}
			if f.Subject != c.queue || f.fact("visibility_timeout") != c.vt || f.fact("processing") != c.proc || f.fact("dlq") != c.dlq || f.fact("max_receive") != c.maxRecv {
				t.Errorf("finding of %q: timeout %q processing %q dlq %q max %q; want %q %q %q %q %q", f.Subject, f.fact("visibility_timeout"), f.fact("processing"), f.fact("dlq"), f.fact("max_receive"), c.queue, c.vt, c.proc, c.dlq, c.maxRecv)
			}
			if f.fact("why") == "" {
				t.Error("no why")
			}
			h := &Hypothesis{Kind: KindVisibilityTimeout, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, "visibility timeout", c.queue, "not lost")
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Raise the visibility timeout of "+c.queue) {
				t.Errorf("first action %v", recs)
			}
		})
	}
}
