package apiclient

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// Config locates a trace backend's query API (Jaeger's query service,
// Tempo's query frontend).
type Config struct {
	// URL is the API's base URL (http://jaeger-query:16686,
	// http://tempo:3200), with the base path if served under one.
	URL string
	// Headers are sent with every request, values already resolved.
	Headers map[string]string
	Timeout time.Duration
	// HTTP is the client requests go through (the outbound guard's).
	HTTP *http.Client
	// ScanTraces bounds the traces per service that ScanSpans reads: the
	// query APIs have no "every span" call, so a scan is a search per
	// service, newest first. 0 is the backend's default.
	ScanTraces int
}

// Backend is what the trace backends' clients share: the API client and
// the scan bound.
type Backend struct {
	API        *Client
	ScanTraces int // at most evidence.MaxTraceLimit
}

// NewBackend checks cfg and returns the backend's shared part;
// defaultScan is its ScanTraces when cfg has none. It does not contact
// the server.
func NewBackend(source string, cfg Config, defaultScan int) (Backend, error) {
	api, err := New(source, cfg.URL, cfg.HTTP, cfg.Headers, cfg.Timeout)
	if err != nil {
		return Backend{}, err
	}
	n := cfg.ScanTraces
	if n <= 0 {
		n = defaultScan
	}
	return Backend{API: api, ScanTraces: min(n, evidence.MaxTraceLimit)}, nil
}

// TraceID returns a trace id as 32 lower-case hex digits, or an invalid
// error.
func (b Backend) TraceID(id string) (string, error) {
	out, ok := otlpjson.ID(strings.TrimSpace(id), 16)
	if !ok {
		return "", evidence.Errorf(b.API.Source, evidence.CodeInvalid, "trace id %q is not 32 hex digits", id)
	}
	return out, nil
}

// InWindow reports whether t is in [start, end); a zero bound is open.
func InWindow(t, start, end time.Time) bool {
	return (start.IsZero() || !t.Before(start)) && (end.IsZero() || t.Before(end))
}

// Scan is one ScanSpans of a trace backend: it passes the spans in its
// window of each trace once to Fn.
type Scan struct {
	Start, End time.Time
	Fn         func(*evidence.Span) error
	seen       map[string]bool
}

// Seen reports whether the trace was passed already, and marks it so.
func (s *Scan) Seen(traceID string) bool {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[traceID] {
		return true
	}
	s.seen[traceID] = true
	return false
}

// Spans passes a trace's spans in the window to Fn; evidence.ErrStop
// from Fn comes back as is, for Done.
func (s *Scan) Spans(spans []evidence.Span) error {
	for i := range spans {
		if !InWindow(spans[i].Start, s.Start, s.End) {
			continue
		}
		if err := s.Fn(&spans[i]); err != nil {
			return err
		}
	}
	return nil
}

// Done is the scan's result given its last error: stopping early by
// evidence.ErrStop is no error.
func Done(err error) error {
	if errors.Is(err, evidence.ErrStop) {
		return nil
	}
	return err
}
