package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
)

// MaxTraceSpans is the most spans get_trace returns; the rest are counted.
const MaxTraceSpans = 500

func traceTools() []Tool {
	return []Tool{
		{
			Spec: Spec{
				Name: "find_traces",
				Description: "Find distributed traces (Jaeger, Tempo, or a bundle's traces/) in a time window, newest first. A trace matches when one of its spans " +
					"matches every filter given (service, operation, min_duration, error). Returns per trace: id, root \"service: operation\", start, " +
					"duration, span and error counts and the services it crossed; read one with get_trace.",
				Parameters: evSchema(`{
					"service": {"type": "string", "description": "service name (resource service.name); empty: any"},
					"operation": {"type": "string", "description": "span name, e.g. GET /checkout or hipstershop.CartService/GetCart; empty: any"},
					"start": {"type": "string", "description": "window start: RFC 3339 time or a duration back from now such as 1h (default 1h)"},
					"end": {"type": "string", "description": "window end: RFC 3339 time or a duration back from now (default now)"},
					"min_duration": {"type": "string", "description": "only spans at least this long, e.g. 500ms or 2s"},
					"error": {"type": "boolean", "description": "only spans with error status"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "max traces (default 20)"}
				}`),
				Integration: IntegrationTraces, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runFindTraces,
		},
		{
			Spec: Spec{
				Name: "get_trace",
				Description: "Read every span of one distributed trace, in start order: service, pod, operation, kind, start, duration, " +
					"self time (duration minus its children's), parent, depth, error status and attributes. Find trace ids with find_traces.",
				Parameters: evSchema(`{
					"trace_id": {"type": "string", "description": "32 hex digits"}
				}`, "trace_id"),
				Integration: IntegrationTraces, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runGetTrace,
		},
		{
			Spec: Spec{
				Name: "service_graph",
				Description: "Build the service call graph from the traces of a window: per caller→callee edge the calls, calls per second, errors, " +
					"latency percentiles and the network/queueing gap (client span minus server span); per service its requests, errors, own errors " +
					"(not passed up from a callee), duration and self time (time not spent waiting on callees). With a baseline window it adds the " +
					"changes: self-time and latency ratios, gap change, error rates before and after. The deepest service whose own time or errors " +
					"changed is the usual suspect.",
				Parameters: evSchema(`{
					"start": {"type": "string", "description": "window start: RFC 3339 time or a duration back from now (default 15m)"},
					"end": {"type": "string", "description": "window end (default now)"},
					"baseline_start": {"type": "string", "description": "baseline window start (with baseline_end: compare against it)"},
					"baseline_end": {"type": "string", "description": "baseline window end (default: the window's start)"}
				}`),
				Integration: IntegrationTraces, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runServiceGraph,
		},
	}
}

func tracesSource(env *Env) (evidence.Traces, error) {
	if env == nil || env.Sources == nil || env.Sources.Traces == nil {
		return nil, &evidence.Error{Source: IntegrationTraces, Code: evidence.CodeNotConfigured,
			Err: errors.New("traces are not configured for this team (set tools.jaeger or tools.tempo)")}
	}
	return env.Sources.Traces, nil
}

func runFindTraces(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Service, Operation, Start, End string
		MinDuration                    string `json:"min_duration"`
		Error                          bool
		Limit                          int
	}
	if err := decodeArgs("find_traces", raw, &a); err != nil {
		return nil, err
	}
	tr, err := tracesSource(env)
	if err != nil {
		return nil, err
	}
	start, end, err := evWindow(env, a.Start, a.End)
	if err != nil {
		return nil, err
	}
	q := evidence.TraceQuery{
		Service: strings.TrimSpace(a.Service), Operation: a.Operation,
		Start: start, End: end, ErrorOnly: a.Error, Limit: evLimit(a.Limit, evidence.DefaultTraceLimit, evidence.MaxTraceLimit),
	}
	if a.MinDuration != "" {
		if q.MinDuration, err = evDuration(a.MinDuration); err != nil {
			return nil, evidence.Errorf("find_traces", evidence.CodeInvalid, "min_duration %q is not a duration such as 500ms or 2s", a.MinDuration)
		}
	}
	return tr.FindTraces(ctx, q)
}

// TraceView is one trace as get_trace shows it.
type TraceView struct {
	Summary evidence.TraceSummary `json:"summary"`
	Spans   []SpanView            `json:"spans"`
	// Omitted counts spans left out beyond MaxTraceSpans (the latest ones).
	Omitted int `json:"omitted,omitempty"`
}

// SpanView is a span with its place in the trace.
type SpanView struct {
	evidence.Span
	DurationMs float64 `json:"duration_ms"`
	SelfMs     float64 `json:"self_ms"`
	Depth      int     `json:"depth"`
}

func runGetTrace(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		TraceID string `json:"trace_id"`
	}
	if err := decodeArgs("get_trace", raw, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.TraceID) == "" {
		return nil, evidence.Errorf("get_trace", evidence.CodeInvalid, "trace_id is required")
	}
	tr, err := tracesSource(env)
	if err != nil {
		return nil, err
	}
	spans, err := tr.Trace(ctx, strings.TrimSpace(a.TraceID))
	if err != nil {
		return nil, err
	}
	return viewTrace(spans), nil
}

// viewTrace computes depth and self time of each span (spans in start order).
func viewTrace(spans []evidence.Span) *TraceView {
	v := &TraceView{Summary: evidence.Summarize(spans), Spans: make([]SpanView, 0, min(len(spans), MaxTraceSpans))}
	byID := make(map[string]int, len(spans))
	for i := range spans {
		byID[spans[i].SpanID] = i
	}
	kids := make(map[int][][2]int64, len(spans))
	for i := range spans {
		if p, ok := byID[spans[i].ParentSpanID]; ok && spans[i].ParentSpanID != "" {
			kids[p] = append(kids[p], [2]int64{spans[i].Start.UnixNano(), spans[i].End.UnixNano()})
		}
	}
	depth := func(i int) int {
		d := 0
		for seen := 0; seen < len(spans); seen++ {
			p, ok := byID[spans[i].ParentSpanID]
			if !ok || spans[i].ParentSpanID == "" {
				break
			}
			i, d = p, d+1
		}
		return d
	}
	for i := range spans {
		if i == MaxTraceSpans {
			v.Omitted = len(spans) - MaxTraceSpans
			break
		}
		s := spans[i]
		dur := s.End.Sub(s.Start)
		self := time.Duration(int64(dur) - tracegraph.Covered(kids[i], s.Start.UnixNano(), s.End.UnixNano()))
		v.Spans = append(v.Spans, SpanView{Span: s, DurationMs: ms(dur), SelfMs: ms(self), Depth: depth(i)})
	}
	return v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ServiceGraph is service_graph's answer: the graph of the window, and with
// a baseline the comparison (which holds both windows' figures).
type ServiceGraph struct {
	Graph *tracegraph.Graph `json:"graph,omitempty"`
	Delta *tracegraph.Delta `json:"delta,omitempty"`
}

func runServiceGraph(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Start, End    string
		BaselineStart string `json:"baseline_start"`
		BaselineEnd   string `json:"baseline_end"`
	}
	if err := decodeArgs("service_graph", raw, &a); err != nil {
		return nil, err
	}
	tr, err := tracesSource(env)
	if err != nil {
		return nil, err
	}
	start, end, err := evWindowDefault(env, a.Start, a.End, 15*time.Minute)
	if err != nil {
		return nil, err
	}
	cur := tracegraph.Window{Start: start, End: end}
	if a.BaselineStart == "" {
		if a.BaselineEnd != "" {
			return nil, evidence.Errorf("service_graph", evidence.CodeInvalid, "baseline_end needs baseline_start")
		}
		gs, err := tracegraph.Build(ctx, tr, cur)
		if err != nil {
			return nil, err
		}
		return &ServiceGraph{Graph: gs[0]}, nil
	}
	bs, err := evTime(env, a.BaselineStart)
	if err != nil {
		return nil, err
	}
	be := start
	if a.BaselineEnd != "" {
		if be, err = evTime(env, a.BaselineEnd); err != nil {
			return nil, err
		}
	}
	if !bs.Before(be) {
		return nil, evidence.Errorf("service_graph", evidence.CodeInvalid, "baseline_start %s is not before baseline_end %s", bs.Format(time.RFC3339), be.Format(time.RFC3339))
	}
	gs, err := tracegraph.Build(ctx, tr, tracegraph.Window{Start: bs, End: be}, cur)
	if err != nil {
		return nil, err
	}
	return &ServiceGraph{Delta: tracegraph.Diff(gs[0], gs[1])}, nil
}
