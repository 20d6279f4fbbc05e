// Package jaeger is the live Jaeger backend of evidence.Traces, over the
// query service's api/v3 HTTP API (Jaeger v1.76 / v2): GET /api/v3/services,
// /api/v3/traces (search) and /api/v3/traces/{id}, whose answers are
// OTLP/JSON. Traces are read raw (no clock-skew adjustment), so spans are
// what the services reported.
package jaeger

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/live/internal/apiclient"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// DefaultScanTraces is how many traces per service ScanSpans reads when
// Config.ScanTraces is 0.
const DefaultScanTraces = 500

// Config locates a Jaeger query service: URL is its base URL
// (http://jaeger-query:16686), with the base path if the UI is served
// under one.
type Config = apiclient.Config

// Client implements evidence.Traces against one Jaeger.
type Client struct {
	b apiclient.Backend
}

var _ evidence.Traces = (*Client)(nil)

// New returns a client; it does not contact the server.
func New(cfg Config) (*Client, error) {
	b, err := apiclient.NewBackend("jaeger", cfg, DefaultScanTraces)
	if err != nil {
		return nil, err
	}
	return &Client{b}, nil
}

// allServices lists every service Jaeger knows, sorted.
func (c *Client) allServices(ctx context.Context) ([]string, error) {
	body, err := c.b.API.Get(ctx, "/api/v3/services", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Services []string `json:"services"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, evidence.Errorf("jaeger", evidence.CodeUnavailable, "services: %v", err)
	}
	slices.Sort(r.Services)
	return slices.Compact(r.Services), nil
}

// Services lists the services with a span starting in [start, end): Jaeger
// lists services without a window, so each is checked with a one-trace
// search.
func (c *Client) Services(ctx context.Context, start, end time.Time) ([]string, error) {
	all, err := c.allServices(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, s := range all {
		found := false
		err := c.search(ctx, evidence.TraceQuery{Service: s, Start: start, End: end}, 1, func(spans []evidence.Span) error {
			found = true
			return evidence.ErrStop
		})
		if err != nil && !errors.Is(err, evidence.ErrStop) {
			return nil, err
		}
		if found {
			out = append(out, s)
		}
	}
	return out, nil
}

// search runs one trace search and calls fn with each trace's spans.
func (c *Client) search(ctx context.Context, q evidence.TraceQuery, depth int, fn func([]evidence.Span) error) error {
	start, end := q.Start, q.End
	if start.IsZero() {
		start = time.Unix(0, 0)
	}
	if end.IsZero() {
		end = time.Now().Add(24 * time.Hour)
	}
	v := url.Values{}
	v.Set("query.start_time_min", start.UTC().Format(time.RFC3339Nano))
	// Jaeger's bound is inclusive; ours is not.
	v.Set("query.start_time_max", end.Add(-time.Nanosecond).UTC().Format(time.RFC3339Nano))
	v.Set("query.num_traces", strconv.Itoa(depth))
	v.Set("query.raw_traces", "true")
	if q.Service != "" {
		v.Set("query.service_name", q.Service)
	}
	if q.Operation != "" {
		v.Set("query.operation_name", q.Operation)
	}
	if q.MinDuration > 0 {
		v.Set("query.duration_min", q.MinDuration.String())
	}
	body, err := c.b.API.Get(ctx, "/api/v3/traces", v)
	if evidence.CodeOf(err) == evidence.CodeNotFound {
		return nil // "No traces found"
	}
	if err != nil {
		return err
	}
	traces, err := decode(body)
	if err != nil {
		return err
	}
	for _, spans := range traces {
		if err := fn(spans); err != nil {
			return err
		}
	}
	return nil
}

// decode splits an api/v3 answer into traces, each in start order, the
// traces in order of first appearance.
func decode(body []byte) ([][]evidence.Span, error) {
	inner, err := otlpjson.Unwrap(body)
	if err != nil {
		return nil, evidence.Errorf("jaeger", evidence.CodeUnavailable, "answer: %v", err)
	}
	idx := map[string]int{}
	var out [][]evidence.Span
	err = otlpjson.Decode(inner, func(s *evidence.Span) error {
		i, ok := idx[s.TraceID]
		if !ok {
			i = len(out)
			idx[s.TraceID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], *s)
		return nil
	})
	if err != nil {
		return nil, evidence.Errorf("jaeger", evidence.CodeUnavailable, "answer: %v", err)
	}
	for i := range out {
		evidence.SortSpans(out[i])
	}
	return out, nil
}

// FindTraces implements evidence.Traces. Jaeger's search has no error
// filter, and bounds the matching span's start rather than the trace's, so
// both are checked here on the traces it returns.
func (c *Client) FindTraces(ctx context.Context, q evidence.TraceQuery) ([]evidence.TraceSummary, error) {
	if err := q.Check("jaeger"); err != nil {
		return nil, err
	}
	// Jaeger returns up to "search depth" traces in its storage's order
	// (the memory store: most recently received), so ask for more than
	// the limit and keep the newest.
	depth := min(evidence.MaxTraceLimit, max(4*q.Limit, 100))
	if q.ErrorOnly {
		depth = evidence.MaxTraceLimit
	}
	var out []evidence.TraceSummary
	collect := func(spans []evidence.Span) error {
		sum := evidence.Summarize(spans)
		if !apiclient.InWindow(sum.Start, q.Start, q.End) || !slices.ContainsFunc(spans, func(s evidence.Span) bool { return q.Matches(&s) }) {
			return nil
		}
		out = append(out, sum)
		return nil
	}
	err := c.search(ctx, q, depth, collect)
	if err != nil && depth > q.Limit && strings.Contains(err.Error(), "search depth") {
		// A memory store smaller than depth refuses it.
		out = nil
		err = c.search(ctx, q, q.Limit, collect)
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []evidence.TraceSummary{}
	}
	sortNewest(out)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func sortNewest(s []evidence.TraceSummary) {
	slices.SortFunc(s, func(a, b evidence.TraceSummary) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return strings.Compare(a.TraceID, b.TraceID)
	})
}

// Trace implements evidence.Traces.
func (c *Client) Trace(ctx context.Context, traceID string) ([]evidence.Span, error) {
	id, err := c.b.TraceID(traceID)
	if err != nil {
		return nil, err
	}
	body, err := c.b.API.Get(ctx, "/api/v3/traces/"+id, url.Values{"raw_traces": {"true"}})
	if evidence.CodeOf(err) == evidence.CodeNotFound {
		return nil, evidence.Errorf("jaeger", evidence.CodeNotFound, "no trace %s in Jaeger", id)
	}
	if err != nil {
		return nil, err
	}
	traces, err := decode(body)
	if err != nil {
		return nil, err
	}
	for _, t := range traces {
		if len(t) > 0 && t[0].TraceID == id {
			return t, nil
		}
	}
	return nil, evidence.Errorf("jaeger", evidence.CodeNotFound, "no trace %s in Jaeger", id)
}

// ScanSpans implements evidence.Traces: for each service, the newest
// ScanTraces traces with a span starting in the window; each trace once.
func (c *Client) ScanSpans(ctx context.Context, start, end time.Time, fn func(*evidence.Span) error) error {
	svcs, err := c.allServices(ctx)
	if err != nil {
		return err
	}
	scan := apiclient.Scan{Start: start, End: end, Fn: fn}
	for _, svc := range svcs {
		err := c.search(ctx, evidence.TraceQuery{Service: svc, Start: start, End: end}, c.b.ScanTraces, func(spans []evidence.Span) error {
			if len(spans) == 0 || scan.Seen(spans[0].TraceID) {
				return nil
			}
			return scan.Spans(spans)
		})
		if err != nil {
			return apiclient.Done(err)
		}
	}
	return nil
}
