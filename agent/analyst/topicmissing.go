package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// KindTopicMissing: a producer publishes to a topic, exchange or queue
// that does not exist on its broker (automatic creation is off, or the
// destination was never declared), so every publish to it fails. The
// broker is up and every other destination works: the error names the
// missing one. When the producer keeps order (an outbox relay publishing
// rows in id order, a partition-ordered sender), it retries the failing
// message and holds everything behind it, so messages to healthy
// destinations are late too.
const KindTopicMissing Kind = "topic_missing"

var topicMissing = &mechanism{
	kind:   KindTopicMissing,
	class:  classCause,
	label:  "publish to a missing topic",
	detect: detectTopicMissing,
	describe: func(h *Hypothesis, sc Scope) string {
		dest := orWord(h.fact("destination"), "a destination")
		d := fmt.Sprintf("%s publishes to %s, which does not exist on the broker: every publish to it fails (%s)", h.Subject, dest, orWord(h.fact("error"), "missing topic"))
		if n := h.fact("lines"); n != "" {
			d += fmt.Sprintf(", %s lines since %s", n, h.fact("since"))
		}
		d += " — the broker answers and says it has no such destination; it was never created where the producer looks for it (automatic topic creation off, or declared under another name)"
		if l := h.fact("held_line"); l != "" {
			d += fmt.Sprintf("; %s retries the failing message and holds the messages queued behind it, so messages to healthy destinations wait too (%s)", h.Subject, quote(truncate(l, 220), 230))
		}
		d += h.quoteClause(": ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		dest := orWord(h.fact("destination"), "the missing destination")
		r.high("Create %s on the broker (declare it where topics are declared, with the partitions and replication of its siblings), or point the producer at the destination that exists", dest)
		if h.fact("held_line") != "" {
			r.high("Unblock %s: once %s exists the held message goes through and the backlog behind it drains; otherwise park the failing message (dead-letter it) so that the rest can flow", h.Subject, dest)
		}
		r.rollback()
		r.med("Declare every new topic or exchange with the release that first publishes to it, and check that it exists before the release rolls out")
		r.low("Alert on publish failures per destination and on the age of the oldest unpublished message")
	},
}

var (
	// The ways clients say the destination does not exist, with the name
	// where they give it: the Java Kafka client ("{t=UNKNOWN_TOPIC_OR_PARTITION}",
	// "Topic t not present in metadata after 60000 ms."), librdkafka and
	// its bindings ("Broker: Unknown topic or partition", "Local: Unknown
	// topic"), kafkajs ("This server does not host this topic-partition"),
	// sarama ("Request was for a topic or partition that does not exist
	// on this broker"), RabbitMQ ("NOT_FOUND - no exchange 't' in vhost
	// '/'"), SQS ("AWS.SimpleQueueService.NonExistentQueue", "The specified
	// queue does not exist"), SNS ("Topic does not exist") and NATS
	// JetStream ("no stream matches subject").
	topicMissingRE = regexp.MustCompile(`UNKNOWN_TOPIC_OR_PARTITION|not present in metadata after|(?i)unknown topic or partition|Local: Unknown topic|does not host this topic-partition|topic or partition that does not exist|NOT_FOUND - no (?:exchange|queue) '|NonExistentQueue|specified queue does not exist|topic does not exist|no stream matches subject`)
	topicNameREs   = []*regexp.Regexp{
		regexp.MustCompile(`\{([\w.-]+)=UNKNOWN_TOPIC_OR_PARTITION\}`),
		regexp.MustCompile(`Topic ([\w.-]+) not present in metadata`),
		regexp.MustCompile(`NOT_FOUND - no ((?:exchange|queue) '[^']+')`),
		regexp.MustCompile(`(?i)\btopic[=: "']+([A-Za-z][\w.-]*[\w])`),
		regexp.MustCompile(`(?i)\bqueue(?:url)?[=: "']+(\S+?)["',]?(?:\s|$)`),
	}
	// A producer that retries the failing message and holds the rest.
	heldBehindRE = regexp.MustCompile(`(?i)\b(?:held|holding|blocked|blocking|head of line|head-of-line|in order|in id order|waiting behind|behind it)\b`)
	retryWordRE  = regexp.MustCompile(`(?i)retry|retrying|attempt`)
)

// topicNameOf reads the destination a missing-destination line names.
func topicNameOf(line string) string {
	for _, re := range topicNameREs {
		if m := findSubmatch(re, line); m != nil {
			if strings.HasPrefix(m[0], "NOT_FOUND") {
				return m[1]
			}
			n := strings.Trim(m[1], `"'.,`)
			if strings.Contains(strings.ToLower(m[0]), "queue") {
				return n
			}
			if strings.EqualFold(n, "does") || strings.EqualFold(n, "or") {
				continue
			}
			return "topic " + n
		}
	}
	return ""
}

// detectTopicMissing reads, per producer, the lines saying the
// destination it publishes to does not exist, and the lines saying it
// retries that message and holds the rest.
func detectTopicMissing(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host || matchSetAny(set, kafkaBrokerRE) {
			continue
		}
		var (
			first             time.Time
			lines             int
			example, dest     string
			names             []string
			heldLine, errText string
		)
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(topicMissingRE, t.Example) {
				continue
			}
			lines += t.Incident
			at := firstOf(t.FirstIncident, t.FirstSeen)
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if n := topicNameOf(t.Example); n != "" && !slices.Contains(names, n) {
				names = append(names, n)
			}
			if example == "" || len(t.Example) < len(example) {
				example = t.Example
			}
			if errText == "" {
				errText = findString(topicMissingRE, t.Example)
			}
		}
		if lines < 3 || len(names) == 0 {
			continue
		}
		dest = names[0]
		bare := strings.TrimPrefix(dest, "topic ")
		for _, t := range set.Templates {
			if t.Incident > 0 && strings.Contains(t.Example, bare) && matchLine(heldBehindRE, t.Example) && matchLine(retryWordRE, t.Example) {
				heldLine = t.Example
				break
			}
		}
		f := Finding{Kind: KindTopicMissing, Subject: set.Subject, Object: "logs " + set.Source, Namespace: set.Namespace, Time: first,
			Severity: SevCritical, Weight: 0.75, Source: SrcLogs}
		f.setFact("destination", dest)
		f.setFact("error", strings.TrimRight(strings.TrimPrefix(errText, "Local: "), " '"))
		f.setFact("lines", fmt.Sprint(lines))
		f.setFact("since", ts(first))
		f.setFact("line", ReadableLine(example))
		f.Summary = fmt.Sprintf("%s: publishes to %s fail, it does not exist (%d lines)", set.Subject, dest, lines)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d lines from %s saying %s does not exist: %s", set.Subject, lines, ts(first), dest, quote(truncate(ReadableLine(example), 200), 210)))
		if heldLine != "" {
			f.Weight = 0.9
			f.setFact("held_line", ReadableLine(heldLine))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s retries the failing message and holds the rest: %s", set.Subject, quote(truncate(ReadableLine(heldLine), 220), 230)))
		}
		out = append(out, f)
	}
	return out
}

// matchSetAny reports whether any template of a log set matches re.
func matchSetAny(set *LogSet, re *regexp.Regexp) bool {
	for _, t := range set.Templates {
		if matchLine(re, t.Example) {
			return true
		}
	}
	return false
}
