package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// A filesystem out of space (no space left on device, ENOSPC): writes,
// temporary files and databases fail.
var diskFull = &mechanism{
	kind:       KindDiskFull,
	class:      classCause,
	label:      "disk full",
	lines:      regexp.MustCompile(`(?i)no space left on device|ENOSPC|disk (is )?full|disk quota exceeded|could not extend file|filesystem full`),
	lineWeight: 0.9,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		what := s
		if role := hostRoleOf(h); role != "" {
			what = fmt.Sprintf("the %s host %s", role, s)
		}
		d = fmt.Sprintf("%s ran out of disk space (no space left on device, disk full): %s", what, quote(ReadableLine(h.fact("line")), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Free or extend the disk of %s (delete old data or logs, grow the volume)", s))
		r.add(finding.PriorityMedium, "Find what filled the disk (runaway logs, temp files, data growth)")
		r.add(finding.PriorityLow, "Alert on disk usage above 80% and on its growth rate")
	},
}
