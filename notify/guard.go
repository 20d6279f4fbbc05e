package notify

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"net/http"

	"github.com/rootcause/rootcause/outbound"
)

// Webhook URLs are chosen by teams, so they go through the outbound guard
// (package outbound): at save time (ValidateURL), before every delivery,
// and at connect time in the delivery client (NewClient). The server
// setting outbound.allow (alias webhook.allow) lists the exemptions.

// ErrRefused wraps every refusal of the guard.
var ErrRefused = outbound.ErrRefused

// Allowlist holds the exemptions of the server setting outbound.allow.
type Allowlist = outbound.Allowlist

// ParseAllowlist parses outbound.allow entries (see outbound.ParseAllowlist).
func ParseAllowlist(entries []string) (Allowlist, error) { return outbound.ParseAllowlist(entries) }

// MustAllowlist is ParseAllowlist for constant input; it panics on error.
func MustAllowlist(entries ...string) Allowlist { return outbound.MustAllowlist(entries...) }

// CheckAddr is the connect-time check of the outbound guard.
func CheckAddr(network, address string, allow Allowlist) error {
	return outbound.CheckAddr(network, address, allow)
}

// ValidateURL checks a webhook URL when it is saved and again before every
// delivery: the outbound guard's URL check, plus HTTPS unless the host is
// allowlisted.
func ValidateURL(raw string, allow Allowlist) error {
	if err := outbound.New(allow).CheckURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw)
	if u.Scheme == "http" && !allow.AllowsHost(u.Hostname()) {
		return fmt.Errorf("the URL must use https unless its host is in the server setting outbound.allow")
	}
	return nil
}

// NewClient returns the HTTP client for webhook deliveries: the outbound
// guard at connect time, no proxy from the environment, redirects not
// followed (the 3xx answer is returned), every request bounded by timeout.
func NewClient(allow Allowlist, timeout time.Duration) *http.Client {
	return outbound.New(allow).ClientWith(outbound.Options{Timeout: timeout, NoRedirects: true})
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
