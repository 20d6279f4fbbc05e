package analyst

import (
	"regexp"
	"strings"
)

// A question often says who suffers from the failure it asks about:
// "storefront can't reach pricing", "checkout cannot connect to
// payments-db". When the root cause is the callee's own (a Service that
// refuses every connection, a database down), the caller the question
// names is affected whether or not its own logs were read: the asker saw
// its calls fail, and the root cause fails every call. It is listed among
// the affected systems with the root cause's subject.

// askedCallerRE finds "X can't reach Y" and its variants: X the caller, Y
// the callee.
var askedCallerRE = regexp.MustCompile(`(?i)\b([a-z0-9][\w.-]*)\s+(?:can'?t|cant|cannot|can not|couldn'?t|could not|is unable to|unable to|fails to|failing to|no longer can)\s+(?:reach|connect to|talk to|call|get to|access)\s+(?:the\s+|its\s+|our\s+)?([a-z0-9][\w.-]*)`)

// askedCallers are the callers the question says cannot reach h's
// subject.
func askedCallers(msg string, h *Hypothesis) []string {
	var out []string
	for _, m := range findAllSubmatch(askedCallerRE, msg, -1) {
		callee := strings.ToLower(strings.Trim(m[2], ".,;:?!'\"()"))
		if callee != strings.ToLower(h.Subject) && callee != strings.ToLower(h.fact("service")) {
			continue
		}
		out = appendNew(out, strings.ToLower(strings.Trim(m[1], ".,;:?!'\"()")))
	}
	return out
}
