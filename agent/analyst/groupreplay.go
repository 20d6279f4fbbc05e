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

// A Kafka consumer that starts under a consumer group with no committed
// offsets (a new or renamed group.id, often from a framework change that
// moved the consumer's config) and auto.offset.reset=earliest: the client
// finds no committed offset for its partitions and resets them to the
// oldest record the topic still holds, so it re-reads and re-processes the
// topic's whole retained history (days of it under the default 7-day
// retention): duplicate side effects (notifications sent again, charges
// replayed), a lag in the millions on the new group, while the old group
// sits with no members. Nothing errors: the Java client logs "Found no
// committed offset for partition T-N" and "Resetting offset for partition
// T-N to position FetchPosition{offset=...}" at INFO, librdkafka "offset
// reset (at offset INVALID ...) to BEGINNING: no previously committed
// offset available", kafka-python "No committed offset for partition".

// KindGroupReplay is a consumer that started under a group with no
// committed offsets and re-reads its topic from the earliest record.
const KindGroupReplay Kind = "group_replay"

var (
	// noCommittedRE is a client finding no committed offset for a
	// partition: the Java client ("Found no committed offset for
	// partition parcel.status-0"), kafka-python ("No committed offset for
	// partition TopicPartition(topic='t', partition=1)"), librdkafka
	// ("t [1]: offset reset (at offset INVALID, broker 2) to BEGINNING: no
	// previously committed offset available").
	noCommittedRE = regexp.MustCompile(`(?i)(?:found )?no committed offsets? for partition (?:TopicPartition\(topic='([\w.-]+)', partition=(\d+)\)|([\w.-]+-\d+))` +
		`|([\w.-]+) \[(\d+)\]: offset reset \(at offset INVALID[^)]*\) to (?:offset )?(?:BEGINNING|END)\b.*no previously committed offset`)
	// consumerGroupIDRE is the group a consumer names itself with: the
	// Java client's "groupId=NAME" prefix, a config dump's "group.id =
	// NAME", a structured group_id field.
	consumerGroupIDRE = regexp.MustCompile(`(?i)\b(?:groupId|group\.id|group_id)\s*[=:]\s*"?([\w.-]+)`)
)

var groupReplay = &mechanism{
	kind:   KindGroupReplay,
	class:  classCause,
	label:  "consumer started under a group with no committed offsets and replays its topic",
	detect: detectGroupReplay,
	// The deploy that changed the consumer's group is the trigger.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		topic := orWord(h.fact("topic"), "its topic")
		d := fmt.Sprintf("%s started at %s under consumer group %s, which had no committed offsets on %s (a new group.id)",
			h.Subject, hm(h.Onset), orWord(h.fact("group"), "(a new group)"), topic)
		d += fmt.Sprintf(", so the client reset its partitions by auto.offset.reset=%s to the oldest records the topic still holds and re-reads and re-processes the topic's retained history", orWord(h.fact("auto_offset_reset"), "earliest"))
		d += h.wrapped(" (", "retention", ")")
		d += h.clause(": ", "lag")
		if o := h.fact("old_group"); o != "" {
			d += fmt.Sprintf("; its previous group %s, with the committed offsets, has no active members", o)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		g := orWord(h.fact("group"), "the new group")
		topic := orWord(h.fact("topic"), "the topic")
		if o := h.fact("old_group"); o != "" {
			r.high("Stop %s and move group %s to where %s left off (kafka-consumer-groups.sh --reset-offsets --group %s --topic %s --to-datetime <time of the switch> --execute), or configure %s back to group.id=%s", h.Subject, g, o, g, topic, h.Subject, o)
		} else {
			r.high("Stop %s and move group %s to the time of the switch (kafka-consumer-groups.sh --reset-offsets --group %s --topic %s --to-datetime <time> --execute) so it stops re-processing old records", h.Subject, g, g, topic)
		}
		r.med("Keep group.id stable across releases; when a group must change, seed its offsets from the old group before the first start, and make the consumer's side effects idempotent (a dedup key per record)")
		r.low("Alert on a consumer group's lag jumping to the topic's size and on 'no committed offset' resets")
	},
}

// detectGroupReplay reads a consumer's resets for want of a committed
// offset, under auto.offset.reset=earliest, with its group, the topic's
// retention and the groups described on the topic.
func detectGroupReplay(ev *Gathered, _ []Finding) []Finding {
	type hit struct {
		consumer, partition, group, line string
		at                               time.Time
	}
	var hits []hit
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
				p := noCommittedPartition(l)
				if p == "" {
					continue
				}
				h := hit{consumer: set.Subject, at: t.FirstSeen, line: l, partition: p}
				if strings.Contains(l, "no previously committed offset") {
					if policy == "" {
						policy = "earliest"
						if strings.Contains(strings.ToUpper(l), "TO END") {
							policy = "latest"
						}
					}
				}
				if g := findSubmatch(consumerGroupIDRE, l); g != nil {
					h.group = g[1]
				}
				if at, ok := evidence.LineTime([]byte(l), ev.Window.End); ok {
					h.at = at
				}
				hits = append(hits, h)
			}
		}
	}
	if len(hits) == 0 {
		return nil
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].at.Before(hits[j].at) })
	consumer := hits[0].consumer
	group := hits[0].group
	for _, set := range ev.Logs {
		if set.Subject != consumer {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(consumerGroupIDRE, l); m != nil && group == "" {
					group = m[1]
				}
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(autoOffsetResetRE, l); m != nil && policy == "" {
				policy = strings.ToLower(m[1])
			}
			if m := findSubmatch(consumerGroupIDRE, l); m != nil && group == "" && strings.Contains(strings.ToLower(l), "group.id") {
				group = m[1]
			}
		}
	}
	// Only a reset to the oldest records replays history; a reset to the
	// end of a new group skips nothing the old group had not read.
	if policy != "earliest" && policy != "smallest" && policy != "beginning" {
		return nil
	}
	topic := ""
	if i := strings.LastIndex(hits[0].partition, "-"); i > 0 {
		topic = hits[0].partition[:i]
	}
	f := Finding{Kind: KindGroupReplay, Subject: consumer, Object: "consumer " + consumer, Time: hits[0].at, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
	f.setFact("group", group)
	f.setFact("topic", topic)
	f.setFact("auto_offset_reset", policy)
	seen := map[string]bool{}
	for _, h := range hits {
		if h.consumer != consumer || seen[h.partition] || len(f.Evidence) >= 2 {
			continue
		}
		seen[h.partition] = true
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s finds no committed offset at %s: %s", consumer, hm(h.at), quote(ReadableLine(h.line), 240)))
	}
	// The groups described on the topic: the new group's lag, and a
	// group with no members left behind.
	lags := map[string]int64{}
	empty := map[string]bool{}
	for _, c := range ev.Commands {
		if !strings.Contains(c.Run+" "+c.Command, "consumer-groups") {
			continue
		}
		header := false
		for _, l := range c.Lines {
			if m := findSubmatch(noMembersRE, l); m != nil {
				empty[m[1]] = true
				continue
			}
			if matchLine(groupHeaderRE, l) {
				header = true
				continue
			}
			fs := strings.Fields(l)
			if !header || len(fs) < 6 || (topic != "" && fs[1] != topic) {
				continue
			}
			if lag, err := strconv.ParseInt(fs[5], 10, 64); err == nil {
				lags[fs[0]] += lag
			}
		}
	}
	if group != "" && lags[group] > 0 {
		f.setFact("lag", fmt.Sprintf("group %s is %d records behind on %s", group, lags[group], topic))
		f.Evidence = append(f.Evidence, fmt.Sprintf("kafka-consumer-groups: group %s lags %d records on %s", group, lags[group], topic))
	}
	var olds []string
	for g := range empty {
		if g != group {
			olds = append(olds, g)
		}
	}
	sort.Strings(olds)
	if len(olds) > 0 {
		f.setFact("old_group", olds[0])
	}
	for _, c := range ev.Commands {
		if topic == "" || !strings.Contains(c.Command, topic) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(retentionSettingRE, l); m != nil && strings.Contains(l, "retention.ms") {
				f.setFact("retention", retentionWords(m[1]))
				break
			}
		}
	}
	if group != "" {
		f.Weight = 0.9
		f.setFact("why", fmt.Sprintf("group %s had no committed offsets, so %s re-reads %s from the earliest record", group, consumer, orWord(topic, "its topic")))
	}
	f.Summary = fmt.Sprintf("%s started under consumer group %s with no committed offsets and re-reads %s from the earliest record", consumer, orWord(group, "(new)"), orWord(topic, "its topic"))
	return []Finding{f}
}

// noCommittedPartition is the partition (topic-N) a log line finds no
// committed offset for, "" when it is no such line.
func noCommittedPartition(l string) string {
	m := findSubmatch(noCommittedRE, l)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1] + "-" + m[2]
	case m[3] != "":
		return m[3]
	}
	return m[4] + "-" + m[5]
}
