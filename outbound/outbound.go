// Package outbound is the one guard between rootcause and every network
// address a team can choose: Prometheus and GitHub endpoints, webhook
// receivers, knowledge sources and whatever integration comes next. A team
// must not be able to make the server reach its own network, so loopback,
// private (RFC 1918), link-local (169.254.0.0/16, cloud metadata at
// 169.254.169.254), CGNAT (100.64.0.0/10), unspecified, multicast, reserved
// and documentation ranges and every IPv6 address outside global unicast
// (::1, fe80::/10, fc00::/7, IPv4-mapped and NAT64 forms) are refused.
//
// The guard runs twice. At save time CheckURL and CheckHost judge the text
// a team wrote: IP literals are checked, "localhost" names and encoded IPv4
// forms that some resolvers accept ("2130706433", "0x7f000001",
// "0177.0.0.1", "127.1") are refused. At dial time the client's dialer
// checks the address actually dialled (net.Dialer.Control), so DNS answers
// cannot smuggle an internal address past the save-time check; redirects
// are checked again. The server setting outbound.allow (alias
// webhook.allow) lists CIDRs or host names that are exempt.
//
// Every refusal is ErrRefused and says only "refused by the outbound
// guard": never whether a port answered, what it said, or what a name
// resolved to.
//
// Integrations never build their own transport or dialer: they take the
// *http.Client of Guard.Client. A test of this package scans the
// integration packages for transports built anywhere else.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// AddressKeys are the setting names that hold an integration's destination
// (tools.<integration>.<key>). Config validation passes every one a team
// may write through the guard at save time, and an integration whose
// address is written at a team's own level is handed only that team's own
// secrets. A new integration names its address setting with one of them.
var AddressKeys = []string{"url", "domain", "endpoint", "base_url", "host", "address"}

// ErrRefused is every refusal of the guard. Its text is all a refusal says.
var ErrRefused = errors.New("refused by the outbound guard")

// IsRefused reports whether err is a refusal of the guard.
func IsRefused(err error) bool { return errors.Is(err, ErrRefused) }

// Allowlist holds the exemptions of the server setting outbound.allow.
type Allowlist struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// ParseAllowlist parses outbound.allow entries: CIDRs ("10.20.0.0/16"),
// single addresses ("127.0.0.1", "::1") or host names ("hooks.internal",
// "localhost"). Host names match exactly, case-insensitively.
func ParseAllowlist(entries []string) (Allowlist, error) {
	a := Allowlist{hosts: map[string]bool{}}
	for _, raw := range entries {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			a.prefixes = append(a.prefixes, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
			if ip.Zone() != "" {
				return Allowlist{}, fmt.Errorf("%q: zoned addresses are not supported", s)
			}
			ip = ip.Unmap()
			a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		h := strings.TrimSuffix(strings.ToLower(s), ".")
		if !validHostName(h) || encodedIPv4(h) {
			return Allowlist{}, fmt.Errorf("%q is neither a CIDR, an IP address nor a host name", s)
		}
		a.hosts[h] = true
	}
	return a, nil
}

// MustAllowlist is ParseAllowlist for constant input; it panics on error.
func MustAllowlist(entries ...string) Allowlist {
	a, err := ParseAllowlist(entries)
	if err != nil {
		panic(err)
	}
	return a
}

// Entries returns the allowlist as text, CIDRs first, for serve --check.
func (a Allowlist) Entries() []string {
	var out []string
	for _, p := range a.prefixes {
		out = append(out, p.String())
	}
	for h := range a.hosts {
		out = append(out, h)
	}
	return out
}

// Empty reports whether nothing is exempt.
func (a Allowlist) Empty() bool { return len(a.prefixes) == 0 && len(a.hosts) == 0 }

func validHostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// encodedIPv4 reports whether a host name that is not an IP literal could
// still be read as an IPv4 address by inet_aton-style resolvers: a last
// label that is a number (decimal, octal with a leading 0, hex with 0x).
// No top-level domain is numeric, so no real name is refused.
func encodedIPv4(h string) bool {
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	for _, r := range last {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (a Allowlist) allowsAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// AllowsHost reports whether a URL host (without port) is allowlisted: a
// listed host name, or an IP literal inside a listed prefix.
func (a Allowlist) AllowsHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return a.allowsAddr(ip)
	}
	return a.hosts[host]
}

// guardian is the library guard: any port, tcp4 and tcp6 only.
var guardian = ssrf.New(ssrf.WithAnyPort())

// CheckAddr is the dial-time check: network is tcp, tcp4 or tcp6 and
// address the resolved "ip:port" about to be dialled. Allowlisted prefixes
// pass; anything else goes through code.dny.dev/ssrf's deny lists.
// IPv4-mapped addresses are judged as the IPv4 address they carry. It sends
// no traffic.
func CheckAddr(network, address string, allow Allowlist) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return ErrRefused
	}
	ip := ap.Addr().Unmap()
	if allow.allowsAddr(ip) {
		return nil
	}
	if network != "tcp4" && network != "tcp6" && network != "tcp" {
		return ErrRefused
	}
	if ip.Zone() != "" || guardian.SafeAddr(ip) != nil {
		return ErrRefused
	}
	return nil
}

// Guard judges addresses against one allowlist. The zero value and a nil
// *Guard exempt nothing.
type Guard struct {
	allow Allowlist
}

// New returns a guard with allow's exemptions.
func New(allow Allowlist) *Guard { return &Guard{allow: allow} }

// Allow returns the guard's exemptions (a nil guard has none).
func (g *Guard) Allow() Allowlist {
	if g == nil {
		return Allowlist{}
	}
	return g.allow
}

// MaxURLLength bounds every outbound URL.
const MaxURLLength = 2048

// CheckURL is the save-time check of a URL a team may set: an absolute
// http or https URL with a host and no user info, whose host passes
// CheckHost. Errors that are not about the destination (not a URL, wrong
// scheme) say what is wrong; a destination the guard refuses is ErrRefused.
func (g *Guard) CheckURL(raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("the URL is longer than %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a valid URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("the URL must use http or https")
	}
	if u.User != nil {
		return errors.New("the URL must not contain user info; credentials belong in secret references")
	}
	if u.Hostname() == "" {
		return errors.New("the URL has no host")
	}
	if p := u.Port(); p != "" {
		if n, err := parsePort(p); err != nil || n == 0 {
			return errors.New("the URL has an invalid port")
		}
	}
	return g.CheckHost(u.Hostname())
}

func parsePort(p string) (int, error) {
	n := 0
	for _, r := range p {
		if r < '0' || r > '9' {
			return 0, errors.New("bad port")
		}
		n = n*10 + int(r-'0')
		if n > 65535 {
			return 0, errors.New("bad port")
		}
	}
	return n, nil
}

// CheckHost is the save-time check of a host name or IP literal (without
// port): allowlisted hosts pass; IP literals go through the address check;
// "localhost" names, names that are not valid DNS names and encoded IPv4
// forms are refused. Names are not resolved here: the dial-time check
// covers what they resolve to.
func (g *Guard) CheckHost(host string) error {
	allow := g.Allow()
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if h == "" {
		return errors.New("the host is empty")
	}
	if allow.AllowsHost(h) {
		return nil
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return ErrRefused
		}
		return CheckAddr("tcp", netip.AddrPortFrom(ip, 443).String(), allow)
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || encodedIPv4(h) || !validHostName(h) {
		return ErrRefused
	}
	return nil
}

// Options tune a guarded client.
type Options struct {
	// Timeout bounds every request (0: none beyond the dial and TLS
	// handshake bounds).
	Timeout time.Duration
	// NoRedirects returns a 3xx answer instead of following it (webhook
	// deliveries). Otherwise at most 5 redirects are followed, each target
	// checked like a saved URL and again at dial time.
	NoRedirects bool
}

// Client returns an HTTP client whose every connection goes through the
// guard, bounded by timeout. Redirects are followed (at most 5), each
// target checked again.
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return g.ClientWith(Options{Timeout: timeout})
}

// ClientWith is Client with options.
func (g *Guard) ClientWith(o Options) *http.Client {
	c := &http.Client{Transport: g.Transport(), Timeout: o.Timeout}
	if o.NoRedirects {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	} else {
		c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if g.CheckURL(req.URL.String()) != nil {
				return ErrRefused
			}
			return nil
		}
	}
	return c
}

// Transport returns an http.RoundTripper whose connections go through the
// guard, for libraries that take a transport. No proxy is taken from the
// environment (it would bypass the guard). A refused request's error is
// ErrRefused alone: it does not carry the dialled address.
func (g *Guard) Transport() http.RoundTripper {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return refusalRT{tr}
}

// refusalRT strips everything but ErrRefused from a refused request's
// error, so the dialled address never reaches the caller.
type refusalRT struct{ next *http.Transport }

func (r refusalRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil && IsRefused(err) {
		return nil, ErrRefused
	}
	return resp, err
}

// DialContext dials addr through the guard: an allowlisted host name is
// dialled as is; anything else is checked on the address actually dialled.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	allow := g.Allow()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, ErrRefused
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if _, ipErr := netip.ParseAddr(h); ipErr != nil {
		if allow.hosts[h] {
			return plainDialer.DialContext(ctx, network, addr)
		}
		if encodedIPv4(h) || h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return nil, ErrRefused
		}
	}
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return CheckAddr(network, address, allow)
		},
	}
	conn, err := d.DialContext(ctx, network, addr)
	var dnsErr *net.DNSError
	if err != nil && (IsRefused(err) || errors.As(err, &dnsErr)) {
		// A name that does not resolve answers like one that resolves
		// inside: otherwise the difference would tell a team which
		// internal names exist (and the error would name the resolver).
		return nil, ErrRefused
	}
	if err != nil {
		// Whether the port refused, timed out or was unreachable stays
		// with the server: the caller learns only that it could not
		// connect.
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, ErrUnreachable
	}
	return conn, nil
}

// ErrUnreachable is a connection the guard allowed that could not be made;
// it does not say why (refused, timed out, no route), which would tell a
// team the state of a port.
var ErrUnreachable = errors.New("could not connect")

var plainDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

// Exempt returns a client for destinations only an admin can set (tool
// servers, A2A peers, the LLM provider): no guard, no proxy from the
// environment. Integrations whose address a team can set must use
// Guard.Client instead; serve --check lists what is exempt.
func Exempt(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:           plainDialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}
