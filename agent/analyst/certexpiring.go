package analyst

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A certificate close to its notAfter whose renewal fails (cert-manager
// Orders and Challenges failing): nothing is broken yet, but will be.
var certExpiring = &mechanism{
	kind:     KindCertExpiring,
	class:    classCause,
	label:    "certificate expiring soon",
	metrics:  DetectCertExpiry,
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
	d += h.wrapped(" (served at ", "hosts", ")")
	d += fmt.Sprintf(" expires in %s, at %s", orDash(h.fact("expires_in")), orDash(h.fact("not_after")))
	if e := h.fact("renewal_error"); e != "" {
		d += "; its renewal is failing: " + quote(truncate(e, 200), 210)
	} else {
		d += "; it has not been renewed"
	}
	d += ". Nothing is down yet, but TLS handshakes will fail (certificate expired) when it expires"
	return d
}

// isCertExpiryMetric reports whether a metric gives a certificate's expiry
// (a timestamp, or seconds left): blackbox_exporter's
// probe_ssl_earliest_cert_expiry, cert-manager's
// certmanager_certificate_expiration_timestamp_seconds, x509-exporter's
// x509_cert_not_after, ssl_certificate_expiry_seconds...
func isCertExpiryMetric(n string) bool {
	n = strings.ToLower(n)
	if !strings.Contains(n, "cert") && !strings.Contains(n, "ssl") && !strings.Contains(n, "tls") {
		return false
	}
	return strings.Contains(n, "expir") || strings.Contains(n, "not_after") || strings.Contains(n, "notafter")
}

// DetectCertExpiry reads every certificate-expiry series, whatever service
// its labels name: a certificate past its expiry is a failure; one expiring
// within seven days is a warning (nothing may be down yet). Series with the
// same expiry (the cert-manager Certificate and the endpoint a probe sees)
// are one certificate.
func DetectCertExpiry(sets []MetricSet, w Window) []Finding {
	now := w.End
	type cert struct {
		expires time.Time
		names   []string // certificate names (cert-manager, x509 subject)
		hosts   []string // endpoints serving it
		secrets []string // Kubernetes Secrets holding it ("namespace/name")
		ns      string
		metrics []string
	}
	var certs []*cert
	find := func(t time.Time) *cert {
		for _, c := range certs {
			if d := c.expires.Sub(t); d > -time.Minute && d < time.Minute {
				return c
			}
		}
		c := &cert{expires: t}
		certs = append(certs, c)
		return c
	}
	for _, ms := range sets {
		if !isCertExpiryMetric(ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			p, ok := lastPoint(inWindow(s.Points, w.BaselineStart, w.End))
			if !ok || p.V <= 0 {
				continue
			}
			var exp time.Time
			if p.V > 1e9 { // a Unix timestamp
				exp = time.Unix(int64(p.V), 0).UTC()
			} else { // seconds left at the sample
				exp = p.T.Add(time.Duration(p.V * float64(time.Second)))
			}
			c := find(exp)
			if n := firstLabel(s.Labels, "name", "certificate", "subject_CN", "subject_cn", "common_name", "cn", "secret_name", "filepath", "filename"); n != "" && !containsStr(c.names, n) {
				c.names = append(c.names, n)
			}
			if in := firstLabel(s.Labels, "instance", "host", "target", "domain", "server_name"); in != "" {
				h := in
				if u, err := url.Parse(in); err == nil && u.Host != "" {
					h = u.Hostname()
				}
				if !containsStr(c.hosts, h) {
					c.hosts = append(c.hosts, h)
				}
			}
			if sn := firstLabel(s.Labels, "secret_name", "secret"); sn != "" {
				ref := orWord(firstLabel(s.Labels, "secret_namespace", "exported_namespace", "namespace"), "") + "/" + sn
				if !containsStr(c.secrets, ref) {
					c.secrets = append(c.secrets, ref)
				}
			}
			if c.ns == "" {
				c.ns = s.Labels["namespace"]
			}
			metric := s.Labels["__name__"]
			if metric == "" {
				metric = ms.Name
			}
			if !containsStr(c.metrics, metric) {
				c.metrics = append(c.metrics, metric)
			}
		}
	}
	sort.SliceStable(certs, func(i, j int) bool { return certs[i].expires.Before(certs[j].expires) })
	var out []Finding
	for _, c := range certs {
		left := c.expires.Sub(now)
		if left > certExpiryWarn {
			continue
		}
		name := ""
		if len(c.names) > 0 {
			name = c.names[0]
		} else if len(c.hosts) > 0 {
			name = c.hosts[0]
		}
		if name == "" {
			continue
		}
		f := Finding{Subject: name, Object: "certificate " + name, Namespace: c.ns, Source: SrcMetrics, Related: certOwners(c.names, c.hosts)}
		where := ""
		if len(c.hosts) > 0 {
			where = " served at " + strings.Join(c.hosts, ", ")
		}
		if left <= 0 {
			f.Kind, f.Severity, f.Weight = KindCertificate, SevCritical, 0.92
			f.Time = c.expires
			f.Summary = fmt.Sprintf("certificate %s%s expired at %s", name, where, ts(c.expires))
			f.Evidence = []string{fmt.Sprintf("certificate %s%s expired at %s (%s)", name, where, ts(c.expires), strings.Join(c.metrics, ", "))}
			f.setFact("not_after", ts(c.expires))
			f.setFact("target", strings.Join(c.hosts, ", "))
		} else {
			f.Kind, f.Severity, f.Weight = KindCertExpiring, SevWarning, 0.8
			if left < 3*24*time.Hour {
				f.Weight = 0.88
			}
			f.Time = w.Start
			f.Summary = fmt.Sprintf("certificate %s%s expires in %s (at %s)", name, where, humanDuration(left), ts(c.expires))
			f.Evidence = []string{fmt.Sprintf("certificate %s%s expires at %s, in %s (%s)", name, where, ts(c.expires), humanDuration(left), strings.Join(c.metrics, ", "))}
			f.setFact("expires_in", humanDuration(left))
		}
		f.setFact("certificate", name)
		f.setFact("not_after", ts(c.expires))
		f.setFact("hosts", strings.Join(c.hosts, ", "))
		f.setFact("secrets", strings.Join(c.secrets, ","))
		out = append(out, f)
	}
	return out
}

// certOwners guesses the services a certificate belongs to: its name
// without a -tls/-cert suffix, and the first label of the hosts it serves.
func certOwners(names, hosts []string) []string {
	var out []string
	for _, n := range names {
		for _, suf := range []string{"-tls", "-cert", "-certificate", "-https", "-ssl"} {
			if b := strings.TrimSuffix(n, suf); b != n && b != "" && !containsStr(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// certExpiryWarn is how close to its expiry a certificate is worth a
// finding.
const certExpiryWarn = 7 * 24 * time.Hour
