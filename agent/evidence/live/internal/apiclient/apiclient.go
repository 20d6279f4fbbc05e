// Package apiclient is the small JSON-over-HTTP client of the trace
// backends (Jaeger, Tempo): GET with the configured headers, bounded
// answers, typed evidence errors, and resolved header secrets scrubbed from
// every error (HeaderSecrets and Redact, which the Prometheus client uses
// too). The *http.Client comes from the caller (the outbound guard).
// It also holds what the backends' clients share beyond HTTP: their
// Config, the scan bound, trace id checks and the per-trace span scan.
package apiclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// MaxBody bounds one answer.
const MaxBody = 256 << 20

// DefaultTimeout bounds one request when none is set.
const DefaultTimeout = 30 * time.Second

// Client talks to one API base URL.
type Client struct {
	Source  string // "jaeger", "tempo": names the integration in errors
	base    *url.URL
	http    *http.Client
	headers map[string]string
	secrets []string
	timeout time.Duration
}

// New checks rawURL (an http(s) URL; a path prefix is kept) and returns a
// client. hc is required: it is the guarded client of the outbound policy.
func New(source, rawURL string, hc *http.Client, headers map[string]string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, evidence.Errorf(source, evidence.CodeInvalid, "tools.%s.url %q is not an http(s) URL", source, rawURL)
	}
	if u.User != nil {
		return nil, evidence.Errorf(source, evidence.CodeInvalid, "tools.%s.url must not hold credentials; use headers with secret references", source)
	}
	if hc == nil {
		return nil, evidence.Errorf(source, evidence.CodeInvalid, "no HTTP client for %s", source)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{Source: source, base: u, http: hc, headers: headers, secrets: HeaderSecrets(headers), timeout: timeout}, nil
}

// StatusError is a non-2xx answer.
type StatusError struct {
	Status int
	Body   string // the start of the body
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// Get fetches path (joined to the base URL's path) with query q and returns
// the body of a 2xx answer. Other statuses are a *StatusError wrapped in an
// evidence error: 400 invalid, 404 not_found, anything else unavailable.
func (c *Client) Get(ctx context.Context, path string, q url.Values) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, c.errorf(evidence.CodeInvalid, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.errorf(evidence.CodeUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, c.errorf(evidence.CodeUnavailable, fmt.Errorf("reading the answer: %w", err))
	}
	if len(body) > MaxBody {
		return nil, c.errorf(evidence.CodeUnavailable, fmt.Errorf("answer larger than %d bytes; narrow the query", MaxBody))
	}
	if resp.StatusCode/100 != 2 {
		// Only a message the API itself wrote in JSON is quoted: the bytes of
		// whatever else answered never reach the caller (they could tell a
		// team what listens at an address).
		se := &StatusError{Status: resp.StatusCode, Body: jsonMessage(body)}
		code := evidence.CodeUnavailable
		switch resp.StatusCode {
		case http.StatusBadRequest:
			code = evidence.CodeInvalid
		case http.StatusNotFound:
			code = evidence.CodeNotFound
		}
		return nil, c.errorf(code, se)
	}
	if !json.Valid(body) {
		return nil, c.errorf(evidence.CodeUnavailable, errors.New("the answer is not JSON"))
	}
	return body, nil
}

// jsonMessage returns the error message of a JSON error body ("error",
// "message", "msg", or the first of "errors"), at most 300 bytes, or "".
func jsonMessage(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	str := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			for _, k := range []string{"message", "msg", "error"} {
				if json.Unmarshal(obj[k], &s) == nil && s != "" {
					return s
				}
			}
		}
		return ""
	}
	msg := ""
	for _, k := range []string{"error", "message", "msg"} {
		if msg = str(m[k]); msg != "" {
			break
		}
	}
	if msg == "" {
		var list []json.RawMessage
		if json.Unmarshal(m["errors"], &list) == nil && len(list) > 0 {
			msg = str(list[0])
		}
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

// Status returns the HTTP status of a Get error, or 0.
func Status(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status
	}
	return 0
}

func (c *Client) errorf(code string, err error) error {
	msg := Redact(err.Error(), c.secrets)
	var se *StatusError
	if errors.As(err, &se) {
		cp := *se
		if i := strings.Index(msg, ": "); i >= 0 {
			cp.Body = msg[i+2:]
		}
		return &evidence.Error{Source: c.Source, Code: code, Err: &cp}
	}
	return &evidence.Error{Source: c.Source, Code: code, Err: errors.New(msg)}
}

// HeaderSecrets returns the header values (and their credential part after
// a scheme such as "Bearer ") worth scrubbing from errors, longest first:
// a server or proxy that quotes the request's Authorization header in an
// error must not carry the resolved secret into tool results, events, the
// store or a model prompt. Every HTTP integration with resolved headers
// uses it (Prometheus too).
func HeaderSecrets(h map[string]string) []string {
	var out []string
	for _, v := range h {
		for _, s := range []string{v, v[strings.IndexByte(v, ' ')+1:]} {
			if s = strings.TrimSpace(s); len(s) >= 6 && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return out
}

// Redact replaces every secret (HeaderSecrets) in s with [REDACTED].
func Redact(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "[REDACTED]")
	}
	return s
}
