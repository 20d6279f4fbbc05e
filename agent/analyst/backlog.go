package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// A consumer group falling behind: its lag grows because the consumers
// process records more slowly than they arrive (a slower handler, fewer
// consumers, a surge of records).
var backlogM = &mechanism{
	kind:     KindBacklog,
	class:    classCause,
	label:    "consumer lag / backlog growing",
	describe: func(h *Hypothesis, sc Scope) string { return describeBacklog(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Let the consumers of %s catch up: roll back the change that slowed them, or scale the consumers out (up to the partition count)", s))
		r.add(finding.PriorityMedium, "Make per-record processing fast again (no synchronous remote call per record, batch or async it); tune max.poll.records / max.poll.interval.ms so polls stay within the interval")
		r.add(finding.PriorityLow, "Alert on consumer lag growth (lag slope) per consumer group, not only on its absolute value")
	},
}

func describeBacklog(h *Hypothesis) string {
	what := orWord(h.fact("what"), "backlog")
	on := h.Subject
	if t := h.fact("topic"); t != "" {
		on += " on topic " + t
	}
	subj := "group " + on
	if what != "consumer lag" {
		subj = on
	}
	d := fmt.Sprintf("the %s of %s grows steadily from %s to %s: the consumers fall behind (backlog)", what, subj, orDash(h.fact("baseline")), orDash(h.fact("peak")))
	for _, f := range h.Support {
		if f.Kind == KindConsumerStall {
			d += fmt.Sprintf("; the consumer's poll loop is too slow (poll timeout, max.poll.interval.ms exceeded, rebalancing): %s", quote(ReadableLine(f.fact("line")), 200))
			break
		}
	}
	return d
}
