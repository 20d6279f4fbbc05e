package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// KindCertNameMismatch: a client's TLS handshakes fail because the name
// it dials is not among the server's certificate's subject alternative
// names. The certificate is valid (not expired, a trusted issuer); it
// does not name the host the client calls: the certificate was reissued
// without a legacy name the client still uses, or the client calls the
// server by an alias (another Service, an IP) the certificate never held.
const KindCertNameMismatch Kind = "cert_name_mismatch"

var certNameMismatch = &mechanism{
	kind:  KindCertNameMismatch,
	class: classCause,
	label: "server certificate does not name the host the client dials",
	// The clients' own words: Node (ERR_TLS_CERT_ALTNAME_INVALID), Go's
	// crypto/x509, Java (JSSE), Python's ssl and urllib3, curl and
	// OpenSSL, .NET.
	lines:      certNameMismatchRE,
	lineWeight: 0.85,
	describe: func(h *Hypothesis, sc Scope) string {
		who := orWord(h.fact("caller"), h.Subject)
		line := h.fact("line")
		host, names := dialedHost(line), certNames(line)
		d := fmt.Sprintf("TLS handshakes from %s fail hostname verification", who)
		if host != "" {
			d += fmt.Sprintf(": it dials %s, a name the server's certificate does not hold", host)
		} else {
			d += ": the name it dials is not one the server's certificate holds"
		}
		if names != "" {
			d += fmt.Sprintf(" (its subject alternative names are %s)", names)
		} else {
			d += " (not among its subject alternative names)"
		}
		if line != "" {
			d += " — " + quote(clipMiddle(ReadableLine(line), 240), 250)
		}
		d += ". The certificate is not expired nor untrusted: it was issued without that name (a reissue that dropped a legacy name, its dnsNames changed) or the client calls the server by an alias it never named, and a server that loads its certificate at start serves the new one from its next restart"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("caller"), h.Subject)
		host := dialedHost(h.fact("line"))
		r.high("Make the names agree: point %s at a name the certificate holds, or add %s to the certificate's dnsNames (the cert-manager Certificate's spec.dnsNames) and let it reissue", who, orWord(host, "the name it dials"))
		r.med("Before removing a name from a certificate, find the clients that still dial it (their configured URLs, the server's access logs by SNI)")
		r.low("Probe each name clients use (a blackbox TLS check per URL), not only the certificate's expiry")
	},
}

var (
	certNameMismatchRE = regexp.MustCompile(`(?i)does not match certificate's altnames|ERR_TLS_CERT_ALTNAME_INVALID|x509: certificate is valid for [^\n]{1,300}?, not \S+|No subject alternative (?:DNS )?names? matching \S+ found|No name matching \S+ found|Hostname mismatch, certificate is not valid for|hostname '?[^'\s]+'? doesn't match|no alternative certificate subject name matches target host name|RemoteCertificateNameMismatch|certificate (?:is )?not valid for (?:host|name)`)

	// The host a mismatch names, in the clients' forms.
	dialedHostRE = regexp.MustCompile(`(?i)Host: ([\w.-]+?)\.? is not in the cert's altnames|x509: certificate is valid for [^\n]*?, not ([\w.:-]+)|matching ([\w.-]+) found|not valid for '([\w.-]+)'|hostname '?([\w.-]+)'? doesn't match|target host name '([\w.-]+)'`)
	// The names a certificate holds, as Node and Go print them.
	certNamesRE = regexp.MustCompile(`(?i)cert's altnames: ((?:DNS|IP Address):[^"\n]+?)(?:"|\\"|$)|x509: certificate is valid for ([^\n]+?), not `)
)

// dialedHost is the host name a mismatch says the client dialed.
func dialedHost(line string) string {
	if m := findSubmatch(dialedHostRE, line); m != nil {
		for _, g := range m[1:] {
			if g != "" {
				return strings.TrimSuffix(g, ".")
			}
		}
	}
	return ""
}

// certNames is the list of names a mismatch says the certificate holds.
func certNames(line string) string {
	if m := findSubmatch(certNamesRE, line); m != nil {
		s := strings.TrimSpace(m[1] + m[2])
		s = strings.NewReplacer("DNS:", "", "IP Address:", "").Replace(s)
		return strings.TrimRight(s, `.\ `)
	}
	return ""
}
