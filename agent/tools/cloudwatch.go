package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// CloudWatchInsights is implemented by CloudWatch sources that run Logs
// Insights queries (the live backend: the real service; bundles: a
// documented subset). Rows map field names to values.
type CloudWatchInsights interface {
	InsightsQuery(ctx context.Context, groups []string, query string, start, end time.Time) ([]map[string]string, error)
}

// MaxInsightsRows bounds the rows cloudwatch_insights_query returns.
const MaxInsightsRows = 1000

// InsightsResult is the result of cloudwatch_insights_query.
type InsightsResult struct {
	Rows      []map[string]string `json:"rows"`
	Total     int                 `json:"total"`
	Truncated bool                `json:"truncated"`
}

func cloudwatchTools() []Tool {
	aws := []string{AgentAWS, AgentInvestigation}
	awsMetrics := []string{AgentAWS, AgentMetrics, AgentInvestigation}
	return []Tool{
		{
			Spec: Spec{
				Name:        "list_cloudwatch_log_groups",
				Description: "List AWS CloudWatch Logs log group names, optionally only those starting with a prefix such as /aws/lambda/.",
				Parameters:  evSchema(`{"prefix": {"type": "string", "description": "log group name prefix; empty lists all"}}`),
				Integration: IntegrationCloudWatch, ReadOnly: true, Agents: aws,
			},
			Run: runListLogGroups,
		},
		{
			Spec: Spec{
				Name: "get_cloudwatch_logs",
				Description: "Read events of one CloudWatch Logs log group in a time window, filtered with a CloudWatch filter pattern " +
					"(terms that must all appear, \"quoted phrases\", ?term alternatives, -term exclusions; case-sensitive). Returns the first `limit` events in time order.",
				Parameters: evSchema(`{
					"log_group": {"type": "string", "description": "log group name, e.g. /aws/lambda/checkout"},
					"filter_pattern": {"type": "string", "description": "CloudWatch filter pattern, e.g. ERROR -healthcheck or ?Timeout ?timed; empty matches all"},
					"start": {"type": "string", "description": "RFC 3339 time or a duration back from now such as 1h (default 1h)"},
					"end": {"type": "string", "description": "RFC 3339 time or a duration back from now (default now)"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "max events returned (default 100)"}
				}`, "log_group"),
				Integration: IntegrationCloudWatch, ReadOnly: true, Agents: aws,
			},
			Run: runGetCloudWatchLogs,
		},
		{
			Spec: Spec{
				Name: "cloudwatch_insights_query",
				Description: "Run a CloudWatch Logs Insights query over one or more log groups (comma-separated) in a time window, " +
					"e.g. `filter @message like /ERROR/ | stats count(*) by bin(5m)`. On incident bundles only fields, filter @message like, " +
					"stats count(*) by bin(), sort @timestamp and limit are supported. Returns result rows (field → value).",
				Parameters: evSchema(`{
					"log_group": {"type": "string", "description": "log group name, or several separated by commas"},
					"query": {"type": "string", "description": "Logs Insights query"},
					"start": {"type": "string", "description": "RFC 3339 time or a duration back from now (default 1h)"},
					"end": {"type": "string", "description": "RFC 3339 time or a duration back from now (default now)"}
				}`, "log_group", "query"),
				Integration: IntegrationCloudWatch, ReadOnly: true, Agents: aws,
			},
			Run: runInsightsQuery,
		},
		{
			Spec: Spec{
				Name:        "list_cloudwatch_metrics",
				Description: "List CloudWatch metrics (namespace, metric name, dimensions), optionally of one namespace such as AWS/Lambda or AWS/RDS.",
				Parameters:  evSchema(`{"namespace": {"type": "string", "description": "CloudWatch namespace; empty lists all"}}`),
				Integration: IntegrationCloudWatch, ReadOnly: true, Agents: awsMetrics,
			},
			Run: runListCloudWatchMetrics,
		},
		{
			Spec: Spec{
				Name: "get_cloudwatch_metrics",
				Description: "Get one CloudWatch metric's values over a window (GetMetricData), e.g. namespace AWS/Lambda, metric_name Errors, " +
					"dimensions {\"FunctionName\": \"checkout\"}, stat Sum, period 60. Returns time series.",
				Parameters: evSchema(`{
					"namespace": {"type": "string"},
					"metric_name": {"type": "string"},
					"dimensions": {"type": "object", "additionalProperties": {"type": "string"}, "description": "dimension name to value"},
					"stat": {"type": "string", "description": "Average, Sum, Minimum, Maximum, SampleCount or a percentile such as p99 (default Average)"},
					"period": {"type": "integer", "minimum": 1, "description": "seconds per point (default 60)"},
					"start": {"type": "string", "description": "RFC 3339 time or a duration back from now (default 1h)"},
					"end": {"type": "string", "description": "RFC 3339 time or a duration back from now (default now)"}
				}`, "namespace", "metric_name"),
				Integration: IntegrationCloudWatch, ReadOnly: true, Agents: awsMetrics,
			},
			Run: runGetCloudWatchMetrics,
		},
	}
}

func cloudwatchSource(env *Env) (evidence.CloudWatch, error) {
	if env == nil || env.Sources == nil || env.Sources.CloudWatch == nil {
		return nil, evNotConfigured("cloudwatch", "cloudwatch")
	}
	return env.Sources.CloudWatch, nil
}

func runListLogGroups(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Prefix string }
	if err := decodeArgs("list_cloudwatch_log_groups", raw, &a); err != nil {
		return nil, err
	}
	c, err := cloudwatchSource(env)
	if err != nil {
		return nil, err
	}
	return c.LogGroups(ctx, a.Prefix)
}

func runGetCloudWatchLogs(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		LogGroup      string `json:"log_group"`
		FilterPattern string `json:"filter_pattern"`
		Start, End    string
		Limit         int
	}
	if err := decodeArgs("get_cloudwatch_logs", raw, &a); err != nil {
		return nil, err
	}
	c, err := cloudwatchSource(env)
	if err != nil {
		return nil, err
	}
	if a.LogGroup == "" {
		return nil, evidence.Errorf("get_cloudwatch_logs", evidence.CodeInvalid, "log_group is required")
	}
	start, end, err := evWindow(env, a.Start, a.End)
	if err != nil {
		return nil, err
	}
	return c.FilterLogEvents(ctx, evidence.CloudWatchLogQuery{Group: a.LogGroup, Pattern: a.FilterPattern, Start: start, End: end, Limit: evLimit(a.Limit, 100, 10000)})
}

func runInsightsQuery(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		LogGroup   string `json:"log_group"`
		Query      string
		Start, End string
	}
	if err := decodeArgs("cloudwatch_insights_query", raw, &a); err != nil {
		return nil, err
	}
	c, err := cloudwatchSource(env)
	if err != nil {
		return nil, err
	}
	iq, ok := c.(CloudWatchInsights)
	if !ok {
		return nil, evidence.Errorf("cloudwatch", evidence.CodeNotConfigured, "this CloudWatch source cannot run Logs Insights queries")
	}
	var groups []string
	for _, g := range strings.Split(a.LogGroup, ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 || strings.TrimSpace(a.Query) == "" {
		return nil, evidence.Errorf("cloudwatch_insights_query", evidence.CodeInvalid, "log_group and query are required")
	}
	start, end, err := evWindow(env, a.Start, a.End)
	if err != nil {
		return nil, err
	}
	rows, err := iq.InsightsQuery(ctx, groups, a.Query, start, end)
	if err != nil {
		return nil, err
	}
	res := &InsightsResult{Rows: rows, Total: len(rows)}
	if res.Rows == nil {
		res.Rows = []map[string]string{}
	}
	if len(rows) > MaxInsightsRows {
		res.Rows, res.Truncated = rows[:MaxInsightsRows], true
	}
	return res, nil
}

func runListCloudWatchMetrics(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct{ Namespace string }
	if err := decodeArgs("list_cloudwatch_metrics", raw, &a); err != nil {
		return nil, err
	}
	c, err := cloudwatchSource(env)
	if err != nil {
		return nil, err
	}
	return c.ListMetrics(ctx, a.Namespace)
}

func runGetCloudWatchMetrics(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Namespace  string
		MetricName string `json:"metric_name"`
		Dimensions map[string]string
		Stat       string
		Period     int
		Start, End string
	}
	if err := decodeArgs("get_cloudwatch_metrics", raw, &a); err != nil {
		return nil, err
	}
	c, err := cloudwatchSource(env)
	if err != nil {
		return nil, err
	}
	if a.Namespace == "" || a.MetricName == "" {
		return nil, evidence.Errorf("get_cloudwatch_metrics", evidence.CodeInvalid, "namespace and metric_name are required")
	}
	start, end, err := evWindow(env, a.Start, a.End)
	if err != nil {
		return nil, err
	}
	if a.Period <= 0 {
		a.Period = 60
	}
	q := evidence.MetricDataQuery{ID: "m0", Metric: evidence.MetricID{Namespace: a.Namespace, Name: a.MetricName, Dimensions: a.Dimensions}, Stat: a.Stat, Period: a.Period}
	return c.GetMetricData(ctx, []evidence.MetricDataQuery{q}, start, end)
}
