package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A certificate served without its intermediate: the server sends only its
// leaf, not the chain up to a root the clients trust. Browsers complete the
// chain themselves (from the certificate's AIA URL or their cache) and
// work; every other client — curl, Java, Go, Python, a partner's
// integration — fails verification: OpenSSL's "unable to get local issuer
// certificate" / "unable to verify the first certificate" (verify codes 20
// and 21), Java's "PKIX path building failed", Go's "x509: certificate
// signed by unknown authority", Node's UNABLE_TO_VERIFY_LEAF_SIGNATURE. The
// server's TLS terminator logs the clients' "alert unknown ca" (SSL alert
// number 48). It follows a renewal that installed the leaf alone (a Secret
// created from the certificate file without the CA bundle). openssl
// s_client shows it directly: one certificate in the chain (depth 0 only),
// issued by a CA that is not its own subject, and the verify error.

// KindChainIncomplete is a TLS server that sends its certificate without
// the intermediate.
const KindChainIncomplete Kind = "chain_incomplete"

var (
	// s_client's chain listing: " 0 s:CN = api.example.com" and the issuer
	// line after it "   i:C = GB, … CN = Sectigo RSA …".
	chainCertRE   = regexp.MustCompile(`^\s*(\d+)\s+s:\s*(.+?)\s*$`)
	chainIssuerRE = regexp.MustCompile(`^\s*i:\s*(.+?)\s*$`)
	// The verify errors of a leaf whose issuer the client cannot find.
	leafIssuerMissingRE = regexp.MustCompile(`(?i)verify error:num=2[01]\b|Verify return code: 2[01]\b|unable to verify the first certificate`)
	// The chain shown complete (another certificate than the leaf).
	depthAboveZeroRE = regexp.MustCompile(`\bdepth=[1-9]\b`)
	// What clients and servers log of a chain they cannot complete.
	chainVerifyRE = regexp.MustCompile(`(?i)unable to get local issuer certificate|unable to verify the first certificate|PKIX path building failed|unable to find valid certification path|certificate signed by unknown authority|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|alert unknown ca|SSL alert number 48`)
	// A change that installs or renews a certificate.
	certChangeRE = regexp.MustCompile(`(?i)cert|\btls\b|\bssl\b|\bchain\b|secret tls|\bpem\b`)
	// The Secret a change creates or applies.
	secretTLSRE = regexp.MustCompile(`(?i)secret tls\s+([a-z0-9][a-z0-9.-]*)`)
)

var chainIncomplete = &mechanism{
	kind:           KindChainIncomplete,
	class:          classCause,
	label:          "certificate served without its intermediate (incomplete chain)",
	detect:         detectChainIncomplete,
	strictTriggers: true,
	fitsChange:     changeSays(certChangeRE),
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindTLS:
			return true
		case KindLogErrors, KindAppCrash, KindJobFailed:
			return matchLine(chainVerifyRE, f.fact("line"))
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		host := h.fact("host")
		d := fmt.Sprintf("the TLS certificate %s serves for %s is sent without its intermediate: the server presents only its leaf certificate (%s, issued by %s) and not the chain up to a trusted root (%s)",
			h.Subject, host, orWord(h.fact("leaf"), "CN = "+host), orWord(h.fact("issuer"), "an intermediate CA"), h.fact("verify"))
		d += ", so clients that do not complete chains themselves — curl, Java, Go, Python, partners' integrations — fail verification (unable to get local issuer certificate)"
		d += ", while browsers, which fetch the missing intermediate from the certificate's AIA URL or their cache, work"
		if s := h.fact("secret"); s != "" {
			d += fmt.Sprintf(". The certificate was installed in the Secret %s from the leaf alone, without the CA bundle", s)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		secret := orWord(h.fact("secret"), "the TLS Secret of "+h.fact("host"))
		r.high("Re-create %s with the full chain (the leaf followed by the intermediate of %s: cat leaf.crt intermediate.crt > fullchain.crt; kubectl create secret tls … --cert=fullchain.crt) and check with openssl s_client -showcerts that the server now sends depth 1", secret, orWord(h.fact("issuer"), "its issuer"))
		r.med("Issue the certificate through an automated issuer (cert-manager) that installs the full chain, or validate every manual renewal with a non-browser client (curl, openssl verify) before applying it")
		r.low("Probe %s with a client that verifies the chain without AIA fetching (blackbox exporter, curl) and alert on verification failures", h.fact("host"))
	},
}

// sClientChain is what one openssl s_client run showed of a server's
// chain.
type sClientChain struct {
	host, leaf, issuer, verify string
	issuerDN                   string // the issuer's whole name
	certs                      int    // certificates listed (0: not listed)
	deeper                     bool
	missing                    bool // a verify error of the leaf's issuer
}

// readSClient reads an openssl s_client output.
func readSClient(cmd string, lines []string) (sClientChain, bool) {
	m := findSubmatch(sClientRE, cmd)
	if m == nil {
		return sClientChain{}, false
	}
	c := sClientChain{host: m[1]}
	for i, l := range lines {
		if n := findSubmatch(chainCertRE, l); n != nil {
			c.certs++
			if n[1] == "0" {
				c.leaf = commonName(n[2])
				if i+1 < len(lines) {
					if is := findSubmatch(chainIssuerRE, lines[i+1]); is != nil {
						c.issuer, c.issuerDN = commonName(is[1]), is[1]
					}
				}
			} else {
				c.deeper = true
			}
		}
		if matchLine(depthAboveZeroRE, l) {
			c.deeper = true
		}
		if matchLine(leafIssuerMissingRE, l) {
			c.missing = true
			if v := strings.TrimSpace(l); c.verify == "" || strings.HasPrefix(v, "Verify return code") {
				c.verify = v
			}
		}
	}
	return c, true
}

// detectChainIncomplete finds a server whose chain, as openssl s_client
// showed it, holds its leaf only, issued by another CA, which the client
// could not verify.
func detectChainIncomplete(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cmd := range ev.Commands {
		c, ok := readSClient(cmd.Command+" "+cmd.Run, cmd.Lines)
		if !ok || !c.missing || c.deeper || c.certs != 1 || c.issuer == "" || seen[c.host] {
			continue
		}
		// A self-signed leaf (its issuer its own subject) is another
		// problem: there is no intermediate to send.
		if strings.TrimSpace(c.issuer) == strings.TrimSpace(c.leaf) {
			continue
		}
		seen[c.host] = true
		subject, secret := servingOfHost(ev, c.host)
		f := Finding{Kind: KindChainIncomplete, Subject: subject, Object: "host " + c.host, Namespace: ev.Scope.Namespace, Severity: SevCritical,
			Weight: 0.92, Source: SrcKubernetes}
		f.setFact("host", c.host)
		f.setFact("leaf", c.leaf)
		f.setFact("issuer", c.issuer)
		f.setFact("verify", c.verify)
		f.Evidence = []string{fmt.Sprintf("%s: the chain %s sends holds only certificate 0 (%s, issued by %s) — %s", strings.TrimSpace(cmd.Command), c.host, c.leaf, c.issuer, c.verify)}
		f.setFact("why", fmt.Sprintf("openssl s_client shows %s sending its leaf certificate alone, without the intermediate of %s", c.host, c.issuer))
		// When it began: the first failed verification, the first alert
		// of unknown CA on the server, or the change that installed it.
		var tls []Finding
		for _, g := range found {
			if (g.Kind == KindTLS || g.Kind == KindLogErrors) && matchLine(chainVerifyRE, g.fact("line")) && ev.Window.recent(g.Time) {
				tls = append(tls, g)
				f.Time = earliest(f.Time, g.Time)
			}
		}
		slices.SortFunc(tls, func(a, b Finding) int { return a.Time.Compare(b.Time) })
		for _, g := range tls {
			if len(f.Evidence) >= 3 {
				break
			}
			f.Evidence = append(f.Evidence, g.Evidence...)
		}
		for _, ch := range ev.Changes {
			t := ch.Description
			if !matchLine(certChangeRE, t) || ch.Timestamp.After(ev.Window.End) || !ev.Window.recent(ch.Timestamp) {
				continue
			}
			if !f.Time.IsZero() && (ch.Timestamp.After(f.Time.Add(time.Minute)) || f.Time.Sub(ch.Timestamp) > 6*time.Hour) {
				continue
			}
			if m := findSubmatch(secretTLSRE, t); m != nil && secret == "" {
				secret = m[1]
			}
			if f.Time.IsZero() {
				f.Time = ch.Timestamp
			}
		}
		if secret != "" {
			f.setFact("secret", secret)
		}
		f.Summary = fmt.Sprintf("%s serves its certificate without the intermediate (%s)", c.host, c.verify)
		out = append(out, f)
	}
	return out
}

// servingOfHost is the Service an Ingress routes a host to, with the TLS
// Secret it serves it with; else the service asked about.
func servingOfHost(ev *Gathered, host string) (svc, secret string) {
	for _, ing := range ev.K8s.Ingresses {
		for _, t := range ing.Spec.TLS {
			if slices.Contains(t.Hosts, host) {
				secret = t.SecretName
			}
		}
		for _, r := range ing.Spec.Rules {
			if r.Host != host || r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.Backend.Service != nil && svc == "" {
					svc = p.Backend.Service.Name
				}
			}
		}
		if svc != "" {
			return svc, secret
		}
	}
	return orWord(ev.Scope.Service, host), secret
}

// commonNameRE is the CN of a distinguished name as openssl prints it
// ("C = GB, O = Sectigo Limited, CN = Sectigo RSA …" or "/C=GB/CN=…").
var commonNameRE = regexp.MustCompile(`(?:^|[,/]\s*)CN\s*=\s*([^,/]+?)\s*$`)

// commonName is a distinguished name's CN ("CN = NAME"), or the name as
// printed when it has none.
func commonName(dn string) string {
	if m := findSubmatch(commonNameRE, dn); m != nil {
		return "CN = " + m[1]
	}
	return dn
}
