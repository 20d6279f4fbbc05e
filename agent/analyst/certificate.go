package analyst

import (
	"fmt"
	"regexp"

	"github.com/rootcause/rootcause/finding"
)

// A TLS certificate past its notAfter: handshakes with the service that
// presents it fail (x509: certificate has expired).
var certificateExpired = &mechanism{
	kind:       KindCertificate,
	class:      classCause,
	label:      "certificate expired",
	lines:      regexp.MustCompile(`(?i)certificate has expired|certificate expired|cert(ificate)? (is )?expir|x509: certificate has expired|not ?after|CERT_HAS_EXPIRED|expired certificate|certificate is not yet valid|CertificateNotYetValid|CERT_NOT_YET_VALID|\bNotValidYet\b`),
	lineWeight: 0.95,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		target := orWord(h.fact("target"), s)
		d = fmt.Sprintf("the TLS certificate of %s has expired (x509: certificate has expired), so TLS handshakes from %s fail", target, orWord(h.fact("caller"), "its clients"))
		if na := h.fact("not_after"); na != "" {
			d += fmt.Sprintf("; the certificate was valid until %s", na)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Renew the expired TLS certificate of %s and reload the service that presents it", orWord(h.fact("target"), s)))
		r.add(finding.PriorityMedium, "Automate certificate renewal (e.g. cert-manager) and check the renewal job's failures")
		r.add(finding.PriorityLow, "Alert on certificates expiring within 21 days")
	},
}
