package analyst

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindTLSMismatch: the two ends of a connection disagree on TLS. One of
// them speaks plaintext to a port where the other now expects TLS (or the
// reverse), or they have no TLS version in common (a server hardened to
// TLS 1.3 only, a client whose runtime stops at TLS 1.2). Nothing is
// wrong with a certificate; the handshake never starts or is refused on
// the version. The change is usually on the side that did not fail: the
// server that moved to TLS or narrowed its protocols, while its clients
// were left as they were.
const KindTLSMismatch Kind = "tls_mismatch"

var tlsMismatch = &mechanism{
	kind:  KindTLSMismatch,
	class: classCause,
	label: "the two ends of a connection disagree on TLS (plaintext against TLS, or no common TLS version)",
	// Each side's own words. A plaintext client at a TLS port: gRPC-Go's
	// "error reading server preface: http2: frame too large", Go's
	// net/http "malformed HTTP response \x15\x03", Netty's HTTP/2 "First
	// received frame was not SETTINGS ... 1503". A TLS server reached in
	// plaintext: Go's "first record does not look like a TLS handshake",
	// nginx's "plain HTTP request was sent to HTTPS port", OpenSSL's
	// "http request", "Client sent an HTTP request to an HTTPS server". A
	// TLS client at a plaintext port: OpenSSL's and Python's "wrong
	// version number", Go's "server gave HTTP response to HTTPS client",
	// Java's "Unsupported or unrecognized SSL message". No common
	// version: Java's "Received fatal alert: protocol_version" and "No
	// appropriate protocol", OpenSSL's "alert protocol version" and
	// "unsupported protocol", Go's "protocol version not supported",
	// .NET's TLS alert 'ProtocolVersion'.
	lines:      tlsMismatchRE,
	lineWeight: 0.85,
	detect:     detectTLSMismatch,
	related: func(h *Hypothesis, f *Finding) bool {
		// The other end's own lines of the same disagreement.
		t := h.fact("tls_target")
		return t != "" && f.Kind == KindTLSMismatch && f.Subject == t
	},
	strictTriggers: true,
	fitsChange:     changeSays(tlsChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		client := orWord(h.fact("caller"), h.Subject)
		target := orWord(h.fact("tls_target"), "the server it calls")
		var d string
		switch h.fact("tls_mode") {
		case "plaintext":
			d = fmt.Sprintf("%s speaks plaintext to %s, which now expects TLS on that port: the connection fails before any request (a TLS record read as an HTTP/2 frame, or plaintext read as a TLS handshake), so every call fails", client, target)
		case "tls":
			d = fmt.Sprintf("%s speaks TLS to %s, which answers in plaintext on that port: the handshake fails before any request, so every call fails", client, target)
		default:
			d = fmt.Sprintf("%s and %s have no TLS protocol version in common: the server refuses the versions the client offers (protocol version alert), so every handshake fails before any request", client, target)
		}
		if c := h.fact("tls_change"); c != "" && (h.Trigger == nil || h.Trigger.fact("description") != c) {
			d += fmt.Sprintf(". It began with the %s: %s", h.fact("tls_change_what"), quote(c, 200))
		}
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 220)
		}
		if l := h.fact("tls_server_line"); l != "" {
			d += "; " + target + " logs " + quote(ReadableLine(l), 160)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		client := orWord(h.fact("caller"), h.Subject)
		target := orWord(h.fact("tls_target"), "the server")
		switch h.fact("tls_mode") {
		case "plaintext":
			r.high("Make %s dial %s with TLS (its client's TLS setting, the https:// or TLS transport credentials) and trust the CA that signs %s's certificate; or, until it does, have %s serve plaintext again", client, target, target, target)
		case "tls":
			r.high("Make %s dial %s in plaintext, or enable TLS on %s's port", client, target, target)
		default:
			r.high("Let %s accept a TLS version %s offers again (e.g. TLS 1.2 beside 1.3), or upgrade %s's runtime to one that speaks the version %s requires", target, client, client, target)
		}
		r.med("List every client of %s and check its TLS setting before changing how %s serves", target, target)
		r.low("Roll TLS changes out with both modes accepted for a while (a permissive or dual-port period) and alert on handshake failures by peer")
	},
}

var (
	tlsMismatchRE = regexp.MustCompile(`(?i)error reading server preface: http2: frame too large|malformed HTTP response \\*"\\*x15\\*x03|First received frame was not SETTINGS[^\n]{0,80}1503|first record does not look like a TLS handshake|plain HTTP request was sent to HTTPS port|SSL routines[:\w]*:http request|Client sent an HTTP request to an HTTPS server|wrong version number|WRONG_VERSION_NUMBER|server gave HTTP response to HTTPS client|Unsupported or unrecognized SSL message|Received fatal alert: protocol_version|No appropriate protocol \(protocol is disabled or cipher suites are inappropriate\)|alert protocol version|TLSV1_ALERT_PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|SSL routines[:\w]*:unsupported protocol|tls: protocol version not supported|TLS alert: 'ProtocolVersion'`)

	// The server's side: it received plaintext where it expects TLS.
	tlsServerSideRE = regexp.MustCompile(`(?i)(?:Server\.Serve|http: TLS handshake error from|security handshake from)[^\n]*first record does not look like a TLS handshake|plain HTTP request was sent to HTTPS port|SSL routines[:\w]*:http request|SSL_do_handshake\(\) failed`)
	// A client that spoke plaintext (to a TLS server).
	tlsPlainClientRE = regexp.MustCompile(`(?i)server preface: http2: frame too large|malformed HTTP response \\*"\\*x15\\*x03|First received frame was not SETTINGS|first record does not look like a TLS handshake|plain HTTP request was sent to HTTPS port|SSL routines[:\w]*:http request|Client sent an HTTP request to an HTTPS server`)
	// A client that spoke TLS (to a plaintext server).
	tlsClientToPlainRE = regexp.MustCompile(`(?i)wrong version number|WRONG_VERSION_NUMBER|server gave HTTP response to HTTPS client|Unsupported or unrecognized SSL message`)

	// A change that touches how a service speaks TLS.
	tlsChangeRE = regexp.MustCompile(`(?i)\b(?:tls|ssl|https|mtls|certificates?|cert-manager|plaintext|insecure|ciphers?|ssl_protocols|tlsv1(?:\.\d)?|hardening)\b`)

	// A host a client's line names: a URL's or a gRPC target's host, or
	// host:port.
	tlsHostRE = regexp.MustCompile(`(?i)(?:[a-z][a-z0-9+.-]*://+|\btarget[=:"\s]+(?:dns:///)?|\bhost[=:"'\s]+|\bto\s+)([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*)(?::\d+)?`)
)

// detectTLSMismatch pairs a client's failure with the other end: the
// service whose own lines say it received plaintext where it expects TLS,
// else the host the client's lines name. The change that moved either
// end's TLS (the other end's first) near the onset is the trigger.
func detectTLSMismatch(ev *Gathered, found []Finding) []Finding {
	var servers []*Finding
	for i := range found {
		if f := &found[i]; f.Kind == KindTLSMismatch && matchLine(tlsServerSideRE, f.fact("line")) {
			servers = append(servers, f)
		}
	}
	for i := range found {
		f := &found[i]
		if f.Kind != KindTLSMismatch || matchLine(tlsServerSideRE, f.fact("line")) {
			continue
		}
		line := f.fact("line")
		client := orWord(f.fact("caller"), f.Subject)
		mode := "version"
		switch {
		case matchLine(tlsPlainClientRE, line):
			mode = "plaintext"
		case matchLine(tlsClientToPlainRE, line):
			mode = "tls"
		}
		f.setFact("tls_mode", mode)
		target := ""
		for _, s := range servers {
			if s.Subject != client && s.Subject != "" && mode == "plaintext" {
				target = s.Subject
				f.setFact("tls_server_line", s.fact("line"))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s, the other end, logs that it receives plaintext where it expects TLS: %s", s.Subject, quote(ReadableLine(s.fact("line")), 200)))
				break
			}
		}
		if target == "" {
			target = tlsHostTarget(ev, client, line)
		}
		if target == "" {
			continue
		}
		f.setFact("tls_target", target)
		if f.fact("affected") == "" {
			f.setFact("affected", target)
		}
		if c := tlsChangeOf(ev, []string{target, client}, f.Time); c != nil {
			what := fmt.Sprintf("%s of %s", c.Kind, c.Service)
			if c.Revision != "" {
				what = fmt.Sprintf("%s of %s (%s) at %s", c.Kind, c.Service, c.Revision, hm(c.Timestamp))
			}
			f.setFact("tls_change", c.Description)
			f.setFact("tls_change_what", what)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s of %s at %s: %s", c.Kind, orWord(c.Revision, ""), c.Service, hm(c.Timestamp), quote(c.Description, 200)))
			f.Weight = max(f.Weight, 0.9)
		}
		f.setFact("why", fmt.Sprintf("%s and %s disagree on TLS", client, target))
	}
	return nil
}

// tlsHostTarget is the service the client's failing line (else another
// of its lines) names by host: the host's first label when a service of
// that name is known (a change, a log, a workload), else the host.
func tlsHostTarget(ev *Gathered, client, line string) string {
	var hosts []string
	add := func(l string) {
		for _, m := range findAllSubmatch(tlsHostRE, l, -1) {
			h := strings.ToLower(m[1])
			if net.ParseIP(h) == nil && strings.Contains(h, ".") || knownService(ev, h) {
				hosts = append(hosts, h)
			}
		}
	}
	add(line)
	if len(hosts) == 0 {
		for _, s := range ev.Logs {
			if s.Subject != client {
				continue
			}
			for _, t := range s.Templates {
				add(t.Example)
			}
		}
	}
	for _, h := range hosts {
		first, _, _ := strings.Cut(h, ".")
		if first != client && knownService(ev, first) {
			return first
		}
	}
	if len(hosts) > 0 && !strings.HasPrefix(hosts[0], client) {
		return hosts[0]
	}
	return ""
}

// knownService reports whether a name is a service the evidence knows: a
// change's service, a log's subject, a workload.
func knownService(ev *Gathered, name string) bool {
	if len(name) < 3 {
		return false
	}
	for _, c := range ev.Changes {
		if c.Service == name {
			return true
		}
	}
	for _, s := range ev.Logs {
		if s.Subject == name {
			return true
		}
	}
	for _, d := range ev.K8s.Deployments {
		if d.Name == name {
			return true
		}
	}
	return false
}

// tlsChangeOf is the latest change of one of the services (the first
// listed first) that says it touched TLS, within a day before the onset
// (or a quarter of an hour after it).
func tlsChangeOf(ev *Gathered, services []string, onset time.Time) *evidence.Change {
	for _, svc := range services {
		var best *evidence.Change
		for i := range ev.Changes {
			c := &ev.Changes[i]
			if c.Service != svc || !matchLine(tlsChangeRE, c.Description+" "+c.Revision) {
				continue
			}
			if !onset.IsZero() && (c.Timestamp.After(onset.Add(15*time.Minute)) || c.Timestamp.Before(onset.Add(-24*time.Hour))) {
				continue
			}
			if best == nil || c.Timestamp.After(best.Timestamp) {
				best = c
			}
		}
		if best != nil {
			return best
		}
	}
	return nil
}
