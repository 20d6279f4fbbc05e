package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A mobile app that pins its API's certificate keys (TrustKit, OkHttp's
// CertificatePinner, Alamofire's pinning evaluators, Android's pin-set)
// meets a certificate chain none of its pins match: the certificate was
// renewed and now chains through another intermediate (Let's Encrypt
// rotates R10/R11, E5/E6), or its key changed, and the app pinned the old
// intermediate or leaf instead of the root. The app aborts every TLS
// connection ("cannot connect to server", NSURLErrorDomain -999
// cancelled, "Certificate pinning failure!"), while browsers and clients
// that pin a root or nothing keep working and the API answers everyone who
// reaches it. The pin reports the app sends (TrustKit's report-uri) name
// the pins it knows and the chain it was served.

// KindPinMismatch is a certificate chain none of an app's pins match.
const KindPinMismatch Kind = "pin_mismatch"

var (
	// pinFailRE is a pin validation failure as apps and their libraries
	// report it: TrustKit's pin report ("validation-result" not 0) and
	// its log line, OkHttp's exception, Alamofire's error.
	pinFailRE = regexp.MustCompile(`(?i)"validation-result"\s*:\s*[1-9]|Pin validation failed|Certificate pinning failure!|certificatePinningFailed|SSLPeerUnverifiedException: Certificate pinning|pin verification failed|Pin verification failed`)
	// pinChainRE is the served chain's subjects in a TrustKit report.
	pinChainRE = regexp.MustCompile(`"served-certificate-chain-subjects"\s*:\s*\[\s*"[^"]*"\s*,\s*"CN=([^",]+)(?:,O=([^",]+))?`)
	// pinIssuerRE is the leaf's issuer in openssl s_client's chain.
	pinIssuerRE = regexp.MustCompile(`^\s*i:\s*(?:C\s*=\s*\w+,\s*)?(?:O\s*=\s*([^,]+),\s*)?CN\s*=\s*(.+?)\s*$`)
	// pinNotBeforeRE is the leaf's start of validity in openssl's chain.
	pinNotBeforeRE = regexp.MustCompile(`NotBefore:\s*(.+?GMT)`)
	// pinChangeRE is a change of the certificate or its chain.
	pinChangeRE = regexp.MustCompile(`(?i)certificat|\btls\b|\bssl\b|renew|issuer|intermediate|\bpins?\b|cert-manager|acme|let'?s encrypt`)
)

var pinMismatch = &mechanism{
	kind:           KindPinMismatch,
	class:          classCause,
	label:          "a certificate chain none of the app's pins match",
	detect:         detectPinMismatch,
	fitsChange:     changeSays(pinChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the app's certificate pinning rejects the chain %s now serves: pin validation fails on every connection, so the app cannot connect while clients that pin a root or nothing (browsers, other apps) keep working", h.Subject)
		if i := h.fact("intermediate"); i != "" {
			d += fmt.Sprintf("; the served certificate chains through the intermediate %s", i)
			if nb := h.fact("not_before"); nb != "" {
				d += fmt.Sprintf(", a certificate renewed (valid from %s)", nb)
			}
			d += ", whose key is not among the pins"
		}
		d += h.quoteClause(" — ", "line", 200)
		if n := h.fact("count"); n != "" {
			d += fmt.Sprintf(" (%s reports from %s)", n, h.fact("since"))
		}
		d += fmt.Sprintf(". %s itself answers every client that gets through", h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Serve a chain the installed apps pin (reissue the certificate through the pinned intermediate, or with the pinned key) until a release that pins the new intermediate or the root reaches the users")
		r.med("Pin the root and backup keys (every intermediate the CA may rotate to), never a single intermediate or leaf; check the pins against each renewal before it is served")
		r.low("Alert on the apps' pin failure reports, which the servers never see")
	},
}

// detectPinMismatch reads apps' pin validation failures and the chain
// served (the reports' subjects, openssl's chain).
func detectPinMismatch(ev *Gathered, _ []Finding) []Finding {
	var line, inter, src string
	var first time.Time
	n := 0
	for m := range allMatches(ev, pinFailRE) {
		l := m.line
		n += m.t.Count
		first = earliest(first, earliest(m.t.FirstSeen, m.t.FirstIncident))
		if line == "" {
			line, src = strings.TrimSpace(l), m.set.Subject
		}
		if m := findSubmatch(pinChainRE, l); m != nil && inter == "" {
			inter = strings.TrimSpace(strings.TrimSpace(m[2]) + " " + m[1])
		}
	}
	if n < 3 {
		return nil
	}
	notBefore := ""
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "s_client") {
			continue
		}
		for j, l := range c.Lines {
			// The leaf is chain entry 0; its issuer follows.
			if !strings.HasPrefix(strings.TrimSpace(l), "0 s:") {
				continue
			}
			for _, x := range c.Lines[j+1 : min(len(c.Lines), j+4)] {
				if m := findSubmatch(pinIssuerRE, x); m != nil && inter == "" {
					inter = strings.TrimSpace(strings.TrimSpace(m[1]) + " " + m[2])
				}
				if m := findSubmatch(pinNotBeforeRE, x); m != nil && notBefore == "" {
					notBefore = m[1]
				}
			}
		}
	}
	subject := orWord(ev.Scope.Service, src)
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindPinMismatch, Subject: subject, Namespace: ev.Scope.Namespace, Object: "certificate chain of " + subject,
		Time: first, Severity: SevCritical, Weight: 0.88, Source: SrcLogs}
	if src != "" && !strings.EqualFold(src, subject) {
		f.Related = append(f.Related, src)
	}
	f.setFact("line", line)
	f.setFact("count", fmt.Sprint(n))
	f.setFact("since", ts(first))
	f.setFact("intermediate", inter)
	f.setFact("not_before", notBefore)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%d pin validation failures from %s: %s", n, ts(first), quote(ReadableLine(line), 240)))
	if inter != "" {
		f.Evidence = append(f.Evidence, "the served chain's intermediate: "+inter)
	}
	f.Summary = fmt.Sprintf("apps' certificate pinning rejects %s's chain (%s)", subject, orWord(inter, "pins not matched"))
	return []Finding{f}
}
