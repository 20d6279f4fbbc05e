package analyst

import (
	"fmt"
	"regexp"
)

// Consumers whose poll loop is too slow: max.poll.interval.ms is exceeded,
// the group rebalances and commits fail, so the lag grows.
var consumerStall = &mechanism{
	kind:       KindConsumerStall,
	class:      classSymptom,
	label:      "consumer poll loop too slow (rebalancing)",
	lines:      regexp.MustCompile(`(?i)max\.poll\.interval\.ms|poll timeout has expired|CommitFailedException|Offset commit (cannot be completed|failed) since the consumer|group (is )?rebalancing|Attempt to heartbeat failed since group is rebalancing|revoking previously assigned partitions`),
	lineWeight: 0.8,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the consumers of %s fall behind: their poll loop is too slow (poll timeouts, max.poll.interval.ms exceeded, the group rebalances): %s", s, quote(ReadableLine(h.fact("line")), 220))
		return d + pollSettingNote(h)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		backlogM.recommend(h, sc, r)
	},
}
