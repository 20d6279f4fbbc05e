package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A consumer group that keeps rebalancing after a change to its poll
// settings: more records per poll (max.poll.records) or a shorter
// max.poll.interval.ms make one poll's batch outlast the interval, the
// consumer is removed from the group, its commit fails and the group
// rebalances again. The settings are recognised in every spelling a client or
// framework gives them (max.poll.records, Spring's max-poll-records,
// maxPollRecords, MAX_POLL_RECORDS).

var pollSettingRe = regexp.MustCompile(`(?i)max[._-]?poll[._-]?(records|interval[._-]?ms|interval)\b(?:[^\n0-9]{0,20}?(\d[\d_]*)\s*(?:->|→|=>|to)\s*(\d[\d_]*))?`)

// pollSettingNote explains how the trigger change of a consumer's stall or
// backlog produces it, when the change names a poll setting; "" otherwise.
func pollSettingNote(h *Hypothesis) string {
	if h.Trigger == nil {
		return ""
	}
	text := h.Trigger.fact("description")
	if text == "" {
		text = h.Trigger.Summary
	}
	m := findSubmatch(pollSettingRe, text)
	if m == nil {
		return ""
	}
	values := ""
	if m[2] != "" && m[3] != "" {
		values = fmt.Sprintf(" from %s to %s", m[2], m[3])
	}
	if strings.HasPrefix(strings.ToLower(m[1]), "records") {
		return fmt.Sprintf("; the change set max.poll.records (the records per poll)%s: one poll's batch now takes longer to process than max.poll.interval.ms allows, so the consumer leaves the group, its offset commit fails and the group rebalances again", values)
	}
	return fmt.Sprintf("; the change set max.poll.interval.ms%s: a poll's batch now outlasts the interval, so the consumer leaves the group, its offset commit fails and the group rebalances again", values)
}
