package analyst

import (
	"fmt"
	"regexp"
)

// Clock skew: a node's clock off its reference (NTP/chrony with no usable
// source), so time-based validation fails elsewhere: tokens "used before
// issued" or "not yet valid", or a cloud API refusing signed requests
// whose time is off its own (S3's RequestTimeTooSkewed, "Signature not
// yet current", an expired SigV4 signature).
var clockSkew = &mechanism{
	kind:       KindClockSkew,
	class:      classCause,
	label:      "clock skew (NTP unsynchronised)",
	lines:      regexp.MustCompile(`(?i)used before issued|(token|jwt|assertion)[^"]{0,30}not (yet )?valid|not valid yet|\bnbf\b[^"]{0,30}(future|not|fail|invalid)|\biat\b[^"]{0,30}(future|invalid|fail)|issued in the future|clock skew|clock (is )?(wrong|off|drift)|System clock wrong by|no selectable sources|Can't synchroni[sz]e|No suitable source for synchroni[sz]ation|time (is )?(not |un)synchroni[sz]ed|NTP (is )?(unsynchroni[sz]ed|not synchroni[sz]ed)|RequestTimeTooSkewed|request time and the current time is too large|Signature not yet current|Signature expired: \d{8}T\d{6}Z is now earlier than`),
	lineWeight: 0.9,
	// A node's clock off and tokens rejected as not yet valid on another
	// subject are one failure.
	related: func(h *Hypothesis, f *Finding) bool { return f.Kind == KindClockSkew },
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("clock skew on %s: the clock is not synchronised (NTP/chrony has no usable source), so time-based validation fails (tokens rejected as used before issued / not yet valid)", h.Subject)
		if m := signedSkewRE.FindString(h.fact("line")); m != "" {
			d = fmt.Sprintf("clock skew on %s: the clock of the host it runs on is not synchronised (NTP/chrony has no usable source), so the cloud API refuses its signed requests as too far from its own time (%s: the request time and the current time differ too much)", h.Subject, m)
		}
		d += h.quoteClause(" — ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Fix time synchronisation on the affected node (reachable NTP sources for chrony/ntpd) and step the clock; cordon and drain the node meanwhile")
		r.med("Allow a small clock-skew leeway in token validation (iat/nbf)")
		r.low("Alert on node_timex_sync_status == 0 and |node_timex_offset_seconds| > 1")
	},
}

// signedSkewRE is a cloud API's refusal of a signed request whose time is
// off its own.
var signedSkewRE = regexp.MustCompile(`RequestTimeTooSkewed|Signature not yet current|Signature expired`)
