package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindVisibilityTimeout is a queue that hands a message to a consumer for
// less time than the consumer takes to process it: the message becomes
// visible again before the consumer deletes (acknowledges) it, another
// consumer receives it, the first one's delete fails, and after the
// queue's maximum receive count the broker moves it to the dead-letter
// queue. Nothing crashes; the dead-letter queue fills.
const KindVisibilityTimeout Kind = "visibility_timeout"

// The evidence read:
//
//   - the queue's settings: `aws sqs get-queue-attributes` (VisibilityTimeout,
//     RedrivePolicy's maxReceiveCount and dead-letter target,
//     LastModifiedTimestamp), or a change that sets the timeout
//     (visibility_timeout_seconds 300 -> 30);
//   - the consumer's log: how long a message takes (elapsed=39.6s,
//     total=40.4s, took 41s) and the redeliveries: SQS's
//     ReceiptHandleIsInvalid ("The receipt handle has expired"), a receive
//     count above one (ApproximateReceiveCount, receive_count=2); RabbitMQ's
//     "delivery acknowledgement on channel 1 timed out" (consumer_timeout);
//     Azure Service Bus's MessageLockLost; Pub/Sub's ack deadline.
var visibilityTimeout = &mechanism{
	kind:   KindVisibilityTimeout,
	class:  classCause,
	label:  "queue visibility timeout shorter than the processing time (redeliveries to the dead-letter queue)",
	detect: detectVisibilityTimeout,
	// The queue's backlog and dead-letter depth, and the consumer's errors
	// on its deletes, are its consequences.
	related: func(h *Hypothesis, f *Finding) bool {
		s := strings.ToLower(f.Subject)
		q := strings.ToLower(h.Subject)
		return q != "" && (s == q || strings.HasPrefix(s, q+"-") || strings.HasPrefix(s, q+"_")) ||
			f.Subject == h.fact("consumer") && (f.Kind == KindLogErrors || f.Kind == KindErrorRate)
	},
	// A change of the queue's settings (a module upgrade, an apply).
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) || strings.Contains(changeText(c), "visibility")
	},
	describe:  describeVisibilityTimeout,
	recommend: recommendVisibilityTimeout,
}

var (
	vtAttrRE      = regexp.MustCompile(`"?VisibilityTimeout"?\s*[:=]?\s*"?(\d+)"?`)
	maxReceiveRE  = regexp.MustCompile(`maxReceiveCount\\?"?\s*[:=]\s*\\?"?(\d+)`)
	dlqTargetRE   = regexp.MustCompile(`deadLetterTargetArn\\?"?\s*[:=]\s*\\?"?arn:aws:sqs:[\w-]+:\d+:([\w.-]+)`)
	queueArnRE    = regexp.MustCompile(`"?QueueArn"?\s*[:=]?\s*"?arn:aws:sqs:[\w-]+:\d+:([\w.-]+)`)
	queueURLRE    = regexp.MustCompile(`https://(?:sqs\.)?[\w.-]*amazonaws\.com/\d+/([\w.-]+)`)
	lastModRE     = regexp.MustCompile(`"?LastModifiedTimestamp"?\s*[:=]?\s*"?(\d{9,})"?`)
	vtChangeRE    = regexp.MustCompile(`(?i)visibility[_ ]?timeout(?:_seconds)?\D{0,20}?(\d+)\s*s?\s*(?:->|→|\bto\b)\s*(\d+)`)
	processTimeRE = regexp.MustCompile(`(?i)\b(?:elapsed|total|duration|took|processing(?:_time)?|handled in)[=: ]+(\d+(?:\.\d+)?)\s*(ms|s)\b`)
	redeliveryRE  = regexp.MustCompile(`(?i)ReceiptHandleIsInvalid|receipt handle (?:has expired|is invalid)|\breceive_?count[=: ]+[2-9]|ApproximateReceiveCount"?\s*[=:]\s*"?[2-9]|delivery acknowledgement on channel \d+ timed out|MessageLockLost|lock supplied is invalid|ack deadline (?:expired|exceeded)`)
)

// queueSettings is what the evidence says of a queue's redelivery.
type queueSettings struct {
	queue, dlq, line string
	timeout          int // seconds
	maxReceive       int
	modified         time.Time
}

// readQueueSettings reads the queues' visibility settings from command
// outputs.
func readQueueSettings(cmds []evidence.CommandOutput) []queueSettings {
	var out []queueSettings
	for _, c := range cmds {
		text := c.Command + "\n" + strings.Join(c.Lines, "\n")
		if !strings.Contains(text, "VisibilityTimeout") {
			continue
		}
		q := queueSettings{}
		if m := findSubmatch(queueArnRE, text); m != nil {
			q.queue = m[1]
		} else if m := findSubmatch(queueURLRE, text); m != nil {
			q.queue = m[1]
		}
		for _, l := range c.Lines {
			if strings.Contains(l, "VisibilityTimeout") {
				if m := findSubmatch(vtAttrRE, l); m != nil {
					q.timeout, _ = strconv.Atoi(m[1])
					q.line = strings.TrimSpace(l)
				}
			}
		}
		if m := findSubmatch(maxReceiveRE, text); m != nil {
			q.maxReceive, _ = strconv.Atoi(m[1])
		}
		if m := findSubmatch(dlqTargetRE, text); m != nil {
			q.dlq = m[1]
		}
		if m := findSubmatch(lastModRE, text); m != nil {
			if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				q.modified = time.Unix(sec, 0).UTC()
			}
		}
		if q.queue != "" && q.timeout > 0 {
			out = append(out, q)
		}
	}
	return out
}

// detectVisibilityTimeout finds a queue whose visibility timeout is
// shorter than its consumer's processing time, with the consumer's
// redeliveries.
func detectVisibilityTimeout(ev *Gathered, _ []Finding) []Finding {
	queues := readQueueSettings(ev.Commands)
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		if m := findSubmatch(vtChangeRE, c.Description); m != nil && c.Service != "" {
			v, _ := strconv.Atoi(m[2])
			queues = append(queues, queueSettings{queue: c.Service, timeout: v, line: c.Description, modified: c.Timestamp})
		}
	}
	if len(queues) == 0 {
		return nil
	}
	// The consumer: the log whose lines show redeliveries, and how long
	// its messages take.
	var consumer, redeliveryLine string
	var redeliveredAt time.Time
	var longest float64
	for _, set := range ev.Logs {
		var proc float64
		var redo string
		var redoAt time.Time
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(processTimeRE, l); m != nil {
					v, _ := strconv.ParseFloat(m[1], 64)
					if m[2] == "ms" {
						v /= 1000
					}
					proc = max(proc, v)
				}
			}
			if matchLine(redeliveryRE, t.Example) && (redoAt.IsZero() || t.FirstSeen.Before(redoAt)) {
				redo, redoAt = t.Example, t.FirstSeen
			}
		}
		if redo != "" && (redeliveryLine == "" || redoAt.Before(redeliveredAt)) {
			consumer, redeliveryLine, redeliveredAt, longest = set.Subject, redo, redoAt, proc
		}
	}
	var out []Finding
	for _, q := range queues {
		if redeliveryLine == "" || longest > 0 && longest <= float64(q.timeout) {
			continue
		}
		at := redeliveredAt
		if at.IsZero() {
			at = ev.Window.Start
		}
		f := Finding{Kind: KindVisibilityTimeout, Subject: q.queue, Object: "queue " + q.queue, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
		f.setFact("visibility_timeout", fmt.Sprintf("%ds", q.timeout))
		if longest > 0 {
			f.setFact("processing", fmt.Sprintf("%.0fs", longest))
		}
		if q.maxReceive > 0 {
			f.setFact("max_receive", strconv.Itoa(q.maxReceive))
		}
		f.setFact("dlq", q.dlq)
		f.setFact("consumer", consumer)
		f.setFact("line", redeliveryLine)
		if !q.modified.IsZero() {
			f.setFact("modified", ts(q.modified))
		}
		why := fmt.Sprintf("visibility timeout of %s is %ds", q.queue, q.timeout)
		if longest > 0 {
			why += fmt.Sprintf(", shorter than the %.0fs %s takes per message", longest, orWord(consumer, "its consumer"))
		}
		f.setFact("why", why)
		f.setFact("affected", strings.Trim(consumer+","+q.dlq, ","))
		if consumer != "" {
			f.Related = append(f.Related, consumer)
		}
		f.Summary = fmt.Sprintf("%s: %s", q.queue, why)
		f.Evidence = []string{fmt.Sprintf("the settings of %s: %s", q.queue, quote(q.line, 160))}
		if longest > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s takes up to %.0fs per message", consumer, longest))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s receives messages again before it deletes them, from %s: %s", orWord(consumer, "the consumer"), ts(at), quote(ReadableLine(redeliveryLine), 200)))
		out = append(out, f)
	}
	return out
}

func describeVisibilityTimeout(h *Hypothesis, sc Scope) string {
	q, vt := h.Subject, orWord(h.fact("visibility_timeout"), "short")
	consumer := orWord(h.fact("consumer"), "its consumer")
	d := fmt.Sprintf("the visibility timeout of queue %s (%s) is shorter than the time %s takes per message", q, vt, consumer)
	d += h.wrapped(" (up to ", "processing", ")")
	d += ": each message becomes visible again before it is deleted, another receive takes it, the first delete fails"
	if l := h.fact("line"); l != "" {
		d += " (" + quote(ReadableLine(l), 160) + ")"
	}
	dlq := orWord(h.fact("dlq"), "the dead-letter queue")
	if n := h.fact("max_receive"); n != "" {
		d += fmt.Sprintf(", and after %s receives the queue moves it to %s", n, dlq)
	} else {
		d += ", and after its maximum receive count the queue moves it to " + dlq
	}
	if m := h.fact("modified"); m != "" {
		d += fmt.Sprintf("; the queue's settings were last modified at %s", m)
	}
	d += fmt.Sprintf(". The messages are not lost: they are kept in %s for its retention period and can be redriven to %s once the timeout is raised; many were processed already before their delete failed, so the handler must be idempotent", dlq, q)
	return d
}

func recommendVisibilityTimeout(h *Hypothesis, sc Scope, r *recommender) {
	q := h.Subject
	r.high("Raise the visibility timeout of %s above the longest processing time (%s now, messages take up to %s), or have %s extend it while it works (ChangeMessageVisibility); set it in the queue's infrastructure code so the next apply keeps it", q, orWord(h.fact("visibility_timeout"), "?"), orWord(h.fact("processing"), "longer"), orWord(h.fact("consumer"), "the consumer"))
	r.med("Redrive the messages of %s back to %s after the fix (SQS StartMessageMoveTask, the console's DLQ redrive); check the handler skips work already done", orWord(h.fact("dlq"), "the dead-letter queue"), q)
	r.low("Alert on receive counts above one (NumberOfMessagesReceived above NumberOfMessagesSent) and on processing time approaching the visibility timeout")
}
