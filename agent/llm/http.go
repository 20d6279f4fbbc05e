package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds a model response body.
const maxResponseBytes = 8 << 20

// maxRetryWait bounds a single wait between attempts, even when the server
// asks for longer with Retry-After.
const maxRetryWait = 60 * time.Second

// transport posts JSON to a model API with retries. It is shared by both
// protocols.
type transport struct {
	provider   string
	client     *http.Client
	timeout    time.Duration // per attempt
	maxRetries int
	apiKey     string // only to scrub it from error messages
	// backoffBase is the first wait before a retry without Retry-After; it
	// doubles on every retry, with full jitter.
	backoffBase time.Duration
	now         func() time.Time
}

func newTransport(provider string, cfg Config) *transport {
	return &transport{
		provider:    provider,
		client:      &http.Client{Transport: http.DefaultTransport},
		timeout:     cfg.Timeout,
		maxRetries:  max(cfg.MaxRetries, 0),
		apiKey:      cfg.APIKey,
		backoffBase: 500 * time.Millisecond,
		now:         time.Now,
	}
}

// post sends body to url with headers and returns the 2xx response body.
// Errors are *ProviderError, or ctx.Err() when ctx ended.
func (t *transport) post(ctx context.Context, url string, headers http.Header, body []byte) ([]byte, error) {
	var last *ProviderError
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, retryAfter, perr := t.once(ctx, url, headers, body)
		if perr == nil {
			return data, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		last = perr
		if !retryable(perr) || attempt >= t.maxRetries {
			return nil, last
		}
		wait := retryAfter
		if wait <= 0 {
			// Full jitter over an exponentially growing window.
			window := t.backoffBase << attempt
			wait = window/2 + rand.N(window/2+1)
		}
		wait = min(wait, maxRetryWait)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// retryable: 429, 5xx and connection failures are; a timeout is not (the
// model is too slow for the timeout, and would be again).
func retryable(e *ProviderError) bool {
	switch e.Code {
	case CodeRateLimited, CodeServerError:
		return true
	case CodeUnreachable:
		return !e.timedOut
	}
	return false
}

func (t *transport) once(ctx context.Context, url string, headers http.Header, body []byte) ([]byte, time.Duration, *ProviderError) {
	actx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &ProviderError{Provider: t.provider, Code: CodeBadRequest, Message: t.scrub(err.Error())}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := t.client.Do(req)
	if err != nil {
		e := &ProviderError{Provider: t.provider, Code: CodeUnreachable, Message: t.scrub(err.Error())}
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			e.Message, e.timedOut = fmt.Sprintf("no response within %s", t.timeout), true
		}
		return nil, 0, e
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		e := &ProviderError{Provider: t.provider, Code: CodeUnreachable, Message: "reading the response: " + t.scrub(err.Error())}
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			e.Message, e.timedOut = fmt.Sprintf("no response within %s", t.timeout), true
		}
		return nil, 0, e
	}
	if len(data) > maxResponseBytes {
		return nil, 0, &ProviderError{Provider: t.provider, Status: resp.StatusCode, Code: CodeBadResponse,
			Message: fmt.Sprintf("response larger than %d bytes", maxResponseBytes)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, 0, nil
	}
	e := &ProviderError{Provider: t.provider, Status: resp.StatusCode, Message: t.scrub(errorMessage(data))}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.Code = CodeRateLimited
	case resp.StatusCode >= 500:
		e.Code = CodeServerError
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		e.Code = CodeAuth
	default:
		e.Code = CodeBadRequest
	}
	return nil, parseRetryAfter(resp.Header.Get("Retry-After"), t.now()), e
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// errorMessage extracts the message of an OpenAI ({"error": {"message"}}),
// Anthropic ({"type": "error", "error": {"message"}}) or plain error body.
func errorMessage(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && len(v.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			if obj.Type != "" {
				return cut(obj.Type+": "+obj.Message, 500)
			}
			return cut(obj.Message, 500)
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return cut(s, 500)
		}
	}
	return cut(strings.TrimSpace(string(body)), 500)
}

// scrub removes the API key from s.
func (t *transport) scrub(s string) string {
	if t.apiKey != "" {
		s = strings.ReplaceAll(s, t.apiKey, "[redacted]")
	}
	return s
}

// cut shortens s to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func badResponse(provider string, format string, args ...any) *ProviderError {
	return &ProviderError{Provider: provider, Code: CodeBadResponse, Message: fmt.Sprintf(format, args...)}
}
