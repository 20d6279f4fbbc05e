package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Kafka consumer that skipped records because its committed offsets
// were gone. While a consumer group is stopped (scaled to zero for a
// maintenance, paused, crashing) the topic's retention keeps deleting old
// segments; when the records at the group's committed offset are deleted
// before it comes back, the committed offset is out of range, and the
// client resets by auto.offset.reset: "latest" jumps to the end and every
// record written while it was stopped and still on the topic is never
// read; "earliest" reads from the oldest left, and the deleted ones are
// lost either way. Nothing errors: the consumer logs its reset at INFO
// (the Java client's "Resetting offset for partition X to position
// FetchPosition{offset=N", "Fetch position ... is out of range ...
// resetting offset"; librdkafka's "offset reset (at offset N) to END";
// kafka-python's "Fetch offset N is out of range"; sarama's "the provided
// offset is out of range"), and the numbers downstream come up short. The
// broker's log says what deleted the records ("Deleting segment ... due
// to retention time 3600000ms breach"), and the topic's configuration how
// short the retention is (kafka-configs: retention.ms=3600000), often
// from a change far earlier than the pause.

// KindOffsetReset is a consumer's committed offsets reset past records it
// had not read, deleted by the topic's retention.
const KindOffsetReset Kind = "offset_reset"

var (
	// offsetResetRE is a consumer resetting an out-of-range offset: the
	// partition (topic-N) and the offset it moved to, in the clients'
	// forms.
	offsetResetRE = regexp.MustCompile(`(?i)Resetting offset for partition ([\w.-]+-\d+) to (?:position FetchPosition\{offset=|offset )(\d+)` +
		`|(?:Fetch (?:position FetchPosition\{offset=|offset )(\d+)[^}]*?\}? is out of range for (?:topic-)?partition[ (]*(?:TopicPartition\(topic=')?([\w.-]+?)(?:', partition=|-)(\d+))` +
		`|([\w.-]+) \[(\d+)\]: offset reset \(at offset (\d+)[^)]*\) to (?:offset )?(?:END|BEGINNING|STORED|INVALID)?\s*\(?(\d+)?` +
		`|provided offset is out of range|requested offset is outside the range|OFFSET_OUT_OF_RANGE|Offset out of range`)
	// committedOffsetRE is the Java client's committed offset it starts
	// from ("Setting offset for partition payments.settled-0 to the
	// committed offset FetchPosition{offset=5512231").
	committedOffsetRE = regexp.MustCompile(`Setting offset for partition ([\w.-]+-\d+) to the committed offset FetchPosition\{offset=(\d+)`)
	// autoOffsetResetRE is the consumer's auto.offset.reset (its config
	// dump, librdkafka's property).
	autoOffsetResetRE = regexp.MustCompile(`(?i)auto[._]offset[._]reset\s*[=:]\s*"?(latest|earliest|largest|smallest|end|beginning|none)\b`)
	// retentionDeleteRE is the broker deleting segments for retention:
	// Kafka 3 ("[UnifiedLog partition=T-N, ...] Deleting segment ... due
	// to retention time 3600000ms breach"), Kafka 2 ("[Log
	// partition=T-N, ...] Found deletable segments ... due to retention
	// time 3600000ms breach").
	retentionDeleteRE = regexp.MustCompile(`(?i)partition=([\w.-]+?)-\d+\b.*(?:Deleting segment|deletable segments).*due to retention time (\d+)ms breach`)
	// retentionSettingRE is a topic's retention.ms as kafka-configs
	// describes it, a broker logs its update or a change sets it.
	retentionSettingRE = regexp.MustCompile(`(?i)retention\.ms\s*(?:=|->|:)\s*"?(\d+)`)
	// consumerStopRE is a change that stopped a consumer (scaled to
	// zero, paused, suspended).
	consumerStopRE = regexp.MustCompile(`(?i)scaled? (?:down )?to (?:0|zero)\b|\breplicas:? ?0\b|\bpaused\b|\bsuspend|\bstopped\b`)
	// consumerStartRE is a change that brought it back.
	consumerStartRE = regexp.MustCompile(`(?i)scaled? (?:back )?(?:up )?to [1-9]|\bresumed?\b|\bunpaused\b|\brestarted\b|back (?:up|online)`)
)

var offsetReset = &mechanism{
	kind:   KindOffsetReset,
	class:  classCause,
	label:  "consumer offsets reset past records deleted by retention",
	detect: detectOffsetReset,
	// A deploy or a flag near the reset does not delete a topic's
	// records.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(retentionSettingRE, changeText(c)) || strings.Contains(strings.ToLower(changeText(c)), "retention")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		topic := orWord(h.fact("topic"), "its topic")
		d := fmt.Sprintf("%s skipped records of %s: when it resumed at %s its committed offsets were out of range", h.Subject, topic, hm(h.Onset))
		if r := h.fact("retention"); r != "" {
			d += fmt.Sprintf(", the records at them already deleted by the topic's retention (%s)", r)
		} else {
			d += ", the records at them already deleted"
		}
		d += h.wrapped(" while it was stopped (", "paused", ")")
		d += fmt.Sprintf(", so the client reset them by auto.offset.reset=%s", orWord(h.fact("auto_offset_reset"), "(its setting)"))
		if h.fact("to_end") != "" {
			d += " to the end of the partitions, past everything written while it was stopped"
		}
		d += h.clause(": ", "skipped")
		if c := h.fact("retention_change"); c != "" {
			d += fmt.Sprintf("; the retention was set by %s", quote(c, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		topic := orWord(h.fact("topic"), "the topic")
		r.high("Rebuild what %s missed from the system of record for the time it was stopped: the skipped records of %s are deleted from the topic and cannot be re-read", h.Subject, topic)
		r.med("Set retention.ms of %s back above the longest time its consumers may stop (the broker default is 7 days, log.retention.hours=168)", topic)
		r.med("Set auto.offset.reset=earliest for %s so an out-of-range offset re-reads what is left instead of jumping to the end, and check retention before pausing a consumer", h.Subject)
		r.low("Alert on consumer offset resets and on a group's lag against the topic's retention")
	},
}

// detectOffsetReset reads a consumer's offset resets from its log, with
// the committed offsets they replaced, its auto.offset.reset, and what
// deleted the records: the broker's retention deletes, the topic's
// retention.ms, and the changes that stopped the consumer and set the
// retention.
func detectOffsetReset(ev *Gathered, _ []Finding) []Finding {
	type reset struct {
		consumer, partition string
		to, from            int64
		at                  time.Time
		line                string
	}
	var resets []reset
	committed := map[string]int64{}
	// Partitions the consumer found no committed offset for: a new
	// group's start (groupreplay.go), not an out-of-range offset.
	fresh := map[string]bool{}
	policy := ""
	for _, set := range ev.Logs {
		if set.Host {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(autoOffsetResetRE, l); m != nil && policy == "" {
					policy = strings.ToLower(m[1])
				}
				if m := findSubmatch(committedOffsetRE, l); m != nil {
					committed[set.Subject+" "+m[1]], _ = strconv.ParseInt(m[2], 10, 64)
				}
				if p := noCommittedPartition(l); p != "" {
					fresh[set.Subject+" "+p] = true
					continue
				}
				m := findSubmatch(offsetResetRE, l)
				if m == nil {
					continue
				}
				rs := reset{consumer: set.Subject, at: t.FirstSeen, line: l}
				switch {
				case m[1] != "":
					rs.partition = m[1]
					rs.to, _ = strconv.ParseInt(m[2], 10, 64)
				case m[4] != "":
					rs.partition = m[4] + "-" + m[5]
					rs.from, _ = strconv.ParseInt(m[3], 10, 64)
				case m[6] != "":
					rs.partition = m[6] + "-" + m[7]
					rs.from, _ = strconv.ParseInt(m[8], 10, 64)
					rs.to, _ = strconv.ParseInt(m[9], 10, 64)
				}
				if at, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
					rs.at = at
				}
				resets = append(resets, rs)
			}
		}
	}
	kept := resets[:0]
	for _, r := range resets {
		if !fresh[r.consumer+" "+r.partition] {
			kept = append(kept, r)
		}
	}
	resets = kept
	if len(resets) == 0 {
		return nil
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(autoOffsetResetRE, l); m != nil && policy == "" {
				policy = strings.ToLower(m[1])
			}
		}
	}
	sort.SliceStable(resets, func(i, j int) bool { return resets[i].at.Before(resets[j].at) })
	consumer := resets[0].consumer
	first := resets[0].at
	topic := ""
	var skipped []string
	var total int64
	seen := map[string]bool{}
	evid := []string{}
	for _, r := range resets {
		if r.consumer != consumer || seen[r.partition+r.line] {
			continue
		}
		seen[r.partition+r.line] = true
		if r.from == 0 {
			r.from = committed[r.consumer+" "+r.partition]
		}
		if i := strings.LastIndex(r.partition, "-"); i > 0 && topic == "" {
			topic = r.partition[:i]
		}
		if r.from > 0 && r.to > r.from {
			total += r.to - r.from
			if len(skipped) < 2 {
				skipped = append(skipped, fmt.Sprintf("%s from %d to %d", r.partition, r.from, r.to))
			}
		}
		if len(evid) < 2 {
			evid = append(evid, fmt.Sprintf("%s logs an offset reset at %s: %s", consumer, hm(r.at), quote(ReadableLine(r.line), 240)))
		}
	}
	f := Finding{Kind: KindOffsetReset, Subject: consumer, Object: "consumer " + consumer, Time: first, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
	f.setFact("caller", consumer)
	f.setFact("topic", topic)
	f.setFact("auto_offset_reset", policy)
	if policy == "latest" || policy == "largest" || policy == "end" {
		f.setFact("to_end", "true")
	}
	if total > 0 {
		f.setFact("skipped", fmt.Sprintf("%d records never read (%s)", total, strings.Join(skipped, "; ")))
	}
	// What deleted them: the broker's retention deletes of the topic,
	// its retention.ms.
	retention := ""
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			if l := templateLine(t, retentionDeleteRE); l != "" {
				m := findSubmatch(retentionDeleteRE, l)
				if topic != "" && m[1] != topic {
					continue
				}
				retention = retentionWords(m[2])
				evid = append(evid, fmt.Sprintf("%s logs %d segment deletions of %s for retention: %s", set.Subject, t.Count, m[1], quote(ReadableLine(l), 240)))
				break
			}
		}
	}
	for _, c := range ev.Commands {
		if topic != "" && !strings.Contains(c.Command, topic) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(retentionSettingRE, l); m != nil && strings.Contains(l, "retention.ms") {
				retention = retentionWords(m[1])
				evid = append(evid, fmt.Sprintf("%s: %s", truncate(c.Command, 120), quote(strings.TrimSpace(l), 160)))
				break
			}
		}
	}
	// The change that set the retention, and the ones that stopped and
	// restarted the consumer.
	var stop, start time.Time
	stopText := ""
	for _, c := range append(append(ev.Earlier[:0:0], ev.Earlier...), ev.Changes...) {
		text := c.Description
		if m := findSubmatch(retentionSettingRE, text); m != nil && c.Timestamp.Before(first) {
			f.setFact("retention_change", fmt.Sprintf("%s at %s: %s", orWord(c.Service, "a change"), ts(c.Timestamp), text))
			if retention == "" {
				retention = retentionWords(m[1])
			}
			if c.Service != "" && !containsStr(f.Related, c.Service) {
				f.Related = append(f.Related, c.Service)
			}
		}
		if !strings.EqualFold(c.Service, consumer) || c.Timestamp.After(first) {
			continue
		}
		switch {
		case matchLine(consumerStartRE, text):
			start = c.Timestamp
		case matchLine(consumerStopRE, text):
			stop, stopText = c.Timestamp, text
		}
	}
	f.setFact("retention", retention)
	if !stop.IsZero() {
		end := orTime(start, first)
		p := fmt.Sprintf("%s–%s, %s", stop.UTC().Format("15:04"), end.UTC().Format("15:04 UTC"), strings.TrimSuffix(end.Sub(stop).Round(time.Minute).String(), "0s"))
		if retention != "" {
			p += ", longer than the retention"
		}
		f.setFact("paused", p+": "+quote(stopText, 120))
	}
	if retention != "" {
		f.Weight = 0.9
		f.setFact("why", fmt.Sprintf("the records at its committed offsets were deleted by %s's retention (%s)", orWord(topic, "the topic"), retention))
	}
	f.Evidence = evid
	f.Summary = fmt.Sprintf("%s reset its offsets on %s past unread records (auto.offset.reset=%s)", consumer, orWord(topic, "its topic"), orWord(policy, "?"))
	return []Finding{f}
}

// retentionWords says a retention.ms in hours or minutes with its value.
func retentionWords(ms string) string {
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || v <= 0 {
		return ""
	}
	d := time.Duration(v) * time.Millisecond
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("retention.ms=%s, %dh", ms, int64(d/time.Hour))
	case d%time.Minute == 0:
		return fmt.Sprintf("retention.ms=%s, %dm", ms, int64(d/time.Minute))
	}
	return "retention.ms=" + ms
}
