package evidence

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Span kinds, as OTLP numbers them.
const (
	SpanKindUnspecified = 0
	SpanKindInternal    = 1
	SpanKindServer      = 2
	SpanKindClient      = 3
	SpanKindProducer    = 4
	SpanKindConsumer    = 5
)

// Span is one span of a distributed trace, flattened from OTLP (bundles:
// traces/*.jsonl, contract 6.1) or from a trace backend's query API (Jaeger,
// Tempo). Service comes from the resource's service.name; Pod, Namespace and
// Node from the k8s.* resource attributes when present. Error is true when
// the span's status code is ERROR (or, for backends without OTLP status, the
// backend's error tag); StatusMessage carries the status message.
type Span struct {
	TraceID       string            `json:"trace_id"`
	SpanID        string            `json:"span_id"`
	ParentSpanID  string            `json:"parent_span_id,omitempty"`
	Name          string            `json:"name"`
	Service       string            `json:"service"`
	Pod           string            `json:"pod,omitempty"`
	Namespace     string            `json:"namespace,omitempty"`
	Node          string            `json:"node,omitempty"`
	Kind          int               `json:"kind"`
	Start         time.Time         `json:"start"`
	End           time.Time         `json:"end"`
	Error         bool              `json:"error,omitempty"`
	StatusMessage string            `json:"status_message,omitempty"`
	Attributes    map[string]string `json:"attributes,omitempty"`
}

// Duration is End − Start.
func (s *Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// TraceQuery selects traces. Zero fields do not filter. A trace matches when
// one of its spans matches every set field; Start/End bound the trace's
// start time.
type TraceQuery struct {
	Service     string
	Operation   string
	Start       time.Time
	End         time.Time
	MinDuration time.Duration
	ErrorOnly   bool
	Limit       int // traces; 0 means a default (20)
}

// TraceSummary describes one trace found by FindTraces.
type TraceSummary struct {
	TraceID   string        `json:"trace_id"`
	Root      string        `json:"root"` // "service: operation" of the root span
	Start     time.Time     `json:"start"`
	Duration  time.Duration `json:"duration_ns"`
	Spans     int           `json:"spans"`
	Errors    int           `json:"errors"`
	Services  []string      `json:"services"`
	Truncated bool          `json:"truncated,omitempty"`
}

// Traces reads distributed traces.
type Traces interface {
	// Services lists the services that reported spans between start and end.
	Services(ctx context.Context, start, end time.Time) ([]string, error)
	// FindTraces returns matching traces, newest first, at most q.Limit.
	FindTraces(ctx context.Context, q TraceQuery) ([]TraceSummary, error)
	// Trace returns every span of one trace, in start order. An unknown id
	// is an Error with code CodeNotFound.
	Trace(ctx context.Context, traceID string) ([]Span, error)
	// ScanSpans streams every span whose start lies in [start, end) to fn,
	// which may stop the scan by returning ErrStop. Order is unspecified;
	// memory stays bounded whatever the number of spans. Localization and
	// the service graph are built from this.
	ScanSpans(ctx context.Context, start, end time.Time, fn func(*Span) error) error
}

// Trace query limits: the default when TraceQuery.Limit is 0, and the most
// any backend returns.
const (
	DefaultTraceLimit = 20
	MaxTraceLimit     = 1000
)

// Check validates q and applies the default and maximum limit; source names
// the backend in errors.
func (q *TraceQuery) Check(source string) error {
	switch {
	case q.Limit < 0:
		return Errorf(source, CodeInvalid, "limit must not be negative")
	case q.MinDuration < 0:
		return Errorf(source, CodeInvalid, "min_duration must not be negative")
	case !q.Start.IsZero() && !q.End.IsZero() && !q.Start.Before(q.End):
		return Errorf(source, CodeInvalid, "start %s is not before end %s", q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
	}
	if q.Limit == 0 {
		q.Limit = DefaultTraceLimit
	}
	q.Limit = min(q.Limit, MaxTraceLimit)
	return nil
}

// Matches reports whether span s satisfies every set field of q except the
// time bounds (which bound the trace's start).
func (q *TraceQuery) Matches(s *Span) bool {
	return (q.Service == "" || s.Service == q.Service) &&
		(q.Operation == "" || s.Name == q.Operation) &&
		s.Duration() >= q.MinDuration && (!q.ErrorOnly || s.Error)
}

// SortSpans orders spans by start, then span id.
func SortSpans(spans []Span) {
	slices.SortFunc(spans, func(a, b Span) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.SpanID, b.SpanID)
	})
}

// Summarize describes one whole trace (spans of one trace id). The root is
// the earliest span without a parent; a trace without one is Truncated and
// named by its earliest span.
func Summarize(spans []Span) TraceSummary {
	if len(spans) == 0 {
		return TraceSummary{}
	}
	sum := TraceSummary{TraceID: spans[0].TraceID, Start: spans[0].Start, Spans: len(spans)}
	end := spans[0].End
	var root, first *Span
	for i := range spans {
		s := &spans[i]
		if s.Start.Before(sum.Start) {
			sum.Start = s.Start
		}
		if s.End.After(end) {
			end = s.End
		}
		if s.Error {
			sum.Errors++
		}
		if s.Service != "" && !slices.Contains(sum.Services, s.Service) {
			sum.Services = append(sum.Services, s.Service)
		}
		if s.ParentSpanID == "" && (root == nil || s.Start.Before(root.Start)) {
			root = s
		}
		if first == nil || s.Start.Before(first.Start) {
			first = s
		}
	}
	slices.Sort(sum.Services)
	if root == nil {
		sum.Truncated = true
		root = first
	}
	sum.Root = root.Service + ": " + root.Name
	sum.Duration = end.Sub(sum.Start)
	return sum
}
