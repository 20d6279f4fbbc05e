package bundle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// DefaultCloudWatchLimit is the number of events returned when a query sets
// no limit; MaxCloudWatchLimit caps it (the API's own maximum).
const (
	DefaultCloudWatchLimit = 100
	MaxCloudWatchLimit     = 10000
)

// cloudwatch returns the bundle's CloudWatch source, or nil when the bundle
// has neither cloudwatch/logs/ nor cloudwatch/metrics.json.
//
// A log group's slashes are folders: /aws/lambda/x is
// cloudwatch/logs/aws/lambda/x.jsonl. A file in a sub-folder is a group
// whose name starts with "/"; a file directly in cloudwatch/logs/ is a
// group without one (app.jsonl is "app"). Lookups accept a group name with
// or without its leading slash.
func (b *Bundle) cloudwatch() evidence.CloudWatch {
	groups := map[string]string{}
	_ = fs.WalkDir(b.FS, "cloudwatch/logs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			rel := strings.TrimSuffix(strings.TrimPrefix(p, "cloudwatch/logs/"), ".jsonl")
			name := rel
			if strings.Contains(rel, "/") {
				name = "/" + rel
			}
			groups[name] = p
		}
		return nil
	})
	hasMetrics := exists(b.FS, "cloudwatch/metrics.json")
	if len(groups) == 0 && !hasMetrics {
		return nil
	}
	return &bundleCloudWatch{fsys: b.FS, groups: groups, hasMetrics: hasMetrics}
}

type bundleCloudWatch struct {
	fsys       fs.FS
	groups     map[string]string // group name → path
	hasMetrics bool

	once    sync.Once
	metrics []metricResult
	merr    error
}

func (c *bundleCloudWatch) LogGroups(ctx context.Context, prefix string) ([]string, error) {
	out := []string{}
	for g := range c.groups {
		if strings.HasPrefix(g, prefix) || strings.HasPrefix(strings.TrimPrefix(g, "/"), prefix) {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (c *bundleCloudWatch) groupPath(group string) (string, string, error) {
	if p, ok := c.groups[group]; ok {
		return group, p, nil
	}
	for g, p := range c.groups {
		if strings.TrimPrefix(g, "/") == strings.TrimPrefix(group, "/") {
			return g, p, nil
		}
	}
	return "", "", evidence.Errorf("cloudwatch", evidence.CodeNotFound, "log group %q is not in the bundle (list_cloudwatch_log_groups lists them)", group)
}

// cwEvent is one line of a cloudwatch/logs/*.jsonl file.
type cwEvent struct {
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	LogStreamName string `json:"logStreamName"`
	IngestionTime int64  `json:"ingestionTime"`
}

// scanGroup streams the events of group in [start, end] to fn.
func (c *bundleCloudWatch) scanGroup(ctx context.Context, group string, start, end time.Time, fn func(cwEvent) error) error {
	_, p, err := c.groupPath(group)
	if err != nil {
		return err
	}
	f, err := c.fsys.Open(p)
	if err != nil {
		return &evidence.Error{Source: "cloudwatch", Code: evidence.CodeMalformed, File: p, Err: err}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // CloudWatch events are at most 256 KiB
	n := 0
	for sc.Scan() {
		n++
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev cwEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return &evidence.Error{Source: "cloudwatch", Code: evidence.CodeMalformed, File: p, Line: n, Err: fmt.Errorf("want {\"timestamp\": <ms>, \"message\": ...}: %v", err)}
		}
		t := time.UnixMilli(ev.Timestamp)
		if !start.IsZero() && t.Before(start) || !end.IsZero() && t.After(end) {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &evidence.Error{Source: "cloudwatch", Code: evidence.CodeMalformed, File: p, Line: n + 1, Err: err}
	}
	return nil
}

func (c *bundleCloudWatch) FilterLogEvents(ctx context.Context, q evidence.CloudWatchLogQuery) (*evidence.LogResult, error) {
	fp, err := ParseFilterPattern(q.Pattern)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultCloudWatchLimit
	}
	limit = min(limit, MaxCloudWatchLimit)
	res := &evidence.LogResult{Lines: []evidence.LogLine{}}
	group, _, err := c.groupPath(q.Group)
	if err != nil {
		return nil, err
	}
	err = c.scanGroup(ctx, q.Group, q.Start, q.End, func(ev cwEvent) error {
		res.Scanned++
		if !fp.Match(ev.Message) {
			return nil
		}
		res.Matched++
		if len(res.Lines) < limit {
			res.Lines = append(res.Lines, evidence.LogLine{Time: time.UnixMilli(ev.Timestamp).UTC(), Source: CloudWatchSource(group, ev.LogStreamName), Text: strings.TrimRight(ev.Message, "\n")})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Truncated = res.Matched > len(res.Lines)
	return res, nil
}

// CloudWatchSource names the source of a CloudWatch event: group, or group/stream.
func CloudWatchSource(group, stream string) string {
	if stream == "" {
		return group
	}
	return group + "/" + stream
}

// FilterPattern is a parsed CloudWatch Logs filter pattern of the
// unstructured-text kind: plain terms and "quoted phrases" must all
// appear, ?terms are alternatives (at least one must appear), -terms must
// not appear. Matching is case-sensitive, as in CloudWatch. An empty
// pattern matches every event. JSON ({ $.x = ... }) and space-delimited
// ([a, b]) patterns are not supported offline.
type FilterPattern struct {
	All, Any, None []string
}

// ParseFilterPattern parses p.
func ParseFilterPattern(p string) (*FilterPattern, error) {
	fp := &FilterPattern{}
	p = strings.TrimSpace(p)
	if p == "" || p == `""` {
		return fp, nil
	}
	if strings.HasPrefix(p, "{") || strings.HasPrefix(p, "[") || strings.HasPrefix(p, "%") {
		return nil, evidence.Errorf("cloudwatch", evidence.CodeInvalid, "filter pattern %q: JSON, space-delimited and regex patterns are not supported on bundles; use terms, \"quoted phrases\", ?alternatives and -exclusions", p)
	}
	for i := 0; i < len(p); {
		if p[i] == ' ' || p[i] == '\t' {
			i++
			continue
		}
		mod := byte(0)
		if p[i] == '?' || p[i] == '-' {
			mod = p[i]
			i++
		}
		var term string
		if i < len(p) && p[i] == '"' {
			j := strings.IndexByte(p[i+1:], '"')
			if j < 0 {
				return nil, evidence.Errorf("cloudwatch", evidence.CodeInvalid, "filter pattern %q: unterminated quote", p)
			}
			term = p[i+1 : i+1+j]
			i += j + 2
		} else {
			j := i
			for j < len(p) && p[j] != ' ' && p[j] != '\t' {
				j++
			}
			term = p[i:j]
			i = j
		}
		if term == "" {
			continue
		}
		switch mod {
		case '?':
			fp.Any = append(fp.Any, term)
		case '-':
			fp.None = append(fp.None, term)
		default:
			fp.All = append(fp.All, term)
		}
	}
	return fp, nil
}

// Match reports whether msg matches the pattern.
func (fp *FilterPattern) Match(msg string) bool {
	for _, t := range fp.All {
		if !strings.Contains(msg, t) {
			return false
		}
	}
	for _, t := range fp.None {
		if strings.Contains(msg, t) {
			return false
		}
	}
	if len(fp.Any) == 0 {
		return true
	}
	for _, t := range fp.Any {
		if strings.Contains(msg, t) {
			return true
		}
	}
	return false
}

// metricsFile is cloudwatch/metrics.json: a GetMetricData response, each
// result optionally extended with the metric it measures.
type metricsFile struct {
	MetricDataResults []metricResult  `json:"MetricDataResults"`
	Messages          json.RawMessage `json:"Messages"`
}

type metricResult struct {
	ID         string            `json:"Id"`
	Label      string            `json:"Label"`
	Timestamps []json.RawMessage `json:"Timestamps"`
	Values     []float64         `json:"Values"`
	StatusCode string            `json:"StatusCode"`
	// The richer shape (optional): what the result measures.
	Namespace  string          `json:"Namespace"`
	MetricName string          `json:"MetricName"`
	Dimensions json.RawMessage `json:"Dimensions"` // [{"Name","Value"}] or {"name": "value"}
	Stat       string          `json:"Stat"`
	Period     int             `json:"Period"`

	dims   map[string]string
	points []evidence.Point
}

func (c *bundleCloudWatch) loadMetrics() {
	const file = "cloudwatch/metrics.json"
	bad := func(format string, args ...any) {
		c.merr = &evidence.Error{Source: "cloudwatch", Code: evidence.CodeMalformed, File: file, Err: fmt.Errorf(format, args...)}
	}
	data, err := fs.ReadFile(c.fsys, file)
	if err != nil {
		bad("%v", err)
		return
	}
	var mf metricsFile
	if err := json.Unmarshal(data, &mf); err != nil {
		bad("want a GetMetricData response {\"MetricDataResults\": [...]}: %v", err)
		return
	}
	for i := range mf.MetricDataResults {
		r := &mf.MetricDataResults[i]
		if len(r.Timestamps) != len(r.Values) {
			bad("MetricDataResults[%d]: %d timestamps but %d values", i, len(r.Timestamps), len(r.Values))
			return
		}
		dims, err := parseDimensions(r.Dimensions)
		if err != nil {
			bad("MetricDataResults[%d].Dimensions: %v", i, err)
			return
		}
		r.dims = dims
		for j, raw := range r.Timestamps {
			t, err := parseMetricTime(raw)
			if err != nil {
				bad("MetricDataResults[%d].Timestamps[%d]: %v", i, j, err)
				return
			}
			r.points = append(r.points, evidence.Point{T: t, V: r.Values[j]})
		}
		sort.SliceStable(r.points, func(a, b int) bool { return r.points[a].T.Before(r.points[b].T) })
	}
	labelMetrics(mf.MetricDataResults)
	c.metrics = mf.MetricDataResults
}

func parseDimensions(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct{ Name, Value string }
	if err := json.Unmarshal(raw, &list); err == nil {
		m := map[string]string{}
		for _, d := range list {
			m[d.Name] = d.Value
		}
		return m, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New(`want [{"Name": ..., "Value": ...}] or {"name": "value"}`)
	}
	return m, nil
}

// parseMetricTime reads an ISO 8601 string or an epoch number (seconds,
// or milliseconds when larger than 1e11).
func parseMetricTime(raw json.RawMessage) (time.Time, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is not an ISO 8601 time", s)
		}
		return t.UTC(), nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return time.Time{}, fmt.Errorf("%s is neither an ISO 8601 string nor an epoch number", raw)
	}
	if f > 1e11 {
		return time.UnixMilli(int64(f)).UTC(), nil
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
}

func (c *bundleCloudWatch) loadedMetrics() ([]metricResult, error) {
	if !c.hasMetrics {
		return nil, nil
	}
	c.once.Do(c.loadMetrics)
	return c.metrics, c.merr
}

func (c *bundleCloudWatch) ListMetrics(ctx context.Context, namespace string) ([]evidence.MetricID, error) {
	ms, err := c.loadedMetrics()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []evidence.MetricID{}
	for _, r := range ms {
		if r.MetricName == "" || namespace != "" && r.Namespace != namespace {
			continue
		}
		id := evidence.MetricID{Namespace: r.Namespace, Name: r.MetricName, Dimensions: r.dims}
		k := id.Key()
		if !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// GetMetricData answers each query from the recorded results: by metric
// (namespace, name, dimensions and, when recorded, stat) in the richer
// shape, else by Id. Points are those recorded within [start, end]; the
// bundle does not re-aggregate to another period.
func (c *bundleCloudWatch) GetMetricData(ctx context.Context, qs []evidence.MetricDataQuery, start, end time.Time) ([]evidence.Series, error) {
	ms, err := c.loadedMetrics()
	if err != nil {
		return nil, err
	}
	out := []evidence.Series{}
	for i, q := range qs {
		id := q.ID
		if id == "" {
			id = "m" + strconv.Itoa(i)
		}
		// The metric recorded with another statistic than the one asked
		// for stands in for it (the bundle cannot re-aggregate): a
		// capture records each metric with the statistic that reads it
		// (Maximum for ConcurrentExecutions, the age of the oldest
		// message), and its labels say which.
		var found, other *metricResult
		for j := range ms {
			r := &ms[j]
			if r.MetricName != "" && q.Metric.Name != "" {
				if r.Namespace == q.Metric.Namespace && r.MetricName == q.Metric.Name && maps.Equal(r.dims, q.Metric.Dimensions) {
					if r.Stat == "" || q.Stat == "" || r.Stat == q.Stat {
						found = r
						break
					}
					if other == nil {
						other = r
					}
				}
			} else if q.ID != "" && r.ID == q.ID {
				found = r
				break
			}
		}
		if found == nil && other != nil {
			found = other
			q.Stat = other.Stat
		}
		if found == nil {
			continue // like the API: a metric without data has no points
		}
		s := evidence.Series{Labels: MetricLabels(id, found.Label, q), Points: []evidence.Point{}}
		for _, p := range found.points {
			if (!start.IsZero() && p.T.Before(start)) || (!end.IsZero() && p.T.After(end)) {
				continue
			}
			s.Points = append(s.Points, p)
		}
		out = append(out, s)
	}
	return out, nil
}

// MetricLabels are the labels of a CloudWatch series, the same for the
// bundle and the live backend: id, label, namespace, metric_name, stat and
// one label per dimension.
func MetricLabels(id, label string, q evidence.MetricDataQuery) evidence.Labels {
	l := evidence.Labels{"id": id}
	if label != "" {
		l["label"] = label
	}
	if q.Metric.Namespace != "" {
		l["namespace"] = q.Metric.Namespace
	}
	if q.Metric.Name != "" {
		l["metric_name"] = q.Metric.Name
		l["__name__"] = q.Metric.Name
	}
	if q.Stat != "" {
		l["stat"] = q.Stat
	}
	for k, v := range q.Metric.Dimensions {
		l[k] = v
	}
	return l
}

// InsightsQuery runs a CloudWatch Logs Insights query over the bundle's
// log groups. Bundles support a subset, commands joined by "|":
//
//	fields f1, f2            (@timestamp, @message, @logStream, @log)
//	filter @message like /re/    (or like "text", not like, =~)
//	stats count(*) [as name] by bin(5m)
//	sort @timestamp asc|desc
//	limit N
//
// Anything else is an invalid-query error saying so.
func (c *bundleCloudWatch) InsightsQuery(ctx context.Context, groups []string, query string, start, end time.Time) ([]map[string]string, error) {
	iq, err := parseInsights(query)
	if err != nil {
		return nil, err
	}
	type row struct {
		t   time.Time
		msg string
		ls  string
		g   string
	}
	var rows []row
	const maxRows = 10000
	for _, g := range groups {
		name, _, err := c.groupPath(g)
		if err != nil {
			return nil, err
		}
		err = c.scanGroup(ctx, g, start, end, func(ev cwEvent) error {
			for _, f := range iq.filters {
				if f.re.MatchString(ev.Message) == f.negate {
					return nil
				}
			}
			if iq.binBy == 0 && len(rows) >= maxRows {
				return nil
			}
			rows = append(rows, row{t: time.UnixMilli(ev.Timestamp).UTC(), msg: ev.Message, ls: ev.LogStreamName, g: name})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := []map[string]string{}
	if iq.binBy > 0 {
		counts := map[time.Time]int{}
		for _, r := range rows {
			counts[r.t.Truncate(iq.binBy)]++
		}
		bins := make([]time.Time, 0, len(counts))
		for t := range counts {
			bins = append(bins, t)
		}
		sort.Slice(bins, func(i, j int) bool {
			if iq.desc {
				return bins[i].After(bins[j])
			}
			return bins[i].Before(bins[j])
		})
		for _, t := range bins {
			out = append(out, map[string]string{iq.binName: insightsTime(t), iq.countName: strconv.Itoa(counts[t])})
		}
	} else {
		sort.SliceStable(rows, func(i, j int) bool {
			if iq.desc {
				return rows[i].t.After(rows[j].t)
			}
			return rows[i].t.Before(rows[j].t)
		})
		for _, r := range rows {
			m := map[string]string{}
			for _, f := range iq.fields {
				switch f {
				case "@timestamp":
					m[f] = insightsTime(r.t)
				case "@message":
					m[f] = r.msg
				case "@logStream":
					m[f] = r.ls
				case "@log":
					m[f] = r.g
				}
			}
			out = append(out, m)
		}
	}
	if iq.limit > 0 && len(out) > iq.limit {
		out = out[:iq.limit]
	}
	return out, nil
}

// insightsTime formats t as Insights does: "2006-01-02 15:04:05.000".
func insightsTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

type insightsFilter struct {
	re     *regexp.Regexp
	negate bool
}

type insightsQuery struct {
	fields             []string
	filters            []insightsFilter
	binBy              time.Duration
	binName, countName string
	desc               bool
	limit              int
}

var (
	reInsFilter = regexp.MustCompile(`^filter\s+@message\s+(not\s+like|like|=~)\s+(/(.*)/|"(.*)"|'(.*)')$`)
	reInsStats  = regexp.MustCompile(`^stats\s+count\((\*|@message)?\)(?:\s+as\s+(\w+))?\s+by\s+bin\((\d+)([smhd])\)(?:\s+as\s+(\w+))?$`)
	reInsSort   = regexp.MustCompile(`^sort\s+@timestamp(?:\s+(asc|desc))?$`)
	reInsLimit  = regexp.MustCompile(`^limit\s+(\d+)$`)
)

func parseInsights(q string) (*insightsQuery, error) {
	unsupported := func(part string) error {
		return evidence.Errorf("cloudwatch", evidence.CodeInvalid,
			"insights command %q is not supported on bundles: they support fields, filter @message like /re/, stats count(*) by bin(5m), sort @timestamp and limit", part)
	}
	iq := &insightsQuery{fields: []string{"@timestamp", "@message"}, desc: false}
	for _, part := range strings.Split(q, "|") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasPrefix(part, "fields "):
			iq.fields = nil
			for _, f := range strings.Split(strings.TrimPrefix(part, "fields "), ",") {
				f = strings.TrimSpace(f)
				switch f {
				case "@timestamp", "@message", "@logStream", "@log":
					iq.fields = append(iq.fields, f)
				default:
					return nil, unsupported(part)
				}
			}
		case strings.HasPrefix(part, "filter "):
			m := reInsFilter.FindStringSubmatch(part)
			if m == nil {
				return nil, unsupported(part)
			}
			var expr string
			switch {
			case strings.HasPrefix(m[2], "/"):
				expr = m[3]
			case strings.HasPrefix(m[2], `"`):
				expr = regexp.QuoteMeta(m[4])
			default:
				expr = regexp.QuoteMeta(m[5])
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, evidence.Errorf("cloudwatch", evidence.CodeInvalid, "insights filter %q: %v", part, err)
			}
			iq.filters = append(iq.filters, insightsFilter{re: re, negate: strings.HasPrefix(m[1], "not")})
		case strings.HasPrefix(part, "stats "):
			m := reInsStats.FindStringSubmatch(part)
			if m == nil {
				return nil, unsupported(part)
			}
			n, _ := strconv.Atoi(m[3])
			unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[4]]
			if n <= 0 {
				return nil, unsupported(part)
			}
			iq.binBy = time.Duration(n) * unit
			iq.countName = "count(" + m[1] + ")"
			if m[2] != "" {
				iq.countName = m[2]
			}
			iq.binName = "bin(" + m[3] + m[4] + ")"
			if m[5] != "" {
				iq.binName = m[5]
			}
		case strings.HasPrefix(part, "sort "):
			m := reInsSort.FindStringSubmatch(part)
			if m == nil {
				return nil, unsupported(part)
			}
			iq.desc = m[1] == "desc"
		case strings.HasPrefix(part, "limit "):
			m := reInsLimit.FindStringSubmatch(part)
			if m == nil {
				return nil, unsupported(part)
			}
			iq.limit, _ = strconv.Atoi(m[1])
		default:
			return nil, unsupported(part)
		}
	}
	return iq, nil
}
