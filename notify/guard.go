package notify

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

// The SSRF guard. Webhook URLs are chosen by teams, so rootcause must not
// let them reach the server's own network: loopback, private (RFC 1918),
// link-local (169.254.0.0/16, cloud metadata at 169.254.169.254), CGNAT
// (100.64.0.0/10), unspecified, multicast, reserved and documentation
// ranges, and every IPv6 address outside global unicast (::1, fe80::/10,
// fc00::/7, IPv4-mapped and NAT64 forms) are refused. The check runs at
// connect time, on the address actually dialled (net.Dialer.Control), so
// DNS answers cannot smuggle an internal address past a check made when the
// URL was saved. The server setting webhook.allow lists CIDRs or host names
// that are exempt, for air-gapped installs whose receivers are internal.

// ErrRefused wraps every refusal of the guard.
var ErrRefused = errors.New("destination refused by the SSRF guard")

// Allowlist holds the exemptions of the server setting webhook.allow.
type Allowlist struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// ParseAllowlist parses webhook.allow entries: CIDRs ("10.20.0.0/16"),
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
				return Allowlist{}, fmt.Errorf("webhook.allow: %q: zoned addresses are not supported", s)
			}
			ip = ip.Unmap()
			a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		h := strings.TrimSuffix(strings.ToLower(s), ".")
		if !validHostName(h) {
			return Allowlist{}, fmt.Errorf("webhook.allow: %q is neither a CIDR, an IP address nor a host name", s)
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

// allowsAddr reports whether ip is inside an allowlisted prefix.
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

// CheckAddr is the connect-time check: network is tcp4 or tcp6 and address
// the resolved "ip:port" about to be dialled. Allowlisted prefixes pass;
// anything else goes through code.dny.dev/ssrf's deny lists. IPv4-mapped
// IPv6 addresses are judged as the IPv4 address they carry. It sends no
// traffic.
func CheckAddr(network, address string, allow Allowlist) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q: %v", ErrRefused, address, err)
	}
	ip := ap.Addr().Unmap()
	if allow.allowsAddr(ip) {
		return nil
	}
	if network != "tcp4" && network != "tcp6" && network != "tcp" {
		return fmt.Errorf("%w: network %s is not allowed", ErrRefused, network)
	}
	if err := guardian.SafeAddr(ip); err != nil {
		return fmt.Errorf("%w: %s is an internal address (allow it with the server setting webhook.allow)", ErrRefused, ip)
	}
	return nil
}

// maxURLLength bounds a webhook URL.
const maxURLLength = 2048

// ValidateURL checks a webhook URL when it is saved and again before every
// delivery: an absolute http or https URL with a host and no user info;
// HTTPS unless the host is allowlisted; a host that is an IP literal must
// pass the guard, and "localhost" names are refused unless allowlisted. Host
// names are not resolved here: the connect-time check covers them.
func ValidateURL(raw string, allow Allowlist) error {
	if len(raw) > maxURLLength {
		return fmt.Errorf("the URL is longer than %d characters", maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("the URL must use https (or http for a host in webhook.allow)")
	}
	if u.User != nil {
		return fmt.Errorf("the URL must not contain user info; receivers verify the signature instead")
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("the URL has no host")
	}
	allowed := allow.AllowsHost(host)
	if u.Scheme == "http" && !allowed {
		return fmt.Errorf("%w: the URL must use https unless its host is in the server setting webhook.allow", ErrRefused)
	}
	if allowed {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("%w: zoned addresses are not allowed", ErrRefused)
		}
		port := u.Port()
		if port == "" {
			port = "443"
		}
		return CheckAddr("tcp", net.JoinHostPort(ip.String(), port), allow)
	}
	lh := strings.TrimSuffix(strings.ToLower(host), ".")
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") {
		return fmt.Errorf("%w: %s is the server itself (allow it with the server setting webhook.allow)", ErrRefused, host)
	}
	return nil
}

// NewClient returns the HTTP client for webhook deliveries: the guard runs
// at connect time (hosts named in the allowlist skip it), no proxy is taken
// from the environment, redirects are not followed (the 3xx answer is
// returned), and every request is bounded by timeout.
func NewClient(allow Allowlist, timeout time.Duration) *http.Client {
	guarded := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return CheckAddr(network, address, allow)
		},
	}
	plain := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: nil, // never a proxy from the environment: it would bypass the guard
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if _, ipErr := netip.ParseAddr(host); ipErr != nil && allow.hosts[strings.TrimSuffix(strings.ToLower(host), ".")] {
				return plain.DialContext(ctx, network, addr) // an allowlisted host name
			}
			return guarded.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// IsRefused reports whether err is a refusal of the guard.
func IsRefused(err error) bool { return errors.Is(err, ErrRefused) }

// RedactURL returns u with its query string and user info replaced, for the
// delivery log (tokens sometimes travel in query strings).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "REDACTED"
	}
	u.Fragment = ""
	return u.String()
}
