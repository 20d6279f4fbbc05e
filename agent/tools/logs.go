package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Bounds of the logs tools.
const (
	DefaultLogLimit   = 100
	MaxLogLimit       = 1000
	DefaultLogContext = 20
	MaxLogContext     = 200
)

func logTools() []Tool {
	return []Tool{
		{
			Spec: Spec{
				Name:        "list_log_sources",
				Description: "List the host and service log sources (log files outside Kubernetes) that search_logs and get_log_context can read. Returns source names.",
				Parameters:  evSchema(`{}`),
				Integration: IntegrationLogs, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentInvestigation},
			},
			Run: runListLogSources,
		},
		{
			Spec: Spec{
				Name: "search_logs",
				Description: "Search host/service log files (outside Kubernetes) for lines matching a regular expression in a time window. " +
					"Lines without their own timestamp (stack traces) carry the previous line's time. Returns the LAST `limit` matching lines " +
					"in file order, with counts of lines matched and scanned; narrow since/until or the pattern when truncated.",
				Parameters: evSchema(`{
					"source": {"type": "string", "description": "log source from list_log_sources; empty searches every source"},
					"pattern": {"type": "string", "description": "RE2 regular expression, e.g. (?i)error|timeout; empty matches every line"},
					"since": {"type": "string", "description": "window start: RFC 3339 time or a duration back from now such as 1h or 30m (default 1h)"},
					"until": {"type": "string", "description": "window end: RFC 3339 time or a duration back from now (default now)"},
					"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "max lines returned (default 100)"}
				}`),
				Integration: IntegrationLogs, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentCoding, AgentInvestigation},
			},
			Run: runSearchLogs,
		},
		{
			Spec: Spec{
				Name:        "get_log_context",
				Description: "Read the lines of one log source around a timestamp: `before` lines before it and `after` lines from it on (for example around the first error found by search_logs).",
				Parameters: evSchema(`{
					"source": {"type": "string", "description": "log source from list_log_sources"},
					"timestamp": {"type": "string", "description": "RFC 3339 time (or a duration back from now) to centre on"},
					"before": {"type": "integer", "minimum": 0, "maximum": 200, "description": "lines before the timestamp (default 20)"},
					"after": {"type": "integer", "minimum": 0, "maximum": 200, "description": "lines at and after the timestamp (default 20)"}
				}`, "source", "timestamp"),
				Integration: IntegrationLogs, ReadOnly: true,
				Agents: []string{AgentMetrics, AgentCoding, AgentInvestigation},
			},
			Run: runGetLogContext,
		},
	}
}

func logsSource(env *Env) (evidence.Logs, error) {
	if env == nil || env.Sources == nil || env.Sources.Logs == nil {
		return nil, evNotConfigured("logs", "logs")
	}
	return env.Sources.Logs, nil
}

func runListLogSources(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	if err := decodeArgs("list_log_sources", raw, &struct{}{}); err != nil {
		return nil, err
	}
	l, err := logsSource(env)
	if err != nil {
		return nil, err
	}
	return l.Sources(ctx)
}

func runSearchLogs(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Source, Pattern, Since, Until string
		Limit                         int
	}
	if err := decodeArgs("search_logs", raw, &a); err != nil {
		return nil, err
	}
	l, err := logsSource(env)
	if err != nil {
		return nil, err
	}
	since, until, err := evWindow(env, a.Since, a.Until)
	if err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if a.Pattern != "" {
		if re, err = regexp.Compile(a.Pattern); err != nil {
			return nil, evidence.Errorf("logs", evidence.CodeInvalid, "pattern %q is not a valid regular expression: %v", a.Pattern, err)
		}
	}
	limit := evLimit(a.Limit, DefaultLogLimit, MaxLogLimit)
	ring := newLineRing(limit)
	res := &evidence.LogResult{}
	err = l.Scan(ctx, evidence.LogQuery{Source: a.Source, Since: since, Until: until}, func(line evidence.LogLine) error {
		res.Scanned++
		if re != nil && !re.MatchString(line.Text) {
			return nil
		}
		res.Matched++
		ring.add(line)
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Lines = ring.lines()
	res.Truncated = res.Matched > len(res.Lines)
	return res, nil
}

func runGetLogContext(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	var a struct {
		Source, Timestamp string
		Before, After     *int
	}
	if err := decodeArgs("get_log_context", raw, &a); err != nil {
		return nil, err
	}
	l, err := logsSource(env)
	if err != nil {
		return nil, err
	}
	if a.Source == "" || a.Timestamp == "" {
		return nil, evidence.Errorf("get_log_context", evidence.CodeInvalid, "source and timestamp are required")
	}
	at, err := evTime(env, a.Timestamp)
	if err != nil {
		return nil, err
	}
	before, after := DefaultLogContext, DefaultLogContext
	if a.Before != nil {
		before = min(max(*a.Before, 0), MaxLogContext)
	}
	if a.After != nil {
		after = min(max(*a.After, 0), MaxLogContext)
	}
	ring := newLineRing(before)
	var tail []evidence.LogLine
	res := &evidence.LogResult{}
	// Read from a day before: enough for the "before" lines of all but the
	// quietest logs, without scanning whole archives.
	err = l.Scan(ctx, evidence.LogQuery{Source: a.Source, Since: at.Add(-24 * time.Hour)}, func(line evidence.LogLine) error {
		res.Scanned++
		if line.Time.Before(at) {
			ring.add(line)
			return nil
		}
		if len(tail) >= after {
			return evidence.ErrStop
		}
		tail = append(tail, line)
		return nil
	})
	if err != nil && !errors.Is(err, evidence.ErrStop) {
		return nil, err
	}
	res.Lines = append(ring.lines(), tail...)
	res.Matched = len(res.Lines)
	return res, nil
}

// lineRing keeps the last n lines.
type lineRing struct {
	n    int
	buf  []evidence.LogLine
	next int
}

func newLineRing(n int) *lineRing { return &lineRing{n: n} }

func (r *lineRing) add(l evidence.LogLine) {
	if r.n <= 0 {
		return
	}
	if len(r.buf) < r.n {
		r.buf = append(r.buf, l)
		return
	}
	r.buf[r.next] = l
	r.next = (r.next + 1) % r.n
}

func (r *lineRing) lines() []evidence.LogLine {
	out := make([]evidence.LogLine, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// ---- helpers shared by the logs, changes, cloudwatch, code, knowledge and
// write tools (prefixed ev to keep clear of other catalog files).

// evSchema builds an object JSON Schema from the properties object text,
// with the required names and additionalProperties false.
func evSchema(props string, required ...string) json.RawMessage {
	var p map[string]any
	if err := json.Unmarshal([]byte(props), &p); err != nil {
		panic("tools: bad schema properties: " + err.Error())
	}
	s := map[string]any{"type": "object", "properties": p, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	b, _ := json.Marshal(s)
	return b
}

// evNotConfigured is the data-gap error of a tool whose integration is
// absent.
func evNotConfigured(integration, key string) error {
	return &evidence.Error{Source: integration, Code: evidence.CodeNotConfigured,
		Err: fmt.Errorf("%s is not configured for this team (set tools.%s)", integration, key)}
}

// evLimit bounds n to (0, max], defaulting to def.
func evLimit(n, def, maxN int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxN)
}

// evTime parses an RFC 3339 time or a duration back from the
// investigation's clock ("1h", "30m", "2d", "now").
func evTime(env *Env, s string) (time.Time, error) {
	var src *evidence.Sources
	if env != nil {
		src = env.Sources
	}
	now := src.Clock()
	s = strings.TrimSpace(s)
	if s == "" || s == "now" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := evDuration(strings.TrimPrefix(s, "-"))
	if err != nil {
		return time.Time{}, evidence.Errorf("arguments", evidence.CodeInvalid, "time %q: want an RFC 3339 time or a duration such as 1h, 30m or 2d", s)
	}
	return now.Add(-d), nil
}

func evDuration(s string) (time.Duration, error) {
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || n < 0 {
			return 0, errors.New("bad duration")
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

// evWindow parses since/until; since defaults to one hour before until,
// until to now.
func evWindow(env *Env, since, until string) (time.Time, time.Time, error) {
	return evWindowDefault(env, since, until, time.Hour)
}

func evWindowDefault(env *Env, since, until string, def time.Duration) (time.Time, time.Time, error) {
	u, err := evTime(env, until)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	s := u.Add(-def)
	if since != "" {
		if s, err = evTime(env, since); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	if s.After(u) {
		return time.Time{}, time.Time{}, evidence.Errorf("arguments", evidence.CodeInvalid, "window start %s is after its end %s", s.Format(time.RFC3339), u.Format(time.RFC3339))
	}
	return s, u, nil
}
