package analyst

import (
	"fmt"
	"regexp"
)

// Clock skew: a node's clock off its reference (NTP/chrony with no usable
// source), so time-based validation fails elsewhere: tokens "used before
// issued" or "not yet valid".
var clockSkew = &mechanism{
	kind:       KindClockSkew,
	class:      classCause,
	label:      "clock skew (NTP unsynchronised)",
	lines:      regexp.MustCompile(`(?i)used before issued|(token|jwt|assertion)[^"]{0,30}not (yet )?valid|not valid yet|\bnbf\b[^"]{0,30}(future|not|fail|invalid)|\biat\b[^"]{0,30}(future|invalid|fail)|issued in the future|clock skew|clock (is )?(wrong|off|drift)|System clock wrong by|no selectable sources|Can't synchroni[sz]e|No suitable source for synchroni[sz]ation|time (is )?(not |un)synchroni[sz]ed|NTP (is )?(unsynchroni[sz]ed|not synchroni[sz]ed)`),
	lineWeight: 0.9,
	// A node's clock off and tokens rejected as not yet valid on another
	// subject are one failure.
	related: func(h *Hypothesis, f *Finding) bool { return f.Kind == KindClockSkew },
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("clock skew on %s: the clock is not synchronised (NTP/chrony has no usable source), so time-based validation fails (tokens rejected as used before issued / not yet valid)", h.Subject)
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Fix time synchronisation on the affected node (reachable NTP sources for chrony/ntpd) and step the clock; cordon and drain the node meanwhile")
		r.med("Allow a small clock-skew leeway in token validation (iat/nbf)")
		r.low("Alert on node_timex_sync_status == 0 and |node_timex_offset_seconds| > 1")
	},
}
