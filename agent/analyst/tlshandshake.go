package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// TLS handshakes that fail for another reason than an expired
// certificate: an unknown authority, a chain or hostname mismatch.
var tlsHandshake = &mechanism{
	kind:       KindTLS,
	class:      classDependency,
	label:      "TLS handshake failure",
	lines:      regexp.MustCompile(`(?i)x509:|certificate verify failed|CERTIFICATE_VERIFY_FAILED|tls: handshake|TLS handshake|SSL routines|unknown authority|SSLHandshakeException|certificate signed by unknown`),
	lineWeight: 0.8,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("TLS handshakes from %s to %s fail (certificate verify failed): %s", orWord(h.fact("caller"), "clients"), orWord(h.fact("target"), s), quote(ReadableLine(h.fact("line")), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Fix TLS between %s and %s: check the certificate chain, CA bundle and hostname", orWord(h.fact("caller"), "the client"), orWord(h.fact("target"), s)))
		r.add(finding.PriorityLow, "Monitor certificate validity and trust bundles")
	},
}
