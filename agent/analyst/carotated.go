package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/finding"
)

// A certificate authority changed on one side of a TLS connection only:
// a database server moved to a new CA (RDS's ca_cert_identifier, applied
// at the next maintenance reboot) while its clients verify against a
// bundle baked with the old one; or a trust bundle switched to a new root
// (trust-manager's Bundle, a CA ConfigMap) while the servers still
// present certificates of the old root. Verification fails — "certificate
// verify failed", "x509: certificate signed by unknown authority",
// "unable to get local issuer certificate", PKIX path building, the
// server's "tlsv1 alert unknown ca" — from the moment the change takes
// effect (the reboot, or the clients' restart that reads the new
// bundle), often days after it was made. Nothing expired and no name is
// wrong: the two sides no longer share a CA.

// KindCARotated is TLS verification failing after a certificate
// authority changed on one side.
const KindCARotated Kind = "ca_rotated"

var caRotated = &mechanism{
	kind:   KindCARotated,
	class:  classCause,
	label:  "certificate authority changed on one side of TLS",
	detect: detectCARotated,
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Kind != KindCARotated && (strings.EqualFold(f.Subject, h.Subject) || namedByTop(h, f, KindCARotated) || slicesHas(h.top().Related, f.fact("caller")))
	}),
	strictTriggers: true,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	describe:       describeCARotated,
	recommend:      recommendCARotated,
}

var (
	// A verification failure for want of the issuing CA (not an expiry,
	// not a name mismatch).
	caVerifyRE  = regexp.MustCompile(`(?i)certificate verify failed|CERTIFICATE_VERIFY_FAILED|signed by unknown authority|unable to get local issuer certificate|self[- ]signed certificate in certificate chain|PKIX path building failed|unable to find valid certification path|alert unknown ca|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE`)
	caNotThisRE = regexp.MustCompile(`(?i)expired|not yet valid|hostname|altname|doesn't match|does not match|not valid for`)
	// A change of a certificate authority or of the bundle that trusts
	// one.
	caChangeRE = regexp.MustCompile(`(?i)ca[_ -]?cert(?:ificate)?[_ -]?identifier|CACertificateIdentifier|modification to CA certificate|\brds-ca-[\w-]+|\b(?:root|intermediate|issuing|internal|private) CA\b|\bCA (?:bundle|certificate|rotation|key)|\btrust[- ]?bundle|\bBundle [\w.-]+ sources|\bca-bundle\b|--ca-certificate-identifier|ssl[_-]ca|server-ca`)
	// A CA moved from one name to another in a change ("X -> Y", "from X
	// to Y").
	caMoveRE = regexp.MustCompile(`(?i)([\w.-]*(?:ca|root)[\w.-]*)\s*(?:->|→|=>)\s*([\w.-]*(?:ca|root)[\w.-]*)`)
	// The bundle a client verifies against.
	caBundleRE = regexp.MustCompile(`(?i)(?:sslrootcert|ssl_ca|sslca|ssl-ca|cafile|-CAfile|ca_certs|SSL_CERT_FILE|REQUESTS_CA_BUNDLE|NODE_EXTRA_CA_CERTS|CA bundle"? path)\s*[=:]?\s*"?([\w./-]+\.(?:pem|crt|cer))`)
)

func slicesHas(list []string, s string) bool {
	if s == "" {
		return false
	}
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// rankClients orders the names of the clients refused by a server: the
// service asked about first, then by how many lines each logged (count),
// then by name.
func rankClients[T any](clients map[string]T, service string, count func(T) int) []string {
	names := make([]string, 0, len(clients))
	for n := range clients {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == service) != (names[j] == service) {
			return names[i] == service
		}
		if ci, cj := count(clients[names[i]]), count(clients[names[j]]); ci != cj {
			return ci > cj
		}
		return names[i] < names[j]
	})
	return names
}

func detectCARotated(ev *Gathered, found []Finding) []Finding {
	type client struct {
		first time.Time
		line  string
		n     int
	}
	clients := map[string]*client{}
	var serverLine string
	for x := range incidentMatches(ev, caVerifyRE) {
		if matchLine(caNotThisRE, x.line) {
			continue
		}
		at := orTime(x.t.FirstIncident, x.t.FirstSeen)
		if hostRole(*x.set) != "" || x.set.Origin == SrcCloudWatch || strings.Contains(strings.ToLower(x.line), "alert unknown ca") {
			// The server's own log: it refuses clients for its CA.
			if serverLine == "" {
				serverLine = x.line
			}
			continue
		}
		c := clients[x.set.Subject]
		if c == nil {
			c = &client{}
			clients[x.set.Subject] = c
		}
		if c.first.IsZero() || at.Before(c.first) {
			c.first = at
		}
		c.n += x.t.Incident
		if c.line == "" || RootCauseScore(x.line) > RootCauseScore(c.line) {
			c.line = x.line
		}
	}
	if len(clients) == 0 {
		return nil
	}
	names := rankClients(clients, ev.Scope.Service, func(c *client) int { return c.n })
	onset := clients[names[0]].first
	for _, n := range names {
		if c := clients[n]; !c.first.IsZero() && (onset.IsZero() || c.first.Before(onset)) {
			onset = c.first
		}
	}
	// The CA change: the latest change naming a CA within 30 days before
	// the failures began, made to something else than the failing
	// clients (a client's own release is weighed as its deploy).
	var change *timedLine
	for _, l := range changeLines(ev, caChangeRE) {
		if slicesHas(names, strings.TrimPrefix(l.From, "change of ")) {
			continue
		}
		if l.Time.IsZero() || l.Time.After(onset.Add(time.Minute)) || onset.Sub(l.Time) > 30*24*time.Hour {
			continue
		}
		if change == nil || !l.Time.Before(change.Time) {
			c := l
			change = &c
		}
	}
	if change == nil {
		return nil
	}
	name := names[0]
	c := clients[name]
	f := Finding{Kind: KindCARotated, Subject: name, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.9,
		Source: "logs", Time: onset}
	if f.Time.IsZero() || !ev.Window.recent(f.Time) {
		f.Time = ev.Window.Start
	}
	f.setFact("line", c.line)
	f.setFact("clients", strings.Join(names, ", "))
	f.setFact("change", change.Text)
	f.setFact("change_at", ts(change.Time))
	if m := findSubmatch(caMoveRE, change.Text); m != nil {
		f.setFact("ca_from", m[1])
		f.setFact("ca_to", m[2])
	}
	// When it took effect: a record of the CA change applied (RDS's
	// event) after the change and before the failures.
	for _, l := range eventLines(ev, caChangeRE) {
		if !l.Time.IsZero() && l.Time.After(change.Time) && !l.Time.After(onset.Add(time.Minute)) && !strings.HasPrefix(l.From, "change of") {
			f.setFact("applied", fmt.Sprintf("%s (%s)", ReadableLine(l.Text), ts(l.Time)))
		}
	}
	// The bundle the client verifies against.
	for _, l := range eventLines(ev, caBundleRE) {
		if m := findSubmatch(caBundleRE, l.Text); m != nil {
			f.setFact("bundle", m[1])
			break
		}
	}
	f.setFact("server_line", serverLine)
	for _, n := range names {
		f.Related = appendNew(f.Related, n)
	}
	for _, x := range found {
		if x.Kind == KindTLS && slicesHas(names, x.fact("caller")) {
			f.Related = appendNew(f.Related, x.Subject)
		}
	}
	f.Summary = fmt.Sprintf("TLS verification from %s fails after a certificate authority change", strings.Join(names, ", "))
	f.Evidence = []string{
		fmt.Sprintf("%s: %s", name, quote(ReadableLine(c.line), 240)),
		fmt.Sprintf("certificate authority change at %s: %s", ts(change.Time), quote(change.Text, 240)),
	}
	if a := f.fact("applied"); a != "" {
		f.Evidence = append(f.Evidence, "applied: "+a)
	}
	if serverLine != "" {
		f.Evidence = append(f.Evidence, "the server refuses the clients: "+quote(ReadableLine(serverLine), 200))
	}
	return []Finding{f}
}

func describeCARotated(h *Hypothesis, sc Scope) string {
	d := fmt.Sprintf("TLS connections from %s fail certificate verification (%s): the certificate authority changed on one side only — %s (%s)",
		orWord(h.fact("clients"), h.Subject), quote(ReadableLine(h.fact("line")), 200), quote(h.fact("change"), 240), h.fact("change_at"))
	if from, to := h.fact("ca_from"), h.fact("ca_to"); from != "" {
		d += fmt.Sprintf(", from %s to %s", from, to)
	}
	d += h.clause(", applied ", "applied")
	d += ". The other side still uses the old CA"
	if b := h.fact("bundle"); b != "" {
		d += fmt.Sprintf(" (the client verifies against %s only)", b)
	}
	d += ", so the two no longer share a certificate authority: nothing expired, and the change took effect only when the connections were made anew (a restart, a reboot)"
	return d
}

func recommendCARotated(h *Hypothesis, sc Scope, r *recommender) {
	r.add(finding.PriorityHigh, fmt.Sprintf("Make both sides trust the same certificate authority: add the new CA to the bundle %s verifies against (keep old and new in it during the rotation), or serve certificates issued by the CA the clients trust", orWord(h.fact("clients"), "the client")))
	r.add(finding.PriorityMedium, "Rotate a CA in two steps: distribute a bundle holding both CAs to every client first, then switch the servers (or the reverse for a trust bundle); roll back the CA change if the clients cannot be updated quickly")
	r.add(finding.PriorityLow, "Alert on TLS verification failures and track pending CA changes (maintenance windows, pending modifications)")
}
