package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// A certificate close to its notAfter whose renewal fails (cert-manager
// Orders and Challenges failing): nothing is broken yet, but will be.
var certExpiring = &mechanism{
	kind:     KindCertExpiring,
	class:    classCause,
	label:    "certificate expiring soon",
	describe: func(h *Hypothesis, sc Scope) string { return describeCertExpiring(h) },
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Renew the certificate %s before %s: fix the renewal (%s) or issue and install a certificate manually", orWord(h.fact("certificate"), s), orWord(h.fact("not_after"), "it expires"), truncate(orWord(h.fact("renewal_error"), "check cert-manager's Certificate, Order and Challenge status"), 160)))
		r.add(finding.PriorityMedium, "Check cert-manager's Challenge/Order/CertificateRequest events and logs (kubectl describe challenge) and the DNS or HTTP solver's credentials and permissions")
		r.add(finding.PriorityLow, "Alert on certificates expiring within 21 days and on failing renewals (certmanager_certificate_ready_status)")
	},
}

func describeCertExpiring(h *Hypothesis) string {
	name := orWord(h.fact("certificate"), h.Subject)
	d := fmt.Sprintf("the TLS certificate %s", name)
	if hs := h.fact("hosts"); hs != "" {
		d += " (served at " + hs + ")"
	}
	d += fmt.Sprintf(" expires in %s, at %s", orDash(h.fact("expires_in")), orDash(h.fact("not_after")))
	if e := h.fact("renewal_error"); e != "" {
		d += "; its renewal is failing: " + quote(truncate(e, 200), 210)
	} else {
		d += "; it has not been renewed"
	}
	d += ". Nothing is down yet, but TLS handshakes will fail (certificate expired) when it expires"
	return d
}
