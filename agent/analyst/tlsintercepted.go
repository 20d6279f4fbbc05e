package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A client's TLS inspection re-signing the chain: a customer's or an
// office's TLS-inspecting proxy (Zscaler, Netskope, Palo Alto, Fortinet,
// Blue Coat, Cisco Umbrella, Forcepoint, mitmproxy…) ends the client's
// TLS session itself and presents a copy of the server's certificate
// signed by its own CA. Clients that do not trust that CA (a build agent,
// a container with its own CA bundle) fail with "self-signed certificate
// in certificate chain" or "unable to get local issuer certificate",
// while everyone else, and the server's own check, verifies. The chain the
// failing client saw names the proxy's CA; the chain seen from elsewhere
// names the server's real issuer and verifies: the server is not at fault,
// and a release of it near the complaint is a coincidence.

// KindTLSIntercepted is a client's TLS-inspecting proxy re-signing a
// healthy server's chain.
const KindTLSIntercepted Kind = "tls_intercepted"

// inspectionCARE is the CA of a TLS-inspecting proxy product, as its
// issuer name reads.
var inspectionCARE = regexp.MustCompile(`(?i)zscaler|netskope|palo ?alto|fortinet|fortigate|blue ?coat|cisco umbrella|forcepoint|websense|sophos|mitmproxy|check ?point|menlo security|iboss|barracuda|skyhigh|mcafee web gateway|\b(?:ssl|tls)[ -]?(?:inspection|interception|decryption)\b|\bproxy\b[^,]*\bCA\b`)

var tlsIntercepted = &mechanism{
	kind:           KindTLSIntercepted,
	class:          classCause,
	label:          "client's TLS-inspecting proxy re-signs the chain (server healthy)",
	detect:         detectTLSIntercepted,
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	// The failing client's proxy cannot make the server's own pods fail
	// (a readiness probe during its rollout, a restart): those are the
	// server's own story, not consequences of the interception.
	unrelated: func(h *Hypothesis, f *Finding) bool {
		return (f.Source == SrcKubernetes || f.Source == SrcEvents) && f.Kind != KindTLSIntercepted
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is not at fault: the chain the failing client sees for %s is issued by %s, the CA of a TLS-inspecting proxy on the client's side (interception), not by the server's issuer",
			h.Subject, h.fact("host"), h.fact("intercepting_ca"))
		if ok := h.fact("served"); ok != "" {
			d += fmt.Sprintf("; seen from elsewhere %s serves its own certificate, issued by %s, and it verifies (%s)", h.fact("host"), ok, orWord(h.fact("verify_ok"), "Verify return code: 0 (ok)"))
		}
		d += ". The client's proxy re-signs the certificate with its own CA, which the client does not trust, so it reports a self-signed certificate in the chain; the customer-side proxy, not the server or its release, is the cause"
		if c := h.fact("nearby_change"); c != "" {
			since := ""
			if at, err := time.Parse(time.RFC3339, h.fact("cause_at")); err == nil {
				since = fmt.Sprintf(", valid from %s,", at.Format("2006-01-02"))
			}
			d += fmt.Sprintf(". The %s is not the cause: the certificate served after it is the server's own%s and verifies", c, since)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Tell the customer that their TLS-inspecting proxy (%s) re-signs %s: they should exempt %s from TLS inspection, or add the proxy's root CA to the failing client's trust store", h.fact("intercepting_ca"), h.fact("host"), h.fact("host"))
		r.med("Share the chain the server really serves (issuer %s, its fingerprint from openssl s_client | openssl x509 -fingerprint) so that they can compare", orWord(h.fact("served"), "as openssl shows it"))
		r.low("Document in the integration guide that TLS inspection of %s breaks clients with their own CA bundle, and that certificate pinning is not supported through such proxies", h.fact("host"))
	},
}

// detectTLSIntercepted finds an openssl s_client output for a host whose
// leaf is issued by an inspection proxy's CA while another output for the
// same host shows a different issuer (or a verified chain).
func detectTLSIntercepted(ev *Gathered, found []Finding) []Finding {
	type seen struct{ issuer, dn, verify, cmd string }
	byHost := map[string][]seen{}
	var hosts []string
	for _, c := range ev.Commands {
		ch, ok := readSClient(c.Command+" "+c.Run, c.Lines)
		if !ok || ch.issuer == "" {
			continue
		}
		verify := ""
		for _, l := range c.Lines {
			if strings.HasPrefix(strings.TrimSpace(l), "Verify return code: 0") {
				verify = strings.TrimSpace(l)
			}
		}
		if _, ok := byHost[ch.host]; !ok {
			hosts = append(hosts, ch.host)
		}
		byHost[ch.host] = append(byHost[ch.host], seen{ch.issuer, ch.issuerDN, verify, strings.TrimSpace(c.Command)})
	}
	var out []Finding
	for _, host := range hosts {
		var mitm, real *seen
		for i := range byHost[host] {
			s := &byHost[host][i]
			switch {
			case matchLine(inspectionCARE, s.dn) && mitm == nil:
				mitm = s
			case !matchLine(inspectionCARE, s.dn) && (real == nil || s.verify != ""):
				real = s
			}
		}
		// The proxy's CA alone, without the server's own chain beside it,
		// may be the server's issuer: the comparison is the evidence.
		if mitm == nil || real == nil || real.issuer == mitm.issuer {
			continue
		}
		subject, _ := servingOfHost(ev, host)
		f := Finding{Kind: KindTLSIntercepted, Subject: subject, Object: "host " + host, Namespace: ev.Scope.Namespace, Severity: SevInfo,
			Weight: 0.9, Source: SrcKubernetes}
		f.setFact("host", host)
		f.setFact("intercepting_ca", mitm.issuer)
		f.setFact("served", real.issuer)
		f.setFact("verify_ok", real.verify)
		for _, ch := range ev.Changes {
			if ch.Service == subject && ev.Window.recent(ch.Timestamp) && !ch.Timestamp.After(ev.Window.End) {
				f.setFact("nearby_change", fmt.Sprintf("%s of %s at %s", orWord(ch.Kind, "change"), subject, hm(ch.Timestamp)))
			}
		}
		// Since when the server serves its own certificate (openssl x509
		// -dates of the chain seen from elsewhere): a dated fact that its
		// release did not change it.
		if at, ok := servedSince(ev, host, real.issuer); ok {
			f.setFact("cause_at", at.Format(time.RFC3339))
			f.setFact("cause_event", fmt.Sprintf("%s's own certificate (issuer %s) valid from %s, the one still served", host, real.issuer, at.Format(time.RFC3339)))
		}
		f.setFact("why", fmt.Sprintf("the failing client's chain for %s is issued by %s, the server's own by %s", host, mitm.issuer, real.issuer))
		f.Evidence = []string{
			fmt.Sprintf("%s: the leaf for %s is issued by %s", mitm.cmd, host, mitm.issuer),
			fmt.Sprintf("%s: the leaf for %s is issued by %s%s", real.cmd, host, real.issuer, orPrefix("; ", real.verify)),
		}
		f.Summary = fmt.Sprintf("the failing client's chain for %s is re-signed by %s", host, mitm.issuer)
		out = append(out, f)
	}
	return out
}

// orPrefix is s after prefix, or nothing when s is empty.
func orPrefix(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// notBeforeRE is a certificate's start of validity as openssl x509
// -dates (or -startdate) prints it.
var notBeforeRE = regexp.MustCompile(`^\s*notBefore\s*=\s*(\w{3}\s+\d{1,2} \d{2}:\d{2}:\d{2} \d{4}) GMT`)

// servedSince is the notBefore of the certificate an openssl output for
// host shows, when that output's issuer (if it prints one) is issuer.
func servedSince(ev *Gathered, host, issuer string) (time.Time, bool) {
	for _, c := range ev.Commands {
		ch, ok := readSClient(c.Command+" "+c.Run, c.Lines)
		if !ok || ch.host != host {
			continue
		}
		var at time.Time
		same := true
		for _, l := range c.Lines {
			if m := findSubmatch(notBeforeRE, l); m != nil {
				if t, err := time.Parse("Jan _2 15:04:05 2006", strings.Join(strings.Fields(m[1]), " ")); err == nil {
					at = t.UTC()
				} else if t, err := time.Parse("Jan 2 15:04:05 2006", strings.Join(strings.Fields(m[1]), " ")); err == nil {
					at = t.UTC()
				}
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "issuer="); ok && commonName(strings.TrimSpace(v)) != issuer {
				same = false
			}
		}
		if !at.IsZero() && same {
			return at, true
		}
	}
	return time.Time{}, false
}
