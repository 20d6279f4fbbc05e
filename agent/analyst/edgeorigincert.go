package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// KindEdgeOriginCert: a CDN's edge that validates the origin's
// certificate rejects the one the origin serves. Cloudflare answers 526
// "Invalid SSL certificate" when its SSL mode is Full (strict) and the
// origin's certificate is self-signed, expired, issued by a private CA or
// for another name; the origin is up and serves every request that skips
// verification. The usual trigger is the edge's setting tightened (Full
// to Full (strict), origin certificate verification switched on), not
// the origin's release: the cause is the pair, a certificate the edge
// now checks and does not trust.
const KindEdgeOriginCert Kind = "edge_origin_cert"

var edgeOriginCert = &mechanism{
	kind:   KindEdgeOriginCert,
	class:  classCause,
	label:  "CDN edge rejects the origin's certificate (526 Invalid SSL certificate)",
	detect: detectEdgeOriginCert,
	// The change that made the edge verify the origin's certificate, or
	// that changed the certificate the origin serves.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(edgeVerifyChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the CDN's edge rejects the certificate of %s's origin and answers %s (Invalid SSL certificate) to every request it forwards", h.Subject, orWord(h.fact("status"), "526"))
		d += ": in SSL mode Full (strict) the edge validates the origin's certificate, and the origin serves " + orWord(h.fact("why"), "a certificate it does not trust")
		d += h.wrapped(" (checked directly: ", "cert_line", ")")
		d += ". The origin itself is up: the failure is between the edge's verification and the certificate, not in the service or the CDN's availability"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Serve a certificate the edge trusts on %s's origin (a CDN origin CA certificate, or a publicly trusted one from an ACME issuer) for every host the edge forwards; until then set the SSL mode back to Full (not strict) to restore service", h.Subject)
		r.med("Before tightening the edge's TLS mode, check the origin's certificate chain with openssl s_client -verify_return_error against the origin address")
		r.low("Alert on the edge's 52x rate (origin unreachable, TLS failures) apart from the origin's own errors")
	},
}

var (
	// The edge's 526 in a response or a page, or a Logpush record.
	edge526RE = regexp.MustCompile(`(?i)(?:^[<\s]*HTTP/[\d.]+\s+526\b|\b526: Invalid SSL certificate|error\s+526\b|"EdgeResponseStatus"\s*:\s*526\b)`)
	// A client's verification of the origin's certificate failing (curl,
	// openssl s_client, Go, Python, Java), with what it says of why.
	originVerifyRE = regexp.MustCompile(`(?i)(SSL certificate problem: ([^\r\n]+)|verify error:num=\d+:([^\r\n]+)|Verify return code: [1-9]\d* \(([^)]+)\)|x509: (certificate signed by unknown authority|certificate has expired[^\r\n]*)|CERTIFICATE_VERIFY_FAILED\]? certificate verify failed: ([^\r\n(]+)|PKIX path building failed)`)
	// openssl x509's subject and issuer lines.
	x509SubjectRE = regexp.MustCompile(`^\s*subject\s*=\s*(.+?)\s*$`)
	x509IssuerRE  = regexp.MustCompile(`^\s*issuer\s*=\s*(.+?)\s*$`)
	// A change that tightens the edge's verification of the origin.
	edgeVerifyChangeRE = regexp.MustCompile(`(?i)\bstrict\b|origin[ _-]?(?:ca|cert|certificate|tls|ssl)|ssl[ _-]?mode|verify[ _-]?(?:origin|ssl|tls)|(?:ssl|tls)[ _-]?verif`)
)

// detectEdgeOriginCert pairs the edge's 526 (a response, an error page, a
// CDN log record) with a check of the origin that shows its certificate
// failing verification (curl, openssl, a client's error) or self-signed
// (openssl x509 printing the same subject and issuer).
func detectEdgeOriginCert(ev *Gathered, _ []Finding) []Finding {
	var edgeLine string
	var onset time.Time
	n := 0
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if edgeLine == "" && matchLine(edge526RE, l) {
				edgeLine = strings.TrimSpace(l)
			}
		}
	}
	for _, t := range incidentTemplates(ev) {
		for _, l := range []string{t.Example, t.Last} {
			if matchLine(edge526RE, l) {
				n += t.Incident
				at := firstOf(t.FirstIncident, t.FirstSeen)
				if onset.IsZero() || (!at.IsZero() && at.Before(onset)) {
					onset = at
				}
				if edgeLine == "" {
					edgeLine = l
				}
				break
			}
		}
	}
	if edgeLine == "" {
		return nil
	}
	why, certLine, check := originCertFailure(ev)
	if why == "" {
		return nil
	}
	subject := orWord(ev.Scope.Service, "the site")
	if onset.IsZero() {
		onset = ev.Window.Start
	}
	f := Finding{Kind: KindEdgeOriginCert, Subject: subject, Namespace: ev.Scope.Namespace, Object: "origin certificate of " + subject, Time: onset,
		Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("status", "526")
	f.setFact("why", why)
	f.setFact("cert_line", certLine)
	f.setFact("line", edgeLine)
	f.Evidence = append(f.Evidence, "the edge answers 526 Invalid SSL certificate: "+quote(ReadableLine(edgeLine), 200))
	if n > 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d edge log records with status 526 in the incident window, from %s", n, ts(onset)))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("checking the origin directly (%s): %s", truncate(check, 140), quote(certLine, 200)))
	f.Summary = fmt.Sprintf("the CDN edge rejects the origin's certificate of %s (526): %s", subject, why)
	return []Finding{f}
}

// originCertFailure reads, in the commands run against the origin, why its
// certificate fails verification: the client's own words, or a
// self-signed certificate openssl x509 printed (subject equal to issuer).
func originCertFailure(ev *Gathered) (why, line, command string) {
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(originVerifyRE, l)
			if m == nil {
				continue
			}
			reason := strings.TrimSpace(orWord(m[2], orWord(m[3], orWord(m[4], orWord(m[5], orWord(m[6], m[1]))))))
			return originCertWhy(reason), strings.TrimSpace(l), c.Command
		}
	}
	for _, c := range ev.Commands {
		var subject, issuer string
		for _, l := range c.Lines {
			if m := findSubmatch(x509SubjectRE, l); m != nil {
				subject = m[1]
			}
			if m := findSubmatch(x509IssuerRE, l); m != nil {
				issuer = m[1]
			}
		}
		if subject != "" && subject == issuer {
			return "a self-signed certificate (its issuer is its subject, " + subject + ")", "subject=" + subject + " issuer=" + issuer, c.Command
		}
	}
	return "", "", ""
}

// originCertWhy words a client's verification error as what the origin
// serves.
func originCertWhy(reason string) string {
	r := strings.ToLower(reason)
	switch {
	case strings.Contains(r, "self-signed") || strings.Contains(r, "self signed"):
		return "a self-signed certificate, which no trusted authority issued"
	case strings.Contains(r, "expired"):
		return "an expired certificate"
	case strings.Contains(r, "local issuer") || strings.Contains(r, "unknown authority") || strings.Contains(r, "pkix") || strings.Contains(r, "first certificate"):
		return "a certificate from an authority the edge does not trust (a private CA, or an incomplete chain)"
	case strings.Contains(r, "name") || strings.Contains(r, "mismatch"):
		return "a certificate for another name"
	}
	return "a certificate that fails verification (" + reason + ")"
}
