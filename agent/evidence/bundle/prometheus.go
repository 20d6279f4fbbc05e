package bundle

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The bundle's metrics are prometheus/*.om: OpenMetrics text with a
// timestamp (epoch seconds) on every sample, the input of
// `promtool tsdb create-blocks-from openmetrics`. They are parsed once, on
// first use, into memory (prometheus_storage.go serves them as a
// storage.Queryable), and queried with Prometheus's own PromQL engine
// (github.com/prometheus/prometheus/promql): every function, operator,
// aggregation and modifier of PromQL, with a 5-minute lookback, as a
// Prometheus server with the promql-experimental-functions feature answers
// (see docs/bundles.md and docs/decisions.md).

const (
	promDir        = "prometheus"
	lookbackDelta  = 5 * time.Minute
	maxRangePoints = 11000 // Prometheus's limit of points per series
	// queryTimeout and maxQuerySamples are Prometheus's defaults
	// (--query.timeout, --query.max-samples).
	queryTimeout    = 2 * time.Minute
	maxQuerySamples = 50_000_000
	// subqueryStep is the step of subqueries written without one
	// (x[30m:]): Prometheus's default evaluation_interval.
	subqueryStep = time.Minute
)

// promParser parses PromQL as the engine does (experimental functions and
// binary-operator fill modifiers enabled).
var promParser = parser.NewParser(parser.Options{EnableExperimentalFunctions: true, EnableBinopFillModifiers: true})

// promEngine is shared by every bundle: the engine is safe for concurrent
// queries and holds no data of its own.
var promEngine = sync.OnceValue(func() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		MaxSamples:               maxQuerySamples,
		Timeout:                  queryTimeout,
		LookbackDelta:            lookbackDelta,
		NoStepSubqueryIntervalFn: func(int64) int64 { return subqueryStep.Milliseconds() },
		EnableAtModifier:         true,
		EnableNegativeOffset:     true,
		Parser:                   promParser,
	})
})

// metrics returns the bundle's Metrics source, or nil when the bundle has none.
func (b *Bundle) metrics() evidence.Metrics {
	files, err := fs.Glob(b.FS, promDir+"/*.om")
	if err != nil || len(files) == 0 {
		return nil
	}
	slices.Sort(files)
	return &promBundle{fsys: b.FS, files: files}
}

type promBundle struct {
	fsys  fs.FS
	files []string

	once sync.Once
	db   *promDB
	err  error
}

var _ evidence.Metrics = (*promBundle)(nil)

func (p *promBundle) load() (*promDB, error) {
	p.once.Do(func() {
		byKey := map[string]*promSeries{}
		for _, f := range p.files {
			if err := parseOpenMetricsFile(p.fsys, f, byKey); err != nil {
				p.err = err
				return
			}
		}
		p.db = newPromDB(byKey)
	})
	return p.db, p.err
}

// labelsKey is the canonical string of a label set: sorted name="value".
func labelsKey(l evidence.Labels) string {
	names := make([]string, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l[k]))
	}
	return b.String()
}

// ---- OpenMetrics text parser ----

func parseOpenMetricsFile(fsys fs.FS, name string, byKey map[string]*promSeries) error {
	f, err := fsys.Open(name)
	if err != nil {
		return &evidence.Error{Source: "prometheus", Code: evidence.CodeUnavailable, File: name, Err: err}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lineNo := 0
	bad := func(format string, args ...any) error {
		return &evidence.Error{Source: "prometheus", Code: evidence.CodeMalformed, File: name, Line: lineNo, Err: fmt.Errorf(format, args...)}
	}
	// byText maps a sample line's series text (name{labels}, as written)
	// to its series: the lines of one series usually repeat it verbatim, so
	// its labels are parsed once.
	byText := map[string]*promSeries{}
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] == '#' {
			fields := strings.Fields(line)
			if len(fields) >= 2 && fields[1] == "EOF" {
				return nil
			}
			if len(fields) >= 2 && fields[1] == "TYPE" {
				if len(fields) != 4 {
					return bad("want \"# TYPE <name> <type>\"")
				}
				switch fields[3] {
				case "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset", "unknown", "untyped":
				default:
					return bad("unknown metric type %q", fields[3])
				}
			}
			continue // HELP, UNIT and comments
		}
		text, rest, err := splitSeries(line)
		if err != nil {
			return bad("%v", err)
		}
		s, ok := byText[text]
		if !ok {
			lbls, err := parseSeries(text)
			if err != nil {
				return bad("%v", err)
			}
			key := labelsKey(lbls)
			if s, ok = byKey[key]; !ok {
				s = &promSeries{labels: lbls}
				byKey[key] = s
			}
			byText[strings.Clone(text)] = s
		}
		value, ts, err := parseValue(line, rest)
		if err != nil {
			return bad("%v", err)
		}
		s.ts = append(s.ts, ts)
		s.vs = append(s.vs, value)
	}
	if err := sc.Err(); err != nil {
		lineNo++
		return bad("%v", err)
	}
	return nil
}

// splitSeries splits a sample line `name{labels} value timestamp` after its
// series text.
func splitSeries(line string) (string, string, error) {
	i := 0
	for i < len(line) && isMetricNameChar(rune(line[i]), i == 0) {
		i++
	}
	if i == 0 {
		return "", "", fmt.Errorf("want a metric name at the start of %q", clip(line))
	}
	if i < len(line) && line[i] == '{' {
		inQuote := false
		for i++; i < len(line); i++ {
			switch c := line[i]; {
			case inQuote && c == '\\':
				i++
			case c == '"':
				inQuote = !inQuote
			case !inQuote && c == '}':
				return line[:i+1], line[i+1:], nil
			}
		}
		return "", "", fmt.Errorf("unterminated label set in %q", clip(line))
	}
	return line[:i], line[i:], nil
}

// parseSeries parses `name{labels}`.
func parseSeries(text string) (evidence.Labels, error) {
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return evidence.Labels{"__name__": text}, nil
	}
	lbls := evidence.Labels{"__name__": text[:i]}
	m, n, err := parseLabelBody(text[i+1:])
	if err != nil {
		return nil, err
	}
	if i+1+n != len(text) {
		return nil, fmt.Errorf("unexpected text after the labels: %q", clip(text[i+1+n:]))
	}
	for k, v := range m {
		if k == "__name__" {
			return nil, fmt.Errorf("label __name__ is reserved")
		}
		lbls[k] = v
	}
	return lbls, nil
}

// parseValue parses ` value timestamp [# exemplar]`, the rest of line.
func parseValue(line, rest string) (float64, int64, error) {
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return 0, 0, fmt.Errorf("want a space after the series in %q", clip(line))
	}
	if ex := strings.Index(rest, " # "); ex >= 0 { // exemplar
		rest = rest[:ex]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return 0, 0, fmt.Errorf("sample %q has no value", clip(line))
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, 0, fmt.Errorf("bad sample value %q", fields[0])
	}
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("sample %q has no timestamp (bundle metrics need epoch-second timestamps)", clip(line))
	}
	if len(fields) > 2 {
		return 0, 0, fmt.Errorf("unexpected text after the timestamp: %q", fields[2])
	}
	sec, err := strconv.ParseFloat(fields[1], 64)
	if err != nil || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return 0, 0, fmt.Errorf("bad timestamp %q (want epoch seconds)", fields[1])
	}
	return v, int64(math.Round(sec * 1000)), nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func isMetricNameChar(r rune, first bool) bool {
	return r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || !first && r >= '0' && r <= '9'
}

// parseLabelBody parses `a="x",b="y"}` and returns the labels and the bytes
// consumed (through the closing brace).
func parseLabelBody(s string) (map[string]string, int, error) {
	m := map[string]string{}
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == '}' {
			return m, i + 1, nil
		}
		j := i
		for j < len(s) && isMetricNameChar(rune(s[j]), j == i) && s[j] != ':' {
			j++
		}
		if j == i {
			return nil, 0, fmt.Errorf("bad label name at %q", clip(s[i:]))
		}
		name := s[i:j]
		if j >= len(s) || s[j] != '=' || j+1 >= len(s) || s[j+1] != '"' {
			return nil, 0, fmt.Errorf("want %s=\"value\"", name)
		}
		j += 2
		var b strings.Builder
		for ; ; j++ {
			if j >= len(s) {
				return nil, 0, fmt.Errorf("unterminated value of label %s", name)
			}
			c := s[j]
			if c == '"' {
				break
			}
			if c == '\\' && j+1 < len(s) {
				j++
				switch s[j] {
				case 'n':
					b.WriteByte('\n')
				case '\\', '"':
					b.WriteByte(s[j])
				default:
					return nil, 0, fmt.Errorf("bad escape \\%c in label %s", s[j], name)
				}
				continue
			}
			b.WriteByte(c)
		}
		if _, dup := m[name]; dup {
			return nil, 0, fmt.Errorf("duplicate label %s", name)
		}
		m[name] = b.String()
		i = j + 1
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		if i < len(s) && s[i] == '}' {
			return m, i + 1, nil
		}
		return nil, 0, fmt.Errorf("want , or } after label %s", name)
	}
}

// ---- evidence.Metrics ----

// Query evaluates expr at one instant.
func (p *promBundle) Query(ctx context.Context, expr string, at time.Time) ([]evidence.Series, error) {
	asked := fmt.Sprintf("query %q at %s", expr, at.UTC().Format(time.RFC3339))
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	q, err := promEngine().NewInstantQuery(ctx, db, nil, expr, at)
	if err != nil {
		return nil, engineErr(ctx, asked, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, engineErr(ctx, asked, res.Err)
	}
	return toSeries(asked, res.Value, keepsOrder(q.Statement()))
}

// QueryRange evaluates expr at start, start+step, ... up to end, as the
// Prometheus query_range API does (no alignment of start to step).
func (p *promBundle) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]evidence.Series, error) {
	asked := fmt.Sprintf("query_range %q from %s to %s step %s", expr, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), step)
	if step <= 0 {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: step must be positive", asked)
	}
	if end.Before(start) {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: end is before start", asked)
	}
	if n := end.Sub(start)/step + 1; n > maxRangePoints {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: %d points per series exceed the limit of %d: use a larger step", asked, n, maxRangePoints)
	}
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	q, err := promEngine().NewRangeQuery(ctx, db, nil, expr, start, end, step)
	if err != nil {
		return nil, engineErr(ctx, asked, err)
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return nil, engineErr(ctx, asked, res.Err)
	}
	return toSeries(asked, res.Value, false)
}

// SeriesSet lists the series matching a selector with samples in [start, end].
func (p *promBundle) SeriesSet(ctx context.Context, match string, start, end time.Time) ([]evidence.Labels, error) {
	var ms []*labels.Matcher
	if strings.TrimSpace(match) != "" {
		var err error
		if ms, err = promParser.ParseMetricSelector(match); err != nil {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "match must be a series selector such as up{job=\"api\"}, not %q: %v", match, err)
		}
	}
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	var out []evidence.Labels
	for _, s := range db.selectSeries(ms) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if ts, _ := s.window(start.UnixMilli(), end.UnixMilli()); len(ts) > 0 {
			out = append(out, cloneLabels(s.labels))
		}
	}
	sortLabelSets(out, func(l evidence.Labels) evidence.Labels { return l })
	return out, nil
}

// engineErr is the engine's reason for refusing or failing a query,
// prefixed by what was asked. A cancelled caller gets its context's error.
func engineErr(ctx context.Context, asked string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var timeout promql.ErrQueryTimeout
	var tooMany promql.ErrTooManySamples
	switch {
	case errors.As(err, &timeout):
		return evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: took more than %s: narrow the selectors or the window", asked, queryTimeout)
	case errors.As(err, &tooMany):
		return evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: %v: narrow the selectors, the window or the step", asked, err)
	}
	return &evidence.Error{Source: "prometheus", Code: evidence.CodeInvalid, Err: fmt.Errorf("%s: %w", asked, err)}
}

// keepsOrder reports whether an instant query's result order is part of
// its answer (sort, sort_desc, sort_by_label, sort_by_label_desc): other
// results are sorted by labels, as the live backend sorts them.
func keepsOrder(st parser.Statement) bool {
	es, ok := st.(*parser.EvalStmt)
	if !ok {
		return false
	}
	e := es.Expr
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			break
		}
		e = p.Expr
	}
	call, ok := e.(*parser.Call)
	if !ok {
		return false
	}
	switch call.Func.Name {
	case "sort", "sort_desc", "sort_by_label", "sort_by_label_desc":
		return true
	}
	return false
}

// toSeries converts the engine's result.
func toSeries(asked string, v parser.Value, keepOrder bool) ([]evidence.Series, error) {
	var out []evidence.Series
	switch v := v.(type) {
	case promql.Vector:
		out = make([]evidence.Series, 0, len(v))
		for _, s := range v {
			if s.H != nil {
				continue // native histograms: the bundle's OpenMetrics has none
			}
			out = append(out, evidence.Series{Labels: toLabels(s.Metric), Points: []evidence.Point{{T: time.UnixMilli(s.T).UTC(), V: s.F}}})
		}
	case promql.Matrix:
		out = make([]evidence.Series, 0, len(v))
		for _, s := range v {
			if len(s.Floats) == 0 {
				continue
			}
			pts := make([]evidence.Point, len(s.Floats))
			for i, p := range s.Floats {
				pts[i] = evidence.Point{T: time.UnixMilli(p.T).UTC(), V: p.F}
			}
			out = append(out, evidence.Series{Labels: toLabels(s.Metric), Points: pts})
		}
	case promql.Scalar:
		return []evidence.Series{{Labels: evidence.Labels{}, Points: []evidence.Point{{T: time.UnixMilli(v.T).UTC(), V: v.V}}}}, nil
	case promql.String:
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: the query returned a string, not series", asked)
	default:
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: unexpected result type %T", asked, v)
	}
	if !keepOrder {
		sortLabelSets(out, func(s evidence.Series) evidence.Labels { return s.Labels })
	}
	return out, nil
}

func toLabels(l labels.Labels) evidence.Labels {
	out := make(evidence.Labels, l.Len())
	l.Range(func(x labels.Label) { out[x.Name] = x.Value })
	return out
}

func cloneLabels(l evidence.Labels) evidence.Labels {
	out := make(evidence.Labels, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// sortLabelSets sorts items by their label sets in the order of the live
// backend (the text of model.LabelSet).
func sortLabelSets[T any](items []T, of func(T) evidence.Labels) {
	if len(items) < 2 {
		return
	}
	type keyed struct {
		key  string
		item T
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		ls := make(model.LabelSet, len(of(it)))
		for k, v := range of(it) {
			ls[model.LabelName(k)] = model.LabelValue(v)
		}
		ks[i] = keyed{ls.String(), it}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		items[i] = ks[i].item
	}
}
