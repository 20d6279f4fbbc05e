package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A client certificate expired under mutual TLS: the client presents it
// and the server, checking it, ends the handshake with a certificate_expired
// alert. Whose certificate expired is read from who says so. A client that
// found the server's certificate expired says it itself (Go's "x509:
// certificate has expired or is not yet valid", Python's and OpenSSL's
// "certificate verify failed (certificate has expired)", Java's
// CertificateExpiredException): that is the server's certificate
// (certificate.go). A client that received the alert quotes its peer (Go's
// "remote error: tls: expired certificate", OpenSSL's "sslv3 alert
// certificate expired" / "SSL alert number 45", Java's "Received fatal
// alert: certificate_expired", rustls' "received fatal alert:
// CertificateExpired"): the peer refused the client's own certificate, and
// the server is up, answering its other clients. The fix is the client's
// certificate, not the server's.

// KindClientCertExpired is a client whose own certificate its mutual-TLS
// peer rejects as expired.
const KindClientCertExpired Kind = "client_cert_expired"

// peerExpiredRE is a TLS alert a client received from its peer saying the
// certificate the client presented has expired.
var peerExpiredRE = regexp.MustCompile(`(?i)remote error: tls: expired certificate|alert certificate expired|ALERT_CERTIFICATE_EXPIRED|Received fatal alert: certificate_expired|received fatal alert: CertificateExpired|SSL alert number 45\b`)

var clientCertExpired = &mechanism{
	kind:       KindClientCertExpired,
	class:      classCause,
	label:      "client certificate expired (its mTLS peer rejects it)",
	lines:      peerExpiredRE,
	lineWeight: 0.95,
	detect:     detectClientCertExpired,
	related: func(h *Hypothesis, f *Finding) bool {
		peer := h.fact("peer")
		switch f.Kind {
		case KindTLS, KindCertificate:
			// The server's side of the same handshakes: its proxy logs
			// the client certificate it could not verify.
			return true
		case KindLogErrors, KindErrorRate:
			if f.Subject == h.Subject || f.fact("caller") == h.Subject {
				return true
			}
			m := strings.ToLower(f.fact("metric") + " " + f.Summary)
			return peer != "" && f.Subject == peer && (strings.Contains(m, "ssl") || strings.Contains(m, "tls") || strings.Contains(m, "verify"))
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		peer := orWord(h.fact("peer"), "its mTLS peer")
		d := fmt.Sprintf("the client certificate that %s presents to %s for mutual TLS has expired", h.Subject, peer)
		if na := h.fact("not_after"); na != "" {
			d += fmt.Sprintf(" (not valid after %s", na)
			if p := h.fact("cert_path"); p != "" {
				d += ", " + p
			}
			d += ")"
		}
		d += fmt.Sprintf(", so %s rejects every handshake from %s with a certificate_expired alert: %s", peer, h.Subject, quote(ReadableLine(h.fact("line")), 200))
		if n := h.fact("peer_serves"); n != "" {
			d += fmt.Sprintf(". %s itself is up and answers its other clients (%s requests answered since): it is %s's own certificate, not %s's, that expired", peer, n, h.Subject, peer)
		} else {
			d += fmt.Sprintf("; it is %s's own certificate, not %s's server certificate, that expired", h.Subject, peer)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		what := "the client certificate of " + h.Subject
		if s := h.fact("secret"); s != "" {
			what += " (secret " + s + ")"
		}
		r.high("Renew %s with the CA %s trusts and restart or reload %s so that it presents the new one", what, orWord(h.fact("peer"), "its peer"), h.Subject)
		r.med("Retry the work %s could not deliver to %s since %s once its handshakes succeed", h.Subject, orWord(h.fact("peer"), "its peer"), hm(h.Onset))
		r.low("Issue client certificates through an automated issuer (a cert-manager Certificate with renewBefore) and alert on mounted certificates expiring within 21 days")
	},
}

// detectClientCertExpired adds to each client rejected for an expired
// certificate what the evidence says of that certificate (openssl x509 on
// the certificate mounted in its pod: its notAfter before the rejections)
// and whether its peer answers other clients.
func detectClientCertExpired(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, f := range found {
		if f.Kind != KindClientCertExpired || seen[f.Subject] {
			continue
		}
		seen[f.Subject] = true
		g := f
		g.Facts = nil
		for k, v := range f.Facts {
			g.setFact(k, v)
		}
		g.Evidence = slices.Clone(f.Evidence)
		peer := DependencyName(DependencyTarget(f.fact("line")))
		if peer != "" && peer != f.Subject {
			g.setFact("peer", peer)
			// Even a few requests answered show it up.
			if s := servedRequests(ev, peer, "", f.Time); s.N >= 2 {
				g.setFact("peer_serves", fmt.Sprint(s.N))
				g.Evidence = append(g.Evidence, fmt.Sprintf("%s answers its other clients after %s: %s", peer, hm(f.Time), quote(ReadableLine(s.Example), 200)))
			}
		}
		why := "its peer's TLS alert says the certificate it presented has expired"
		if c, notAfter, ok := clientCertOf(ev, f.Subject); ok && !notAfter.After(f.Time.Add(time.Hour)) {
			g.setFact("not_after", notAfter.UTC().Format("2006-01-02 15:04 UTC"))
			g.setFact("cert_path", certPathOf(c.Run+" "+c.Command))
			why = fmt.Sprintf("the certificate mounted in its pod is not valid after %s", notAfter.UTC().Format("2006-01-02 15:04 UTC"))
			g.Evidence = append([]string{fmt.Sprintf("%s in %s: %s", strings.TrimSpace(c.Run), orWord(c.Pod, c.Target), strings.Join(c.Lines, "; "))}, g.Evidence...)
		}
		g.setFact("why", why)
		if len(g.Evidence) > 4 {
			g.Evidence = g.Evidence[:4]
		}
		g.Summary = fmt.Sprintf("%s's client certificate is rejected as expired by %s", f.Subject, orWord(peer, "its peer"))
		out = append(out, g)
	}
	return out
}

// clientCertOf finds openssl's reading of a certificate in a pod of
// workload wl (kubectl exec … openssl x509 -dates): the command and the
// certificate's notAfter.
func clientCertOf(ev *Gathered, wl string) (c *cmdRef, notAfter time.Time, ok bool) {
	for i := range ev.Commands {
		x := &ev.Commands[i]
		if !x.Exec || !strings.Contains(x.Run+x.Command, "x509") {
			continue
		}
		if x.Pod != "" && workloadOfPodName(x.Pod) != wl || x.Pod == "" && !strings.HasSuffix(x.Target, "/"+wl) {
			continue
		}
		m := findSubmatch(opensslNotAfterRE, strings.Join(x.Lines, "\n"))
		if m == nil {
			continue
		}
		v := strings.Join(strings.Fields(m[1]), " ")
		t, err := time.Parse("Jan 2 15:04:05 2006", v)
		if err != nil {
			continue
		}
		return &cmdRef{Run: x.Run, Command: x.Command, Pod: x.Pod, Target: x.Target, Lines: x.Lines}, t, true
	}
	return nil, time.Time{}, false
}

// cmdRef is what an answer quotes of a command.
type cmdRef struct {
	Run, Command, Pod, Target string
	Lines                     []string
}

// certPathRE is a certificate file a command reads.
var certPathRE = regexp.MustCompile(`(/[\w./-]+\.(?:crt|pem|cer))\b`)

// certPathOf is the certificate file a command read ("" when none).
func certPathOf(cmd string) string {
	if m := findSubmatch(certPathRE, cmd); m != nil {
		return m[1]
	}
	return ""
}
