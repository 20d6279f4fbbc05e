// Package cloudwatch is the live CloudWatch backend over aws-sdk-go-v2:
// CloudWatch Logs (DescribeLogGroups, FilterLogEvents, Logs Insights
// StartQuery/GetQueryResults) and CloudWatch metrics (GetMetricData,
// ListMetrics).
//
// Settings (tools.cloudwatch): region (required), access_key_id and
// secret_access_key (secret references; optional session_token), else
// tokens_vault_path.aws (a reference to a secret holding
// {"access_key_id": ..., "secret_access_key": ..., "session_token": ...}
// as JSON, or "ACCESS_KEY_ID:SECRET_ACCESS_KEY"), else the SDK's default
// chain (environment, shared files, instance role). endpoint (admin-only)
// overrides the service endpoint for VPC endpoints, air-gapped
// LocalStack-style installs and tests. timeout_seconds bounds each request
// (default 30).
package cloudwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cw "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	cwl "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	cwltypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/smithy-go"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/mergeconf"
	"github.com/rootcause/rootcause/secretref"
)

// Bounds of one call.
const (
	maxPages      = 20    // FilterLogEvents / ListMetrics / DescribeLogGroups pages
	maxScanned    = 50000 // events read by one FilterLogEvents call
	maxInsightRow = 10000
)

// Client reads CloudWatch; it implements evidence.CloudWatch and Insights.
type Client struct {
	Logs    *cwl.Client
	Metrics *cw.Client
	// PollInterval is the Insights polling period (default 1s).
	PollInterval time.Duration
}

var _ evidence.CloudWatch = (*Client)(nil)

// New returns the CloudWatch source (a *Client) for tools.cloudwatch
// settings, or a nil interface when settings is nil or enabled is false.
func New(ctx context.Context, settings map[string]any, tokens map[string]string, res secretref.Resolver) (evidence.CloudWatch, error) {
	if settings == nil {
		return nil, nil
	}
	if en, ok := settings["enabled"].(bool); ok && !en {
		return nil, nil
	}
	region, _ := settings["region"].(string)
	if region == "" {
		return nil, errors.New("tools.cloudwatch.region is required")
	}
	ep, _ := settings["endpoint"].(string)
	if ep != "" && !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
		return nil, fmt.Errorf("tools.cloudwatch.endpoint: %q must be an http(s) URL", ep)
	}
	timeout := 30 * time.Second
	if t, ok := mergeconf.Number(settings["timeout_seconds"]); ok && t > 0 {
		timeout = time.Duration(t * float64(time.Second))
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithRetryMaxAttempts(2),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(timeout)),
	}
	creds, err := staticCredentials(ctx, settings, tokens, res)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		opts = append(opts, config.WithCredentialsProvider(creds))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tools.cloudwatch: loading AWS config: %w", err)
	}
	if ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	return &Client{Logs: cwl.NewFromConfig(cfg), Metrics: cw.NewFromConfig(cfg)}, nil
}

func staticCredentials(ctx context.Context, settings map[string]any, tokens map[string]string, res secretref.Resolver) (aws.CredentialsProvider, error) {
	resolve := func(field, ref string) (string, error) {
		if res == nil {
			return "", fmt.Errorf("tools.cloudwatch.%s: no secret resolver", field)
		}
		v, err := res.Resolve(ctx, ref)
		if err != nil {
			return "", fmt.Errorf("tools.cloudwatch.%s: %w", field, err)
		}
		return strings.TrimSpace(v), nil
	}
	idRef, _ := settings["access_key_id"].(string)
	secRef, _ := settings["secret_access_key"].(string)
	tokRef, _ := settings["session_token"].(string)
	var id, secret, token string
	var err error
	switch {
	case idRef != "" || secRef != "":
		if idRef == "" || secRef == "" {
			return nil, errors.New("tools.cloudwatch: set both access_key_id and secret_access_key, or neither")
		}
		if id, err = resolve("access_key_id", idRef); err != nil {
			return nil, err
		}
		if secret, err = resolve("secret_access_key", secRef); err != nil {
			return nil, err
		}
		if tokRef != "" {
			if token, err = resolve("session_token", tokRef); err != nil {
				return nil, err
			}
		}
	case tokens["aws"] != "":
		v, err := resolve("tokens_vault_path.aws", tokens["aws"])
		if err != nil {
			return nil, err
		}
		if id, secret, token, err = parseAWSSecret(v); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	return credentials.NewStaticCredentialsProvider(id, secret, token), nil
}

// parseAWSSecret reads the aws credential secret: JSON
// {"access_key_id", "secret_access_key", "session_token"} or "ID:SECRET".
func parseAWSSecret(v string) (id, secret, token string, err error) {
	if strings.HasPrefix(v, "{") {
		var s struct {
			ID     string `json:"access_key_id"`
			Secret string `json:"secret_access_key"`
			Token  string `json:"session_token"`
		}
		if json.Unmarshal([]byte(v), &s) != nil || s.ID == "" || s.Secret == "" {
			return "", "", "", errors.New(`tokens_vault_path.aws: want {"access_key_id": ..., "secret_access_key": ...}`)
		}
		return s.ID, s.Secret, s.Token, nil
	}
	id, secret, ok := strings.Cut(v, ":")
	if !ok || id == "" || secret == "" {
		return "", "", "", errors.New(`tokens_vault_path.aws: want JSON {"access_key_id", "secret_access_key"} or "ID:SECRET"`)
	}
	return id, secret, "", nil
}

// apiErr maps an SDK error to a typed evidence error.
func apiErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &evidence.Error{Source: "cloudwatch", Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: %w", op, ctx.Err())}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := evidence.CodeUnavailable
		switch ae.ErrorCode() {
		case "ResourceNotFoundException":
			code = evidence.CodeNotFound
		case "InvalidParameterException", "InvalidParameterValue", "InvalidParameterValueException",
			"InvalidParameterCombination", "InvalidParameterCombinationException", "MalformedQueryException",
			"MissingRequiredParameter", "MissingParameter", "ValidationException":
			code = evidence.CodeInvalid
		}
		return &evidence.Error{Source: "cloudwatch", Code: code, Err: fmt.Errorf("%s: %s: %s", op, ae.ErrorCode(), ae.ErrorMessage())}
	}
	return &evidence.Error{Source: "cloudwatch", Code: evidence.CodeUnavailable, Err: fmt.Errorf("%s: %v", op, err)}
}

// LogGroups lists log group names starting with prefix.
func (c *Client) LogGroups(ctx context.Context, prefix string) ([]string, error) {
	in := &cwl.DescribeLogGroupsInput{}
	if prefix != "" {
		in.LogGroupNamePrefix = aws.String(prefix)
	}
	out := []string{}
	for page := 0; page < maxPages; page++ {
		resp, err := c.Logs.DescribeLogGroups(ctx, in)
		if err != nil {
			return nil, apiErr(ctx, "DescribeLogGroups", err)
		}
		for _, g := range resp.LogGroups {
			out = append(out, aws.ToString(g.LogGroupName))
		}
		if resp.NextToken == nil || *resp.NextToken == "" {
			break
		}
		in.NextToken = resp.NextToken
	}
	sort.Strings(out)
	return out, nil
}

// FilterLogEvents returns the first Limit matching events of the window in
// time order; Matched counts the matches of every page read (at most
// 20 pages or 50,000 events).
func (c *Client) FilterLogEvents(ctx context.Context, q evidence.CloudWatchLogQuery) (*evidence.LogResult, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = bundle.DefaultCloudWatchLimit
	}
	limit = min(limit, bundle.MaxCloudWatchLimit)
	in := &cwl.FilterLogEventsInput{LogGroupName: aws.String(q.Group)}
	if q.Pattern != "" {
		in.FilterPattern = aws.String(q.Pattern)
	}
	if !q.Start.IsZero() {
		in.StartTime = aws.Int64(q.Start.UnixMilli())
	}
	if !q.End.IsZero() {
		in.EndTime = aws.Int64(q.End.UnixMilli())
	}
	res := &evidence.LogResult{Lines: []evidence.LogLine{}}
	for page := 0; page < maxPages && res.Matched < maxScanned; page++ {
		resp, err := c.Logs.FilterLogEvents(ctx, in)
		if err != nil {
			return nil, apiErr(ctx, "FilterLogEvents", err)
		}
		for _, ev := range resp.Events {
			res.Matched++
			if len(res.Lines) < limit {
				res.Lines = append(res.Lines, evidence.LogLine{
					Time:   time.UnixMilli(aws.ToInt64(ev.Timestamp)).UTC(),
					Source: bundle.CloudWatchSource(q.Group, aws.ToString(ev.LogStreamName)),
					Text:   strings.TrimRight(aws.ToString(ev.Message), "\n"),
				})
			}
		}
		if resp.NextToken == nil || *resp.NextToken == "" {
			break
		}
		in.NextToken = resp.NextToken
	}
	// The API filters server-side: Scanned is what came back.
	res.Scanned = res.Matched
	sort.SliceStable(res.Lines, func(i, j int) bool { return res.Lines[i].Time.Before(res.Lines[j].Time) })
	res.Truncated = res.Matched > len(res.Lines)
	return res, nil
}

// GetMetricData runs the queries over [start, end], following NextToken.
func (c *Client) GetMetricData(ctx context.Context, qs []evidence.MetricDataQuery, start, end time.Time) ([]evidence.Series, error) {
	if len(qs) == 0 {
		return []evidence.Series{}, nil
	}
	in := &cw.GetMetricDataInput{StartTime: aws.Time(start), EndTime: aws.Time(end), ScanBy: cwtypes.ScanByTimestampAscending}
	byID := map[string]evidence.MetricDataQuery{}
	var ids []string
	for i, q := range qs {
		id := q.ID
		if id == "" {
			id = "m" + strconv.Itoa(i)
		}
		period := q.Period
		if period <= 0 {
			period = 60
		}
		stat := q.Stat
		if stat == "" {
			stat = "Average"
		}
		q.Stat = stat
		byID[id] = q
		ids = append(ids, id)
		var dims []cwtypes.Dimension
		for _, k := range slices.Sorted(maps.Keys(q.Metric.Dimensions)) {
			dims = append(dims, cwtypes.Dimension{Name: aws.String(k), Value: aws.String(q.Metric.Dimensions[k])})
		}
		in.MetricDataQueries = append(in.MetricDataQueries, cwtypes.MetricDataQuery{
			Id: aws.String(id),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String(q.Metric.Namespace), MetricName: aws.String(q.Metric.Name), Dimensions: dims},
				Period: aws.Int32(int32(period)),
				Stat:   aws.String(stat),
			},
		})
	}
	series := map[string]*evidence.Series{}
	for page := 0; page < maxPages; page++ {
		resp, err := c.Metrics.GetMetricData(ctx, in)
		if err != nil {
			return nil, apiErr(ctx, "GetMetricData", err)
		}
		for _, r := range resp.MetricDataResults {
			id := aws.ToString(r.Id)
			s := series[id]
			if s == nil {
				s = &evidence.Series{Labels: bundle.MetricLabels(id, aws.ToString(r.Label), byID[id]), Points: []evidence.Point{}}
				series[id] = s
			}
			for i := range min(len(r.Timestamps), len(r.Values)) {
				s.Points = append(s.Points, evidence.Point{T: r.Timestamps[i].UTC(), V: r.Values[i]})
			}
		}
		if resp.NextToken == nil || *resp.NextToken == "" {
			break
		}
		in.NextToken = resp.NextToken
	}
	out := []evidence.Series{}
	for _, id := range ids {
		if s := series[id]; s != nil {
			sort.SliceStable(s.Points, func(i, j int) bool { return s.Points[i].T.Before(s.Points[j].T) })
			out = append(out, *s)
		}
	}
	return out, nil
}

// ListMetrics lists the metrics of namespace (empty: all), at most 20
// pages of 500.
func (c *Client) ListMetrics(ctx context.Context, namespace string) ([]evidence.MetricID, error) {
	in := &cw.ListMetricsInput{}
	if namespace != "" {
		in.Namespace = aws.String(namespace)
	}
	out := []evidence.MetricID{}
	for page := 0; page < maxPages; page++ {
		resp, err := c.Metrics.ListMetrics(ctx, in)
		if err != nil {
			return nil, apiErr(ctx, "ListMetrics", err)
		}
		for _, m := range resp.Metrics {
			id := evidence.MetricID{Namespace: aws.ToString(m.Namespace), Name: aws.ToString(m.MetricName)}
			if len(m.Dimensions) > 0 {
				id.Dimensions = map[string]string{}
				for _, d := range m.Dimensions {
					id.Dimensions[aws.ToString(d.Name)] = aws.ToString(d.Value)
				}
			}
			out = append(out, id)
		}
		if resp.NextToken == nil || *resp.NextToken == "" {
			break
		}
		in.NextToken = resp.NextToken
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// InsightsQuery runs a Logs Insights query over groups in [start, end] and
// waits for it (until ctx ends; the query is then stopped). Rows map field
// names to values; "@ptr" is dropped.
func (c *Client) InsightsQuery(ctx context.Context, groups []string, query string, start, end time.Time) ([]map[string]string, error) {
	sq, err := c.Logs.StartQuery(ctx, &cwl.StartQueryInput{
		LogGroupNames: groups, QueryString: aws.String(query),
		StartTime: aws.Int64(start.Unix()), EndTime: aws.Int64(end.Unix()),
		Limit: aws.Int32(maxInsightRow),
	})
	if err != nil {
		return nil, apiErr(ctx, "StartQuery", err)
	}
	poll := c.PollInterval
	if poll <= 0 {
		poll = time.Second
	}
	for {
		r, err := c.Logs.GetQueryResults(ctx, &cwl.GetQueryResultsInput{QueryId: sq.QueryId})
		if err != nil {
			if ctx.Err() != nil {
				stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				_, _ = c.Logs.StopQuery(stopCtx, &cwl.StopQueryInput{QueryId: sq.QueryId})
				cancel()
			}
			return nil, apiErr(ctx, "GetQueryResults", err)
		}
		switch r.Status {
		case cwltypes.QueryStatusComplete:
			out := make([]map[string]string, 0, len(r.Results))
			for _, row := range r.Results {
				m := map[string]string{}
				for _, f := range row {
					if name := aws.ToString(f.Field); name != "@ptr" {
						m[name] = aws.ToString(f.Value)
					}
				}
				out = append(out, m)
			}
			return out, nil
		case cwltypes.QueryStatusFailed, cwltypes.QueryStatusCancelled, cwltypes.QueryStatusTimeout:
			return nil, evidence.Errorf("cloudwatch", evidence.CodeUnavailable, "insights query %s: %s", aws.ToString(sq.QueryId), r.Status)
		}
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = c.Logs.StopQuery(stopCtx, &cwl.StopQueryInput{QueryId: sq.QueryId})
			cancel()
			return nil, evidence.Errorf("cloudwatch", evidence.CodeUnavailable, "insights query did not complete: %v", ctx.Err())
		case <-time.After(poll):
		}
	}
}
