package tools

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Bounds of the analysis tools.
const (
	// MaxLogTemplates is the most templates get_log_signatures returns.
	MaxLogTemplates = 300
	// analysisPoints is the number of points a range query aims for.
	analysisPoints = 300
)

func analysisTools() []Tool {
	window := `"start": {"type": "string", "description": "incident window start: RFC 3339 time or a duration back from now such as 1h (default 1h)"},
		"end": {"type": "string", "description": "incident window end: RFC 3339 time or a duration back from now (default now)"}`
	return []Tool{
		{
			Spec: Spec{
				Name: "detect_anomalies",
				Description: "Find series of a PromQL query that left their normal band in the incident window: robust z-scores (median and MAD) of the " +
					"window against a baseline window (default: the same length just before). Counters (_total, _count, _sum) are turned into " +
					"per-second rates unless the query already applies rate/increase. Returns anomalies with start, peak, baseline median, score and direction.",
				Parameters: evSchema(`{
					"query": {"type": "string", "description": "PromQL expression"},
					`+window+`,
					"baseline_start": {"type": "string", "description": "baseline window start (default: start minus the window length)"},
					"baseline_end": {"type": "string", "description": "baseline window end (default: start)"}
				}`, "query"),
				Integration: IntegrationPrometheus, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runDetectAnomalies,
		},
		{
			Spec: Spec{
				Name: "find_change_points",
				Description: "Find when each series of a PromQL query shifted level (the split of least absolute deviation, scored in robust units), " +
					"ordered by time: the first change point usually marks the onset. Counters become rates as in detect_anomalies.",
				Parameters: evSchema(`{
					"query": {"type": "string", "description": "PromQL expression"},
					`+window+`
				}`, "query"),
				Integration: IntegrationPrometheus, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runFindChangePoints,
		},
		{
			Spec: Spec{
				Name: "correlate_series",
				Description: "Correlate two PromQL queries over a window (each summed over its series, aligned by time): Pearson and Spearman " +
					"coefficients and the number of aligned points. Correlation alone does not show cause.",
				Parameters: evSchema(`{
					"query_a": {"type": "string", "description": "first PromQL expression"},
					"query_b": {"type": "string", "description": "second PromQL expression"},
					`+window+`
				}`, "query_a", "query_b"),
				Integration: IntegrationPrometheus, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runCorrelateSeries,
		},
		{
			Spec: Spec{
				Name: "get_log_signatures",
				Description: "Group host/service log lines into templates (the Drain algorithm, with numbers, IDs, IPs and quoted values masked) and count " +
					"each template in the incident window [since, until] and the baseline [baseline_since, since). Templates new or surging in the window, " +
					"and error-like ones, come first, each with an example line. Streams any size of log.",
				Parameters: evSchema(`{
					"source": {"type": "string", "description": "log source from list_log_sources; empty reads every source"},
					"since": {"type": "string", "description": "incident window start: RFC 3339 time or a duration back from now (default 1h)"},
					"until": {"type": "string", "description": "incident window end (default now)"},
					"baseline_since": {"type": "string", "description": "baseline start (default: since minus the window length)"}
				}`),
				Integration: IntegrationLogs, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentCoding, AgentInvestigation},
			},
			Run: runGetLogSignatures,
		},
	}
}

func metricsSource(env *Env) (evidence.Metrics, error) {
	if env == nil || env.Sources == nil || env.Sources.Metrics == nil {
		return nil, evNotConfigured("prometheus", "prometheus")
	}
	return env.Sources.Metrics, nil
}

// analysisStep picks a range-query step giving about analysisPoints points,
// at least 15 seconds, in whole seconds.
func analysisStep(start, end time.Time) time.Duration {
	step := end.Sub(start) / analysisPoints
	if step < 15*time.Second {
		return 15 * time.Second
	}
	return step.Truncate(time.Second)
}

// queryForAnalysis runs a range query and turns raw counters into rates.
func queryForAnalysis(ctx context.Context, m evidence.Metrics, query string, start, end time.Time) ([]evidence.Series, error) {
	ss, err := m.QueryRange(ctx, query, start, end, analysisStep(start, end))
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(query)
	if strings.Contains(q, "rate(") || strings.Contains(q, "increase(") || strings.Contains(q, "deriv(") {
		return ss, nil
	}
	allCounters := len(ss) > 0
	for _, s := range ss {
		if !analysis.IsCounterName(s.Labels["__name__"]) {
			allCounters = false
		}
	}
	if allCounters {
		return analysis.RateSeries(ss), nil
	}
	return ss, nil
}

// queryArg is a required PromQL argument of an analysis tool: its name and
// the field that holds it once decoded.
type queryArg struct {
	name  string
	value *string
}

// promArgs decodes the arguments of an analysis tool over PromQL queries into
// a, requires each query, and returns the Prometheus source and the incident
// window from the start and end fields (default: the hour before now).
func promArgs(env *Env, tool string, raw json.RawMessage, a any, start, end *string, queries ...queryArg) (evidence.Metrics, time.Time, time.Time, error) {
	var zero time.Time
	if err := decodeArgs(tool, raw, a); err != nil {
		return nil, zero, zero, err
	}
	for _, q := range queries {
		if err := requireArg(tool, q.name, *q.value); err != nil {
			return nil, zero, zero, err
		}
	}
	m, err := metricsSource(env)
	if err != nil {
		return nil, zero, zero, err
	}
	from, to, err := evWindowDefault(env, *start, *end, time.Hour)
	return m, from, to, err
}

func runDetectAnomalies(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query         string `json:"query"`
		Start         string `json:"start"`
		End           string `json:"end"`
		BaselineStart string `json:"baseline_start"`
		BaselineEnd   string `json:"baseline_end"`
	}
	m, start, end, err := promArgs(env, "detect_anomalies", raw, &a, &a.Start, &a.End, queryArg{"query", &a.Query})
	if err != nil {
		return nil, err
	}
	bEnd := start
	if a.BaselineEnd != "" {
		if bEnd, err = evTime(env, a.BaselineEnd); err != nil {
			return nil, err
		}
	}
	bStart := bEnd.Add(-end.Sub(start))
	if a.BaselineStart != "" {
		if bStart, err = evTime(env, a.BaselineStart); err != nil {
			return nil, err
		}
	}
	if !bStart.Before(bEnd) {
		return nil, evidence.Errorf("detect_anomalies", evidence.CodeInvalid, "baseline window is empty")
	}
	from := bStart
	if start.Before(from) {
		from = start
	}
	ss, err := queryForAnalysis(ctx, m, a.Query, from, end)
	if err != nil {
		return nil, err
	}
	out := analysis.DetectAnomalies(ss, bStart, bEnd, start, end, analysis.AnomalyOptions{})
	if out == nil {
		out = []analysis.Anomaly{}
	}
	return out, nil
}

func runFindChangePoints(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Query string `json:"query"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	m, start, end, err := promArgs(env, "find_change_points", raw, &a, &a.Start, &a.End, queryArg{"query", &a.Query})
	if err != nil {
		return nil, err
	}
	ss, err := queryForAnalysis(ctx, m, a.Query, start, end)
	if err != nil {
		return nil, err
	}
	out := analysis.FindChangePoints(ss, 3, 4)
	if out == nil {
		out = []analysis.ChangePoint{}
	}
	return out, nil
}

func runCorrelateSeries(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		QueryA string `json:"query_a"`
		QueryB string `json:"query_b"`
		Start  string `json:"start"`
		End    string `json:"end"`
	}
	m, start, end, err := promArgs(env, "correlate_series", raw, &a, &a.Start, &a.End, queryArg{"query_a", &a.QueryA}, queryArg{"query_b", &a.QueryB})
	if err != nil {
		return nil, err
	}
	sa, err := queryForAnalysis(ctx, m, a.QueryA, start, end)
	if err != nil {
		return nil, err
	}
	sb, err := queryForAnalysis(ctx, m, a.QueryB, start, end)
	if err != nil {
		return nil, err
	}
	return analysis.Correlate(SumSeries(sa), SumSeries(sb), analysisStep(start, end)/2), nil
}

// SumSeries adds series point by point on equal timestamps (range queries
// share their steps), in time order.
func SumSeries(ss []evidence.Series) evidence.Series {
	sum := map[time.Time]float64{}
	for _, s := range ss {
		for _, p := range s.Points {
			sum[p.T] += p.V
		}
	}
	out := evidence.Series{Labels: evidence.Labels{}}
	for t, v := range sum {
		out.Points = append(out.Points, evidence.Point{T: t, V: v})
	}
	sort.Slice(out.Points, func(i, j int) bool { return out.Points[i].T.Before(out.Points[j].T) })
	return out
}

func runGetLogSignatures(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Source        string `json:"source"`
		Since         string `json:"since"`
		Until         string `json:"until"`
		BaselineSince string `json:"baseline_since"`
	}
	if err := decodeArgs("get_log_signatures", raw, &a); err != nil {
		return nil, err
	}
	logs, err := logsSource(env)
	if err != nil {
		return nil, err
	}
	since, until, err := evWindowDefault(env, a.Since, a.Until, time.Hour)
	if err != nil {
		return nil, err
	}
	bSince := since.Add(-until.Sub(since))
	if a.BaselineSince != "" {
		if bSince, err = evTime(env, a.BaselineSince); err != nil {
			return nil, err
		}
	}
	return LogSignatures(ctx, logs, a.Source, bSince, since, until)
}

// LogSignatures streams the lines of source (every source when empty) from
// baselineSince to until through a Drain miner and returns the templates,
// most interesting first, at most MaxLogTemplates.
func LogSignatures(ctx context.Context, logs evidence.Logs, source string, baselineSince, since, until time.Time) ([]analysis.LogTemplate, error) {
	m := analysis.NewMiner(baselineSince, since, until)
	n := 0
	err := logs.Scan(ctx, evidence.LogQuery{Source: source, Since: baselineSince, Until: until}, func(l evidence.LogLine) error {
		n++
		if n&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		m.Add(l.Time, l.Source, l.Text)
		return nil
	})
	if err != nil && !errors.Is(err, evidence.ErrStop) {
		return nil, err
	}
	ts := analysis.RankTemplates(m.Templates())
	if len(ts) > MaxLogTemplates {
		ts = ts[:MaxLogTemplates]
	}
	return ts, nil
}
