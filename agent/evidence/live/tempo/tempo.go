// Package tempo is the live Grafana Tempo backend of evidence.Traces, over
// Tempo's HTTP API: GET /api/search (TraceQL), /api/traces/{id} (the trace
// as OTLP/JSON "batches") and /api/v2/search/tag/{tag}/values (falling back
// to the v1 tag-values route).
package tempo

import (
	"context"
	"encoding/json"
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
// Config.ScanTraces is 0: a scan fetches every trace it reads, one request
// each, so the default is lower than Jaeger's.
const DefaultScanTraces = 100

// Config locates a Tempo query frontend: URL is its base URL
// (http://tempo:3200), with a base path if behind a proxy. An api_key
// setting becomes the Authorization: Bearer header, an org_id the
// X-Scope-OrgID one.
type Config = apiclient.Config

// Client implements evidence.Traces against one Tempo.
type Client struct {
	b apiclient.Backend
}

var _ evidence.Traces = (*Client)(nil)

// New returns a client; it does not contact the server.
func New(cfg Config) (*Client, error) {
	b, err := apiclient.NewBackend("tempo", cfg, DefaultScanTraces)
	if err != nil {
		return nil, err
	}
	return &Client{b}, nil
}

// window adds Tempo's start and end (unix seconds, inclusive) to v.
func window(v url.Values, start, end time.Time) {
	if !start.IsZero() {
		v.Set("start", strconv.FormatInt(start.Unix(), 10))
	}
	if !end.IsZero() {
		e := end.Unix()
		if end.Nanosecond() > 0 {
			e++
		}
		v.Set("end", strconv.FormatInt(e, 10))
	}
}

// Services implements evidence.Traces.
func (c *Client) Services(ctx context.Context, start, end time.Time) ([]string, error) {
	v := url.Values{}
	window(v, start, end)
	body, err := c.b.API.Get(ctx, "/api/v2/search/tag/resource.service.name/values", v)
	var out []string
	if evidence.CodeOf(err) == evidence.CodeNotFound {
		// Tempo before 2.1: the v1 route, without scopes.
		if body, err = c.b.API.Get(ctx, "/api/search/tag/service.name/values", v); err != nil {
			return nil, err
		}
		var r struct {
			TagValues []string `json:"tagValues"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, evidence.Errorf("tempo", evidence.CodeUnavailable, "tag values: %v", err)
		}
		out = r.TagValues
	} else if err != nil {
		return nil, err
	} else {
		var r struct {
			TagValues []struct {
				Type  string `json:"type"`
				Value string `json:"value"`
			} `json:"tagValues"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, evidence.Errorf("tempo", evidence.CodeUnavailable, "tag values: %v", err)
		}
		for _, tv := range r.TagValues {
			out = append(out, tv.Value)
		}
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return slices.Compact(out), nil
}

// TraceQL renders q as a TraceQL span-set filter: one span must match every
// condition, exactly the TraceQuery semantics.
func TraceQL(q evidence.TraceQuery) string {
	var conds []string
	if q.Service != "" {
		conds = append(conds, "resource.service.name = "+quote(q.Service))
	}
	if q.Operation != "" {
		conds = append(conds, "name = "+quote(q.Operation))
	}
	if q.MinDuration > 0 {
		conds = append(conds, "duration >= "+q.MinDuration.String())
	}
	if q.ErrorOnly {
		conds = append(conds, "status = error")
	}
	if len(conds) == 0 {
		return "{}"
	}
	return "{ " + strings.Join(conds, " && ") + " }"
}

func quote(s string) string {
	b, _ := json.Marshal(s) // TraceQL strings escape like JSON's
	return string(b)
}

type searchHit struct {
	TraceID           string `json:"traceID"`
	RootServiceName   string `json:"rootServiceName"`
	RootTraceName     string `json:"rootTraceName"`
	StartTimeUnixNano string `json:"startTimeUnixNano"`
	DurationMs        int64  `json:"durationMs"`
}

func (h searchHit) start() time.Time {
	ns, _ := strconv.ParseInt(h.StartTimeUnixNano, 10, 64)
	return time.Unix(0, ns).UTC()
}

// search returns the ids of matching traces, newest first.
func (c *Client) search(ctx context.Context, q evidence.TraceQuery, limit int) ([]searchHit, error) {
	v := url.Values{}
	v.Set("q", TraceQL(q))
	v.Set("limit", strconv.Itoa(limit))
	window(v, q.Start, q.End)
	body, err := c.b.API.Get(ctx, "/api/search", v)
	if err != nil {
		return nil, err
	}
	var r struct {
		Traces []searchHit `json:"traces"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, evidence.Errorf("tempo", evidence.CodeUnavailable, "search: %v", err)
	}
	hits := r.Traces[:0]
	for _, h := range r.Traces {
		id, ok := otlpjson.ID(h.TraceID, 16)
		if !ok {
			// Tempo trims leading zeros of ids in search results.
			if len(h.TraceID) < 32 {
				id, ok = otlpjson.ID(strings.Repeat("0", 32-len(h.TraceID))+h.TraceID, 16)
			}
			if !ok {
				continue
			}
		}
		h.TraceID = id
		if apiclient.InWindow(h.start(), q.Start, q.End) {
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b searchHit) int {
		if c := b.start().Compare(a.start()); c != 0 {
			return c
		}
		return strings.Compare(a.TraceID, b.TraceID)
	})
	return hits, nil
}

// FindTraces implements evidence.Traces. Summaries are computed from the
// whole traces (one request each), so they match the other backends'.
func (c *Client) FindTraces(ctx context.Context, q evidence.TraceQuery) ([]evidence.TraceSummary, error) {
	if err := q.Check("tempo"); err != nil {
		return nil, err
	}
	hits, err := c.search(ctx, q, min(evidence.MaxTraceLimit, max(4*q.Limit, 100)))
	if err != nil {
		return nil, err
	}
	out := []evidence.TraceSummary{}
	for _, h := range hits {
		if len(out) == q.Limit {
			break
		}
		spans, err := c.Trace(ctx, h.TraceID)
		if evidence.CodeOf(err) == evidence.CodeNotFound {
			continue // expired between the search and the read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, evidence.Summarize(spans))
	}
	return out, nil
}

// Trace implements evidence.Traces.
func (c *Client) Trace(ctx context.Context, traceID string) ([]evidence.Span, error) {
	id, err := c.b.TraceID(traceID)
	if err != nil {
		return nil, err
	}
	body, err := c.b.API.Get(ctx, "/api/traces/"+id, nil)
	if evidence.CodeOf(err) == evidence.CodeNotFound {
		return nil, evidence.Errorf("tempo", evidence.CodeNotFound, "no trace %s in Tempo", id)
	}
	if err != nil {
		return nil, err
	}
	var out []evidence.Span
	err = otlpjson.Decode(body, func(s *evidence.Span) error {
		if s.TraceID == id {
			out = append(out, *s)
		}
		return nil
	})
	if err != nil {
		return nil, evidence.Errorf("tempo", evidence.CodeUnavailable, "trace %s: %v", id, err)
	}
	if len(out) == 0 {
		return nil, evidence.Errorf("tempo", evidence.CodeNotFound, "no trace %s in Tempo", id)
	}
	evidence.SortSpans(out)
	return out, nil
}

// ScanSpans implements evidence.Traces: for each service, the newest
// ScanTraces traces with a span in the window, each read whole once.
func (c *Client) ScanSpans(ctx context.Context, start, end time.Time, fn func(*evidence.Span) error) error {
	svcs, err := c.Services(ctx, start, end)
	if err != nil {
		return err
	}
	scan := apiclient.Scan{Start: start, End: end, Fn: fn}
	for _, svc := range svcs {
		hits, err := c.search(ctx, evidence.TraceQuery{Service: svc, Start: start, End: end}, c.b.ScanTraces)
		if err != nil {
			return err
		}
		for _, h := range hits {
			if scan.Seen(h.TraceID) {
				continue
			}
			spans, err := c.Trace(ctx, h.TraceID)
			if evidence.CodeOf(err) == evidence.CodeNotFound {
				continue
			}
			if err != nil {
				return err
			}
			if err := scan.Spans(spans); err != nil {
				return apiclient.Done(err)
			}
		}
	}
	return nil
}
