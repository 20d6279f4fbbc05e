package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// Names that do not resolve (no such host, NXDOMAIN): the caller cannot
// reach the service it names, whether the name is wrong or the DNS fails.
var dnsResolution = &mechanism{
	kind:       KindDNS,
	class:      classDependency,
	label:      "DNS resolution failure",
	lines:      regexp.MustCompile(`(?i)no such host|NXDOMAIN|Temporary failure in name resolution|could not resolve|Name or service not known|server misbehaving|\bENOTFOUND\b|getaddrinfo|UnknownHostException|name resolution`),
	lineWeight: 0.85,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return networkChangeFits(c) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("DNS resolution fails for %s (no such host) in %s, so its calls cannot reach it: %s", orWord(h.fact("target"), s), orWord(h.fact("caller"), "the service"), quote(ReadableLine(h.fact("line")), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Check DNS for %s: that the name exists (service created, correct namespace) and CoreDNS is healthy", orWord(h.fact("target"), s)))
		r.add(finding.PriorityMedium, "Fix the host name in the caller's configuration if it was changed")
		r.add(finding.PriorityLow, "Alert on DNS error rates (CoreDNS SERVFAIL/NXDOMAIN)")
	},
}
