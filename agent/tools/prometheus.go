package tools

import (
	"context"
	"encoding/json"

	"github.com/rootcause/rootcause/agent/evidence"
)

func prometheusTools() []Tool {
	agents := []string{AgentMetrics, AgentInvestigation}
	return []Tool{
		{Spec: Spec{Name: "prometheus_query", Integration: IntegrationPrometheus, ReadOnly: true, Agents: agents,
			Description: "Evaluate a PromQL expression at one instant (default now) and return each resulting series' labels and value, " +
				"e.g. sum by (service) (rate(http_requests_total{code=~\"5..\"}[5m])). At most 100 series. All of PromQL, on a live " +
				"Prometheus and on incident bundles alike (bundles run Prometheus's own engine over their samples): functions, " +
				"aggregations, and/or/unless, group_left/group_right, subqueries, offset and @. A metric the source lacks answers " +
				"no series.",
			Parameters: objectSchema(`{
				"query": {"type": "string", "description": "PromQL expression"},
				"time": {"type": "string", "description": "RFC 3339 time or duration back from now (e.g. 15m); default now"}}`, "query")},
			Run: runPromQuery},
		{Spec: Spec{Name: "prometheus_query_range", Integration: IntegrationPrometheus, ReadOnly: true, Agents: agents,
			Description: "Evaluate a PromQL expression over a window (default the last hour) at a step (default automatic, about " +
				"240 points) and return the series of points: the shape of a metric around the incident. At most 100 series and " +
				"2000 points per series.",
			Parameters: objectSchema(`{
				"query": {"type": "string", "description": "PromQL expression"},
				"start": {"type": "string", "description": "RFC 3339 time or duration back from now; default 1h"},
				"end": {"type": "string", "description": "RFC 3339 time or duration back from now; default now"},
				"step": {"type": "string", "description": "resolution, e.g. 30s, 1m, 5m (or seconds); default automatic"}}`, "query")},
			Run: runPromQueryRange},
		{Spec: Spec{Name: "list_metrics", Integration: IntegrationPrometheus, ReadOnly: true, Agents: agents,
			Description: "List the label sets of series that have samples in a window (default the last hour), filtered by a series " +
				"selector such as http_requests_total or {job=\"checkout\"}; omitted: every series. Use it to discover metric and " +
				"label names before querying. At most 500.",
			Parameters: objectSchema(`{
				"match": {"type": "string", "description": "series selector, e.g. {__name__=~\"http_.*\", service=\"checkout\"}"},
				"start": {"type": "string", "description": "RFC 3339 time or duration back from now; default 1h"},
				"end": {"type": "string", "description": "RFC 3339 time or duration back from now; default now"}}`)},
			Run: runListMetrics},
	}
}

func promSource(env *Env) (evidence.Metrics, error) {
	if env == nil || env.Sources == nil || env.Sources.Metrics == nil {
		return nil, notConfigured(IntegrationPrometheus)
	}
	return env.Sources.Metrics, nil
}

func runPromQuery(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query string `json:"query"`
		Time  string `json:"time"`
	}
	const tool = "prometheus_query"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	if err := requireArg(tool, "query", a.Query); err != nil {
		return nil, err
	}
	at, err := ParseTime(env, tool, "time", a.Time, clock(env))
	if err != nil {
		return nil, err
	}
	m, err := promSource(env)
	if err != nil {
		return nil, err
	}
	ss, err := m.Query(ctx, a.Query, at)
	if err != nil {
		return nil, err
	}
	return boundSeries(ss), nil
}

func runPromQueryRange(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query string `json:"query"`
		Start string `json:"start"`
		End   string `json:"end"`
		Step  string `json:"step"`
	}
	const tool = "prometheus_query_range"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	if err := requireArg(tool, "query", a.Query); err != nil {
		return nil, err
	}
	start, end, err := ParseWindow(env, tool, "start", a.Start, "end", a.End)
	if err != nil {
		return nil, err
	}
	step, err := ParseStep(tool, "step", a.Step, start, end)
	if err != nil {
		return nil, err
	}
	m, err := promSource(env)
	if err != nil {
		return nil, err
	}
	ss, err := m.QueryRange(ctx, a.Query, start, end, step)
	if err != nil {
		return nil, err
	}
	return boundSeries(ss), nil
}

func runListMetrics(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Match string `json:"match"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	const tool = "list_metrics"
	if err := decodeArgs(tool, raw, &a); err != nil {
		return nil, err
	}
	start, end, err := ParseWindow(env, tool, "start", a.Start, "end", a.End)
	if err != nil {
		return nil, err
	}
	m, err := promSource(env)
	if err != nil {
		return nil, err
	}
	ls, err := m.SeriesSet(ctx, a.Match, start, end)
	if err != nil {
		return nil, err
	}
	ls, _ = capList(ls, MaxLabelSets)
	if ls == nil {
		ls = []evidence.Labels{}
	}
	return ls, nil
}

// boundSeries caps the number of series and of points per series (the
// latest points are kept).
func boundSeries(ss []evidence.Series) []evidence.Series {
	ss, _ = capList(ss, MaxSeries)
	for i := range ss {
		if n := len(ss[i].Points); n > MaxRangePoints {
			ss[i].Points = ss[i].Points[n-MaxRangePoints:]
		}
	}
	if ss == nil {
		ss = []evidence.Series{}
	}
	return ss
}
