package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindOneMessageGroup: a producer sends every message of a FIFO queue or
// topic with the same message group id (SQS and SNS FIFO's
// MessageGroupId). FIFO delivers the messages of one group in order, one
// batch in flight at a time: the queue is served as if it had a single
// consumer, however many are running. When the group was meant to be per
// entity (an order, an account) and a release or a client library made it
// a constant, throughput falls to one consumer's, the backlog and the age
// of the oldest message grow, the autoscaler adds consumers that receive
// nothing, and nothing errors.
const KindOneMessageGroup Kind = "one_message_group"

var oneMessageGroup = &mechanism{
	kind:   KindOneMessageGroup,
	class:  classCause,
	label:  "every message sent with one FIFO message group id",
	detect: detectOneMessageGroup,
	// The consumers' side of the serial queue: the backlog, the autoscaler
	// at its maximum on the queue's depth, the consumers' latency.
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindHPAMax, KindBacklog, KindLatency, KindSaturation:
			return slices.Contains(h.top().Related, f.Subject)
		}
		return false
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && matchLine(groupChangeRE, c.Summary+" "+c.fact("description"))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		q := orWord(h.fact("queue"), "its FIFO queue")
		d := fmt.Sprintf("%s sends every message to %s with the same message group id %s (%s of %s sends read) — FIFO delivers one message group in order, one batch in flight at a time, so the whole queue is consumed serially as a single group, however many consumers run: throughput is one consumer's, and the backlog grows while the other consumers receive nothing",
			h.Subject, q, quote(h.fact("group"), 80), h.fact("same"), h.fact("sends"))
		if c := h.fact("idle"); c != "" {
			d += fmt.Sprintf("; most receives of %s come back empty", c)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make %s send a message group id per ordered entity (the order, account or customer id), not one constant %s, so that FIFO can deliver groups in parallel", h.Subject, quote(h.fact("group"), 80))
		r.rollback()
		r.med("Do not add consumers for this backlog: with one group only one batch is in flight; it drains once new messages carry distinct groups (the messages already queued under the one group stay serial)")
		r.low("Alert on the age of the oldest message of FIFO queues, and check the message group ids a new client library or release sends")
	},
}

var (
	// A message group id in a producer's line: SQS and SNS FIFO's
	// MessageGroupId as SDKs, their debug output and applications log it
	// ("MessageGroupId": "x", message_group_id=x, messageGroupId: 'x',
	// message.group.id=x).
	messageGroupRE = regexp.MustCompile(`(?i)\bmessage[_.-]?group[_.-]?id["']?\s*(?:=>|[:=])\s*["']?([\w.:@/#-]+)`)
	// The destination the line names (a queue, its URL, a topic ARN).
	groupQueueRE = regexp.MustCompile(`(?i)\b(?:queue(?:_?url|_?name)?|topic(?:_?arn)?)["']?\s*(?:=>|[:=])\s*["']?([^\s"',}]+)`)
	// A question about a queue's backlog or its messages' delay.
	queueAskRE = regexp.MustCompile(`(?i)\b(?:queue|backlog|fifo|sqs|lag|messages?)\b`)
	// A consumer's receive, and one that returned nothing.
	receiveRE      = regexp.MustCompile(`(?i)receiv|\bpoll|\bfetch`)
	emptyReceiveRE = regexp.MustCompile(`(?i)"?messages"?\s*[:=]\s*0\b|received 0 messages|no messages`)
	// A change of how a producer publishes.
	groupChangeRE = regexp.MustCompile(`(?i)publish|produc|queue|messag|sqs|sns|fifo|group`)
	// A queue's depth or the age of its oldest message: CloudWatch's SQS
	// metrics and their Prometheus exporters' names.
	queueDepthSeriesRE = regexp.MustCompile(`(?i)ApproximateNumberOfMessagesVisible|ApproximateAgeOfOldestMessage|number_of_messages_visible|age_of_oldest_message`)
)

// depthRise is a queue's depth rising from its level before the window.
type depthRise struct {
	from time.Time
	text string
}

// queueDepthRise reads the series of the queue's depth (or of the age of
// its oldest message) that names the queue, or names no queue at all, and
// the time it left its low level for good: the point after the last one
// within 2 % of its range above its low.
func queueDepthRise(ev *Gathered, queue string) *depthRise {
	var best *depthRise
	for name, s := range metricSeries(ev.Metrics) {
		if !queueDepthSeriesRE.MatchString(name) || len(s.Points) < 6 {
			continue
		}
		if q := orWord(s.Labels["QueueName"], orWord(s.Labels["queue_name"], s.Labels["queue"])); q != "" && q != queue {
			continue
		}
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b evidence.Point) int { return a.T.Compare(b.T) })
		low, top := pts[0].V, pts[0].V
		for _, p := range pts {
			low, top = min(low, p.V), max(top, p.V)
		}
		last := len(pts) - 1
		// A depth that ends high, well above where it was.
		if pts[last].V < top*0.8 || top < 100 || top < 10*max(low, 1) {
			continue
		}
		at := -1
		for i, p := range pts {
			if p.V <= low+(top-low)*0.02 {
				at = i
			}
		}
		if at < 0 || at >= last-1 {
			continue
		}
		r := &depthRise{from: pts[at+1].T, text: fmt.Sprintf("%s%s rose from %s to %s from %s", name, clauseIf(" of ", queue, ""), compactCount(pts[at].V), compactCount(pts[last].V), ts(pts[at+1].T))}
		if best == nil || r.from.Before(best.from) {
			best = r
		}
	}
	return best
}

// groupLinePattern is the pattern of the raw lines that carry a message
// group id, read when the question is about a queue.
func groupLinePattern(sc Scope) string {
	if !matchLine(queueAskRE, sc.Message+" "+sc.Hint+" "+sc.Alert) {
		return ""
	}
	return `(?i)message[_.-]?group[_.-]?id`
}

// detectOneMessageGroup reads, per producer, the message group ids of its
// sends: many sends that all carry one group id serialise the FIFO queue.
func detectOneMessageGroup(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host {
			continue
		}
		groups := map[string]int{}
		queues := map[string]int{}
		var first time.Time
		example, total := "", 0
		for _, l := range set.Lines {
			m := findSubmatch(messageGroupRE, l.Text)
			if m == nil || !l.Time.IsZero() && l.Time.Before(ev.Window.Start) {
				continue
			}
			groups[m[1]]++
			total++
			if q := findSubmatch(groupQueueRE, l.Text); q != nil {
				queues[q[1]]++
			}
			if example == "" {
				example = l.Text
			}
			if !l.Time.IsZero() && (first.IsZero() || l.Time.Before(first)) {
				first = l.Time
			}
		}
		group, same := mostCommon(groups)
		// Enough sends to tell a constant from a coincidence, and all but
		// a stray one under one group.
		if total < 20 || len(groups) > 1 && same*20 < total*19 {
			continue
		}
		f := Finding{Kind: KindOneMessageGroup, Subject: set.Subject, Object: "log " + set.Source, Namespace: set.Namespace,
			Severity: SevCritical, Weight: 0.85, Source: SrcLogs, Time: firstOf(first, ev.Window.Start)}
		q, _ := mostCommon(queues)
		f.setFact("queue", queueShortName(q))
		f.setFact("group", group)
		f.setFact("same", fmt.Sprint(same))
		f.setFact("sends", fmt.Sprint(total))
		f.setFact("line", ReadableLine(example))
		// The queue's depth says when the serial consumption began: the
		// sends read are often only the last minutes.
		rise := queueDepthRise(ev, queueShortName(q))
		if rise != nil {
			f.Time = rise.from
		}
		f.Summary = fmt.Sprintf("%s sends %d of %d messages%s with one message group id %q", set.Subject, same, total, clauseIf(" to ", queueShortName(q), ""), group)
		f.Evidence = append(f.Evidence, fmt.Sprintf("logs %s: %d of %d sends from %s carry message group id %q: %s", set.Source, same, total, ts(firstOf(first, ev.Window.Start)), group, quote(truncate(ReadableLine(example), 200), 210)))
		if rise != nil {
			f.Evidence = append(f.Evidence, rise.text)
		}
		consumers, idle := queueConsumers(ev, set.Subject, q)
		f.Related = append(f.Related, consumers...)
		if len(idle) > 0 {
			f.setFact("idle", strings.Join(idle, ", "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: most receives%s come back empty", strings.Join(idle, ", "), clauseIf(" from ", queueShortName(q), "")))
		}
		out = append(out, f)
	}
	return out
}

// queueShortName is a queue's name from its URL or ARN.
func queueShortName(q string) string {
	q = strings.TrimRight(q, "/")
	if i := strings.LastIndexAny(q, "/:"); i >= 0 && i < len(q)-1 {
		return q[i+1:]
	}
	return q
}

// queueConsumers are the workloads, other than the producer, whose
// receives name the queue, and those of them whose receives in the window
// mostly come back empty.
func queueConsumers(ev *Gathered, producer, queue string) (consumers, idle []string) {
	name := queueShortName(queue)
	if name == "" {
		return nil, nil
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host || set.Subject == producer {
			continue
		}
		empty, other := 0, 0
		for _, t := range set.Templates {
			if t.Incident == 0 || !strings.Contains(t.Example, name) || !matchLine(receiveRE, t.Example) {
				continue
			}
			if matchLine(emptyReceiveRE, t.Example) {
				empty += t.Incident
			} else {
				other += t.Incident
			}
		}
		if empty+other > 0 && !slices.Contains(consumers, set.Subject) {
			consumers = append(consumers, set.Subject)
		}
		if empty >= 5 && empty > other && !slices.Contains(idle, set.Subject) {
			idle = append(idle, set.Subject)
		}
	}
	return consumers, idle
}
