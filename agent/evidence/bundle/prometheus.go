package bundle

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The bundle's metrics are prometheus/*.om: OpenMetrics text with a
// timestamp (epoch seconds) on every sample, the input of
// `promtool tsdb create-blocks-from openmetrics`. They are parsed once, on
// first use, into memory, and queried with a PromQL subset evaluated with
// Prometheus's semantics (see docs/bundles.md):
//
//   - selectors `name{label="v", l!="v", l=~"re", l!~"re"}`, `offset`;
//     instant selectors look back 5 minutes; range selectors `[5m]` select
//     the samples in the left-open window (t-5m, t], as Prometheus 3 does;
//   - rate, irate, increase, delta (Prometheus extrapolation), the
//     *_over_time family (avg, min, max, sum, count, last);
//   - histogram_quantile, abs, ceil, floor, sqrt, exp, ln, log2, log10,
//     clamp_min, clamp_max, scalar, vector, time;
//   - sum, avg, min, max, count, stddev, stdvar, topk, bottomk, each with
//     `by (...)` or `without (...)`;
//   - + - * / % ^ and comparisons (with `bool`) between scalars and
//     vectors, one-to-one vector matching with `on (...)`/`ignoring (...)`.
//
// Anything else (subqueries, and/or/unless, group_left/right, other
// functions) is an invalid-query error naming the construct.

const (
	promDir        = "prometheus"
	lookbackDelta  = 5 * time.Minute
	maxRangePoints = 11000 // Prometheus's limit of points per series
)

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

type promSeries struct {
	labels evidence.Labels
	key    string
	ts     []int64 // milliseconds, ascending
	vs     []float64
}

type promDB struct {
	series []*promSeries // sorted by key
	byName map[string][]*promSeries
}

func (p *promBundle) load() (*promDB, error) {
	p.once.Do(func() {
		db := &promDB{byName: map[string][]*promSeries{}}
		byKey := map[string]*promSeries{}
		for _, f := range p.files {
			if err := parseOpenMetricsFile(p.fsys, f, byKey); err != nil {
				p.err = err
				return
			}
		}
		for _, s := range byKey {
			s.sortDedupe()
			db.series = append(db.series, s)
		}
		slices.SortFunc(db.series, func(a, b *promSeries) int { return cmp.Compare(a.key, b.key) })
		for _, s := range db.series {
			n := s.labels["__name__"]
			db.byName[n] = append(db.byName[n], s)
		}
		p.db = db
	})
	return p.db, p.err
}

func (s *promSeries) sortDedupe() {
	if sort.SliceIsSorted(s.ts, func(i, j int) bool { return s.ts[i] < s.ts[j] }) {
		// common case; still drop duplicate timestamps (the last one wins)
	} else {
		idx := make([]int, len(s.ts))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return s.ts[idx[a]] < s.ts[idx[b]] })
		ts, vs := make([]int64, len(idx)), make([]float64, len(idx))
		for i, j := range idx {
			ts[i], vs[i] = s.ts[j], s.vs[j]
		}
		s.ts, s.vs = ts, vs
	}
	w := 0
	for i := range s.ts {
		if w > 0 && s.ts[w-1] == s.ts[i] {
			s.vs[w-1] = s.vs[i]
			continue
		}
		s.ts[w], s.vs[w] = s.ts[i], s.vs[i]
		w++
	}
	s.ts, s.vs = s.ts[:w], s.vs[:w]
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
		lbls, value, ts, err := parseSample(line)
		if err != nil {
			return bad("%v", err)
		}
		key := labelsKey(lbls)
		s, ok := byKey[key]
		if !ok {
			s = &promSeries{labels: lbls, key: key}
			byKey[key] = s
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

// parseSample parses `name{labels} value timestamp [# exemplar]`.
func parseSample(line string) (evidence.Labels, float64, int64, error) {
	i := 0
	for i < len(line) && isMetricNameChar(rune(line[i]), i == 0) {
		i++
	}
	if i == 0 {
		return nil, 0, 0, fmt.Errorf("want a metric name at the start of %q", clip(line))
	}
	lbls := evidence.Labels{"__name__": line[:i]}
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		m, n, err := parseLabelBody(rest[1:])
		if err != nil {
			return nil, 0, 0, err
		}
		for k, v := range m {
			if k == "__name__" {
				return nil, 0, 0, fmt.Errorf("label __name__ is reserved")
			}
			lbls[k] = v
		}
		rest = rest[1+n:]
	}
	if ex := strings.Index(rest, " # "); ex >= 0 { // exemplar
		rest = rest[:ex]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil, 0, 0, fmt.Errorf("sample %q has no value", clip(line))
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bad sample value %q", fields[0])
	}
	if len(fields) < 2 {
		return nil, 0, 0, fmt.Errorf("sample %q has no timestamp (bundle metrics need epoch-second timestamps)", clip(line))
	}
	if len(fields) > 2 {
		return nil, 0, 0, fmt.Errorf("unexpected text after the timestamp: %q", fields[2])
	}
	sec, err := strconv.ParseFloat(fields[1], 64)
	if err != nil || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return nil, 0, 0, fmt.Errorf("bad timestamp %q (want epoch seconds)", fields[1])
	}
	return lbls, v, int64(math.Round(sec * 1000)), nil
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
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	n, err := parsePromQL(expr)
	if err != nil {
		return nil, err
	}
	ev := &promEval{db: db, ctx: ctx}
	t := at.UnixMilli()
	if sel, ok := n.(*vectorSel); ok && sel.rng > 0 {
		rows, err := ev.matrix(sel, t)
		if err != nil {
			return nil, err
		}
		out := make([]evidence.Series, 0, len(rows))
		for _, r := range rows {
			s := evidence.Series{Labels: r.labels}
			for i := range r.ts {
				s.Points = append(s.Points, evidence.Point{T: time.UnixMilli(r.ts[i]).UTC(), V: r.vs[i]})
			}
			out = append(out, s)
		}
		sortSeries(out)
		return out, nil
	}
	v, err := ev.eval(n, t)
	if err != nil {
		return nil, err
	}
	pt := time.UnixMilli(t).UTC()
	switch v := v.(type) {
	case scalarVal:
		return []evidence.Series{{Labels: evidence.Labels{}, Points: []evidence.Point{{T: pt, V: float64(v)}}}}, nil
	case vectorVal:
		out := make([]evidence.Series, 0, len(v))
		for _, s := range v {
			out = append(out, evidence.Series{Labels: s.labels, Points: []evidence.Point{{T: pt, V: s.v}}})
		}
		sortSeries(out)
		return out, nil
	}
	return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "unexpected result type")
}

// QueryRange evaluates expr at start, start+step, ... up to end, as the
// Prometheus query_range API does (no alignment of start to step).
func (p *promBundle) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]evidence.Series, error) {
	if step <= 0 {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "step must be positive")
	}
	if end.Before(start) {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "end %s is before start %s", end.Format(time.RFC3339), start.Format(time.RFC3339))
	}
	if n := end.Sub(start)/step + 1; n > maxRangePoints {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%d points per series exceed the limit of %d: use a larger step", n, maxRangePoints)
	}
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	n, err := parsePromQL(expr)
	if err != nil {
		return nil, err
	}
	if sel, ok := n.(*vectorSel); ok && sel.rng > 0 {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "a range vector (%s) cannot be a range query's result: wrap it in a function such as rate()", expr)
	}
	ev := &promEval{db: db, ctx: ctx}
	acc := map[string]*evidence.Series{}
	for t := start.UnixMilli(); t <= end.UnixMilli(); t += step.Milliseconds() {
		v, err := ev.eval(n, t)
		if err != nil {
			return nil, err
		}
		pt := time.UnixMilli(t).UTC()
		add := func(l evidence.Labels, x float64) {
			k := labelsKey(l)
			s, ok := acc[k]
			if !ok {
				s = &evidence.Series{Labels: l}
				acc[k] = s
			}
			s.Points = append(s.Points, evidence.Point{T: pt, V: x})
		}
		switch v := v.(type) {
		case scalarVal:
			add(evidence.Labels{}, float64(v))
		case vectorVal:
			for _, s := range v {
				add(s.labels, s.v)
			}
		}
	}
	out := make([]evidence.Series, 0, len(acc))
	for _, s := range acc {
		out = append(out, *s)
	}
	sortSeries(out)
	return out, nil
}

// SeriesSet lists the series matching a selector with samples in [start, end].
func (p *promBundle) SeriesSet(ctx context.Context, match string, start, end time.Time) ([]evidence.Labels, error) {
	db, err := p.load()
	if err != nil {
		return nil, err
	}
	var sel *vectorSel
	if strings.TrimSpace(match) != "" {
		n, err := parsePromQL(match)
		if err != nil {
			return nil, err
		}
		s, ok := n.(*vectorSel)
		if !ok || s.rng > 0 || s.offset != 0 {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "match must be a series selector such as up{job=\"api\"}, not %q", match)
		}
		sel = s
	}
	lo, hi := start.UnixMilli(), end.UnixMilli()
	var out []evidence.Labels
	for _, s := range db.series {
		if sel != nil && !sel.matches(s.labels) {
			continue
		}
		i := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] >= lo })
		if i < len(s.ts) && s.ts[i] <= hi {
			out = append(out, cloneLabels(s.labels))
		}
	}
	return out, nil
}

func sortSeries(s []evidence.Series) {
	slices.SortFunc(s, func(a, b evidence.Series) int { return cmp.Compare(labelsKey(a.Labels), labelsKey(b.Labels)) })
}

func cloneLabels(l evidence.Labels) evidence.Labels {
	out := make(evidence.Labels, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// ---- PromQL: lexer ----

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tDuration
	tOp // punctuation and operators
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func lexPromQL(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case unicode.IsSpace(rune(c)):
			i++
		case c == '#': // comment to end of line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			var b strings.Builder
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(s[j])
					}
					continue
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at position %d", i)
			}
			out = append(out, token{tString, b.String(), i})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (isAlnum(s[j]) || s[j] == '.' || (s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E') && !strings.ContainsAny(s[i:j], "xX")) {
				j++
			}
			text := s[i:j]
			if _, err := strconv.ParseFloat(text, 64); err == nil {
				out = append(out, token{tNumber, text, i})
			} else if _, err := parsePromDuration(text); err == nil {
				out = append(out, token{tDuration, text, i})
			} else {
				return nil, fmt.Errorf("bad number or duration %q at position %d", text, i)
			}
			i = j
		case isAlnum(c) || c == ':':
			j := i
			for j < len(s) && (isAlnum(s[j]) || s[j] == ':') {
				j++
			}
			out = append(out, token{tIdent, s[i:j], i})
			i = j
		default:
			two := ""
			if i+1 < len(s) {
				two = s[i : i+2]
			}
			switch two {
			case "!=", "=~", "!~", "==", ">=", "<=":
				out = append(out, token{tOp, two, i})
				i += 2
				continue
			}
			if strings.IndexByte("(){}[],=+-*/%^<>@", c) < 0 {
				return nil, fmt.Errorf("unexpected character %q at position %d", c, i)
			}
			out = append(out, token{tOp, string(c), i})
			i++
		}
	}
	return append(out, token{tEOF, "", len(s)}), nil
}

func isAlnum(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

var durUnits = map[string]time.Duration{
	"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
	"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour,
}

// parsePromDuration parses Prometheus durations such as 5m, 1h30m, 2d, 100ms.
func parsePromDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("empty duration")
	}
	var total time.Duration
	for s != "" {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == 0 {
			return 0, fmt.Errorf("bad duration")
		}
		n, _ := strconv.ParseInt(s[:j], 10, 64)
		s = s[j:]
		k := 0
		for k < len(s) && (s[k] < '0' || s[k] > '9') {
			k++
		}
		u, ok := durUnits[s[:k]]
		if !ok {
			return 0, fmt.Errorf("bad duration unit %q", s[:k])
		}
		total += time.Duration(n) * u
		s = s[k:]
	}
	return total, nil
}

// ---- PromQL: parser ----

type promNode any

type numberLit struct{ v float64 }

type stringLit struct{ s string }

type labelMatcher struct {
	name, op, value string
	re              *regexp.Regexp
}

func (m *labelMatcher) matches(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~":
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

type vectorSel struct {
	name     string
	matchers []*labelMatcher
	rng      time.Duration // > 0 for a range selector
	offset   time.Duration
}

func (s *vectorSel) matches(l evidence.Labels) bool {
	for _, m := range s.matchers {
		if !m.matches(l[m.name]) {
			return false
		}
	}
	return true
}

type callNode struct {
	fn   string
	args []promNode
}

type aggrNode struct {
	op       string
	grouping []string
	without  bool
	param    promNode
	expr     promNode
}

type binNode struct {
	op        string
	lhs, rhs  promNode
	boolMod   bool
	on        bool
	hasMatch  bool
	matchLbls []string
}

type unaryNeg struct{ expr promNode }

type promParser struct {
	toks []token
	i    int
	src  string
}

func unsupported(format string, args ...any) error {
	return evidence.Errorf("prometheus", evidence.CodeInvalid, "unsupported in bundle PromQL: "+format, args...)
}

func parsePromQL(expr string) (promNode, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "parsing %q: %v", expr, err)
	}
	p := &promParser{toks: toks, src: expr}
	n, err := p.expr(0)
	if err != nil {
		return nil, wrapParse(expr, err)
	}
	if p.peek().kind != tEOF {
		return nil, wrapParse(expr, fmt.Errorf("unexpected %q at position %d", p.peek().text, p.peek().pos))
	}
	if _, ok := n.(stringLit); ok {
		return nil, unsupported("string expressions")
	}
	return n, nil
}

func wrapParse(expr string, err error) error {
	var e *evidence.Error
	if errors.As(err, &e) {
		return err
	}
	return evidence.Errorf("prometheus", evidence.CodeInvalid, "parsing %q: %v", expr, err)
}

func (p *promParser) peek() token { return p.toks[p.i] }
func (p *promParser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *promParser) expect(op string) error {
	t := p.next()
	if t.kind != tOp || t.text != op {
		if t.kind == tEOF {
			return fmt.Errorf("want %q, found the end of the expression", op)
		}
		return fmt.Errorf("want %q at position %d, found %q", op, t.pos, t.text)
	}
	return nil
}

// binary precedence, low to high
var binPrec = map[string]int{
	"or": 1, "and": 2, "unless": 2,
	"==": 3, "!=": 3, "<": 3, ">": 3, "<=": 3, ">=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5, "atan2": 5,
	"^": 6,
}

func (p *promParser) binOp() (string, int, bool) {
	t := p.peek()
	if t.kind == tOp || t.kind == tIdent && (t.text == "and" || t.text == "or" || t.text == "unless" || t.text == "atan2") {
		if prec, ok := binPrec[t.text]; ok {
			return t.text, prec, true
		}
	}
	return "", 0, false
}

func (p *promParser) expr(minPrec int) (promNode, error) {
	lhs, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op, prec, ok := p.binOp()
		if !ok || prec < minPrec {
			return lhs, nil
		}
		p.next()
		switch op {
		case "and", "or", "unless":
			return nil, unsupported("the set operator %q", op)
		case "atan2":
			return nil, unsupported("the operator atan2")
		}
		b := &binNode{op: op, lhs: lhs}
		if p.peek().kind == tIdent && p.peek().text == "bool" {
			p.next()
			b.boolMod = true
		}
		if t := p.peek(); t.kind == tIdent && (t.text == "on" || t.text == "ignoring") {
			p.next()
			b.hasMatch, b.on = true, t.text == "on"
			if b.matchLbls, err = p.labelList(); err != nil {
				return nil, err
			}
			if t := p.peek(); t.kind == tIdent && (t.text == "group_left" || t.text == "group_right") {
				return nil, unsupported("%s (many-to-one matching)", t.text)
			}
		}
		next := prec + 1
		if op == "^" { // right-associative
			next = prec
		}
		if b.rhs, err = p.expr(next); err != nil {
			return nil, err
		}
		lhs = b
	}
}

func (p *promParser) unary() (promNode, error) {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "+") {
		p.next()
		n, err := p.expr(binPrec["^"]) // unary binds looser than ^ only
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return n, nil
		}
		if lit, ok := n.(numberLit); ok {
			return numberLit{-lit.v}, nil
		}
		return unaryNeg{n}, nil
	}
	return p.postfix()
}

func (p *promParser) postfix() (promNode, error) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && t.text == "[":
			sel, ok := n.(*vectorSel)
			if !ok || sel.rng > 0 {
				return nil, fmt.Errorf("a range [..] must follow a series selector (position %d)", t.pos)
			}
			p.next()
			d := p.next()
			if d.kind != tDuration && !(d.kind == tNumber && isInt(d.text)) {
				return nil, fmt.Errorf("want a duration such as 5m in [..] at position %d", d.pos)
			}
			if p.peek().kind == tOp && p.peek().text == ":" || p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ":") {
				return nil, unsupported("subqueries")
			}
			if sel.rng, err = durationOf(d); err != nil {
				return nil, err
			}
			if p.peek().kind == tIdent && strings.HasPrefix(p.peek().text, ":") {
				return nil, unsupported("subqueries")
			}
			if err := p.expect("]"); err != nil {
				if strings.Contains(err.Error(), `":`) {
					return nil, unsupported("subqueries")
				}
				return nil, err
			}
			if sel.rng <= 0 {
				return nil, fmt.Errorf("range must be positive")
			}
		case t.kind == tIdent && t.text == "offset":
			sel, ok := n.(*vectorSel)
			if !ok {
				return nil, unsupported("offset on anything but a selector")
			}
			p.next()
			neg := false
			if p.peek().kind == tOp && p.peek().text == "-" {
				p.next()
				neg = true
			}
			d := p.next()
			if sel.offset, err = durationOf(d); err != nil {
				return nil, err
			}
			if neg {
				sel.offset = -sel.offset
			}
		case t.kind == tOp && t.text == "@":
			return nil, unsupported("the @ modifier")
		default:
			return n, nil
		}
	}
}

func isInt(s string) bool { _, err := strconv.Atoi(s); return err == nil }

func durationOf(t token) (time.Duration, error) {
	if t.kind == tNumber && isInt(t.text) {
		n, _ := strconv.Atoi(t.text)
		return time.Duration(n) * time.Second, nil
	}
	if t.kind != tDuration {
		return 0, fmt.Errorf("want a duration at position %d, found %q", t.pos, t.text)
	}
	return parsePromDuration(t.text)
}

var aggrOps = map[string]bool{"sum": true, "avg": true, "min": true, "max": true, "count": true, "stddev": true, "stdvar": true, "topk": true, "bottomk": true}
var unsupportedAggr = map[string]bool{"quantile": true, "count_values": true, "group": true, "limitk": true, "limit_ratio": true}

var promFuncs = map[string]int{ // name -> arg count (-1: 0 or 1)
	"rate": 1, "irate": 1, "increase": 1, "delta": 1,
	"avg_over_time": 1, "min_over_time": 1, "max_over_time": 1, "sum_over_time": 1, "count_over_time": 1, "last_over_time": 1,
	"histogram_quantile": 2, "abs": 1, "ceil": 1, "floor": 1, "sqrt": 1, "exp": 1, "ln": 1, "log2": 1, "log10": 1,
	"clamp_min": 2, "clamp_max": 2, "scalar": 1, "vector": 1, "time": 0,
}

var rangeFuncs = map[string]bool{"rate": true, "irate": true, "increase": true, "delta": true,
	"avg_over_time": true, "min_over_time": true, "max_over_time": true, "sum_over_time": true, "count_over_time": true, "last_over_time": true}

func (p *promParser) primary() (promNode, error) {
	t := p.next()
	switch t.kind {
	case tNumber:
		v, _ := strconv.ParseFloat(t.text, 64)
		return numberLit{v}, nil
	case tString:
		return stringLit{t.text}, nil
	case tDuration:
		return nil, fmt.Errorf("unexpected duration %q at position %d", t.text, t.pos)
	case tEOF:
		return nil, fmt.Errorf("unexpected end of the expression")
	case tOp:
		switch t.text {
		case "(":
			n, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			return n, p.expect(")")
		case "{":
			p.i--
			return p.selector("")
		}
		return nil, fmt.Errorf("unexpected %q at position %d", t.text, t.pos)
	}
	// identifier: Inf/NaN, aggregation, function or metric name
	switch strings.ToLower(t.text) {
	case "inf":
		return numberLit{math.Inf(1)}, nil
	case "nan":
		return numberLit{math.NaN()}, nil
	}
	next := p.peek()
	if aggrOps[t.text] && next.kind == tOp && next.text == "(" || aggrOps[t.text] && next.kind == tIdent && (next.text == "by" || next.text == "without") {
		return p.aggregation(t.text)
	}
	if unsupportedAggr[t.text] && (next.kind == tOp && next.text == "(" || next.kind == tIdent && (next.text == "by" || next.text == "without")) {
		return nil, unsupported("the aggregation %s()", t.text)
	}
	if next.kind == tOp && next.text == "(" {
		want, ok := promFuncs[t.text]
		if !ok {
			return nil, unsupported("the function %s()", t.text)
		}
		p.next()
		var args []promNode
		for !(p.peek().kind == tOp && p.peek().text == ")") {
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if p.peek().kind == tOp && p.peek().text == "," {
				p.next()
				continue
			}
			break
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if len(args) != want {
			return nil, fmt.Errorf("%s() takes %d argument(s), got %d", t.text, want, len(args))
		}
		if rangeFuncs[t.text] {
			if sel, ok := args[0].(*vectorSel); !ok || sel.rng == 0 {
				return nil, fmt.Errorf("%s() needs a range vector such as x[5m]", t.text)
			}
		}
		return &callNode{fn: t.text, args: args}, nil
	}
	switch t.text {
	case "by", "without", "on", "ignoring", "bool", "offset", "group_left", "group_right":
		return nil, fmt.Errorf("unexpected keyword %q at position %d", t.text, t.pos)
	}
	return p.selector(t.text)
}

func (p *promParser) selector(name string) (promNode, error) {
	sel := &vectorSel{name: name}
	if name != "" {
		sel.matchers = append(sel.matchers, &labelMatcher{name: "__name__", op: "=", value: name})
	}
	if t := p.peek(); t.kind == tOp && t.text == "{" {
		p.next()
		for !(p.peek().kind == tOp && p.peek().text == "}") {
			ln := p.next()
			if ln.kind != tIdent && ln.kind != tString {
				return nil, fmt.Errorf("want a label name at position %d, found %q", ln.pos, ln.text)
			}
			op := p.next()
			if op.kind != tOp || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
				return nil, fmt.Errorf("want =, !=, =~ or !~ after label %s", ln.text)
			}
			val := p.next()
			if val.kind != tString {
				return nil, fmt.Errorf("want a quoted value for label %s at position %d", ln.text, val.pos)
			}
			m := &labelMatcher{name: ln.text, op: op.text, value: val.text}
			if op.text == "=~" || op.text == "!~" {
				re, err := regexp.Compile("^(?:" + val.text + ")$")
				if err != nil {
					return nil, fmt.Errorf("label %s: bad regular expression: %v", ln.text, err)
				}
				m.re = re
			}
			sel.matchers = append(sel.matchers, m)
			if m.name == "__name__" && m.op == "=" {
				sel.name = m.value
			}
			if p.peek().kind == tOp && p.peek().text == "," {
				p.next()
			}
		}
		p.next() // }
	}
	// A selector must match something non-empty (as Prometheus demands).
	nonEmpty := false
	for _, m := range sel.matchers {
		if !m.matches("") {
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return nil, fmt.Errorf("a selector needs a metric name or a matcher that does not match the empty string")
	}
	return sel, nil
}

func (p *promParser) labelList() ([]string, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var out []string
	for !(p.peek().kind == tOp && p.peek().text == ")") {
		t := p.next()
		if t.kind != tIdent {
			return nil, fmt.Errorf("want a label name at position %d, found %q", t.pos, t.text)
		}
		out = append(out, t.text)
		if p.peek().kind == tOp && p.peek().text == "," {
			p.next()
		}
	}
	p.next()
	return out, nil
}

func (p *promParser) aggregation(op string) (promNode, error) {
	a := &aggrNode{op: op}
	var err error
	readGrouping := func() error {
		if t := p.peek(); t.kind == tIdent && (t.text == "by" || t.text == "without") {
			p.next()
			a.without = t.text == "without"
			a.grouping, err = p.labelList()
			return err
		}
		return nil
	}
	if err := readGrouping(); err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	if op == "topk" || op == "bottomk" {
		if a.param, err = p.expr(0); err != nil {
			return nil, err
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
	if a.expr, err = p.expr(0); err != nil {
		return nil, err
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if a.grouping == nil && !a.without {
		if err := readGrouping(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// ---- PromQL: evaluation ----

type scalarVal float64

type promSample struct {
	labels evidence.Labels
	v      float64
}

type vectorVal []promSample

type matrixRow struct {
	labels evidence.Labels
	ts     []int64
	vs     []float64
}

type promEval struct {
	db  *promDB
	ctx context.Context
}

func (e *promEval) candidates(sel *vectorSel) []*promSeries {
	if sel.name != "" {
		return e.db.byName[sel.name]
	}
	return e.db.series
}

// instant returns each matching series' latest sample in (t-5m, t].
func (e *promEval) instant(sel *vectorSel, t int64) vectorVal {
	t -= sel.offset.Milliseconds()
	lo := t - lookbackDelta.Milliseconds()
	var out vectorVal
	for _, s := range e.candidates(sel) {
		if !sel.matches(s.labels) {
			continue
		}
		i := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] > t }) - 1
		if i >= 0 && s.ts[i] > lo {
			out = append(out, promSample{labels: s.labels, v: s.vs[i]})
		}
	}
	return out
}

// matrix returns each matching series' samples in (t-range, t].
func (e *promEval) matrix(sel *vectorSel, t int64) ([]matrixRow, error) {
	t -= sel.offset.Milliseconds()
	lo := t - sel.rng.Milliseconds()
	var out []matrixRow
	for _, s := range e.candidates(sel) {
		if !sel.matches(s.labels) {
			continue
		}
		i := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] > lo })
		j := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] > t })
		if i < j {
			out = append(out, matrixRow{labels: s.labels, ts: s.ts[i:j], vs: s.vs[i:j]})
		}
	}
	return out, e.ctx.Err()
}

func (e *promEval) eval(n promNode, t int64) (any, error) {
	if err := e.ctx.Err(); err != nil {
		return nil, err
	}
	switch n := n.(type) {
	case numberLit:
		return scalarVal(n.v), nil
	case stringLit:
		return nil, unsupported("string values")
	case *vectorSel:
		if n.rng > 0 {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "a range vector is only allowed as a function argument (for example rate(x[5m]))")
		}
		return e.instant(n, t), nil
	case unaryNeg:
		v, err := e.eval(n.expr, t)
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case scalarVal:
			return -v, nil
		case vectorVal:
			out := make(vectorVal, len(v))
			for i, s := range v {
				out[i] = promSample{labels: dropName(s.labels), v: -s.v}
			}
			return out, nil
		}
	case *callNode:
		return e.call(n, t)
	case *aggrNode:
		return e.aggregate(n, t)
	case *binNode:
		return e.binary(n, t)
	}
	return nil, unsupported("expression %T", n)
}

func dropName(l evidence.Labels) evidence.Labels {
	if _, ok := l["__name__"]; !ok {
		return l
	}
	out := make(evidence.Labels, len(l))
	for k, v := range l {
		if k != "__name__" {
			out[k] = v
		}
	}
	return out
}

func (e *promEval) vectorArg(n promNode, t int64, fn string) (vectorVal, error) {
	v, err := e.eval(n, t)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(vectorVal)
	if !ok {
		return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s() needs an instant vector argument, got a scalar", fn)
	}
	return vec, nil
}

func (e *promEval) scalarArg(n promNode, t int64, fn string) (float64, error) {
	v, err := e.eval(n, t)
	if err != nil {
		return 0, err
	}
	s, ok := v.(scalarVal)
	if !ok {
		return 0, evidence.Errorf("prometheus", evidence.CodeInvalid, "%s needs a scalar argument, got a vector", fn)
	}
	return float64(s), nil
}

func (e *promEval) call(c *callNode, t int64) (any, error) {
	if rangeFuncs[c.fn] {
		sel := c.args[0].(*vectorSel)
		rows, err := e.matrix(sel, t)
		if err != nil {
			return nil, err
		}
		var out vectorVal
		for _, r := range rows {
			v, ok := rangeFunc(c.fn, sel, r, t)
			if !ok {
				continue
			}
			l := r.labels
			if c.fn != "last_over_time" {
				l = dropName(l)
			}
			out = append(out, promSample{labels: l, v: v})
		}
		return out, checkDuplicates(out, c.fn+"()")
	}
	switch c.fn {
	case "time":
		return scalarVal(float64(t) / 1000), nil
	case "vector":
		s, err := e.scalarArg(c.args[0], t, "vector()")
		if err != nil {
			return nil, err
		}
		return vectorVal{{labels: evidence.Labels{}, v: s}}, nil
	case "scalar":
		vec, err := e.vectorArg(c.args[0], t, c.fn)
		if err != nil {
			return nil, err
		}
		if len(vec) != 1 {
			return scalarVal(math.NaN()), nil
		}
		return scalarVal(vec[0].v), nil
	case "histogram_quantile":
		q, err := e.scalarArg(c.args[0], t, "histogram_quantile()'s first argument")
		if err != nil {
			return nil, err
		}
		vec, err := e.vectorArg(c.args[1], t, c.fn)
		if err != nil {
			return nil, err
		}
		return histogramQuantile(q, vec), nil
	case "clamp_min", "clamp_max":
		vec, err := e.vectorArg(c.args[0], t, c.fn)
		if err != nil {
			return nil, err
		}
		b, err := e.scalarArg(c.args[1], t, c.fn+"()'s second argument")
		if err != nil {
			return nil, err
		}
		out := make(vectorVal, 0, len(vec))
		for _, s := range vec {
			v := s.v
			if c.fn == "clamp_min" {
				v = math.Max(b, v)
			} else {
				v = math.Min(b, v)
			}
			out = append(out, promSample{labels: dropName(s.labels), v: v})
		}
		return out, checkDuplicates(out, c.fn+"()")
	}
	f := map[string]func(float64) float64{"abs": math.Abs, "ceil": math.Ceil, "floor": math.Floor, "sqrt": math.Sqrt,
		"exp": math.Exp, "ln": math.Log, "log2": math.Log2, "log10": math.Log10}[c.fn]
	if f == nil {
		return nil, unsupported("the function %s()", c.fn)
	}
	vec, err := e.vectorArg(c.args[0], t, c.fn)
	if err != nil {
		return nil, err
	}
	out := make(vectorVal, 0, len(vec))
	for _, s := range vec {
		out = append(out, promSample{labels: dropName(s.labels), v: f(s.v)})
	}
	return out, checkDuplicates(out, c.fn+"()")
}

func checkDuplicates(v vectorVal, what string) error {
	if len(v) < 2 {
		return nil
	}
	seen := make(map[string]bool, len(v))
	for _, s := range v {
		k := labelsKey(s.labels)
		if seen[k] {
			return evidence.Errorf("prometheus", evidence.CodeInvalid, "%s: vector cannot contain metrics with the same labelset {%s}", what, k)
		}
		seen[k] = true
	}
	return nil
}

// rangeFunc computes one range function over one series' window.
func rangeFunc(fn string, sel *vectorSel, r matrixRow, t int64) (float64, bool) {
	n := len(r.vs)
	switch fn {
	case "rate", "increase", "delta":
		return extrapolatedRate(r, t-sel.offset.Milliseconds()-sel.rng.Milliseconds(), t-sel.offset.Milliseconds(), sel.rng, fn != "delta", fn == "rate")
	case "irate":
		if n < 2 {
			return 0, false
		}
		last, prev := r.vs[n-1], r.vs[n-2]
		dt := float64(r.ts[n-1]-r.ts[n-2]) / 1000
		if dt == 0 {
			return 0, false
		}
		v := last - prev
		if last < prev {
			v = last
		}
		return v / dt, true
	case "avg_over_time":
		var sum float64
		for _, v := range r.vs {
			sum += v
		}
		return sum / float64(n), true
	case "sum_over_time":
		var sum float64
		for _, v := range r.vs {
			sum += v
		}
		return sum, true
	case "min_over_time", "max_over_time":
		m := r.vs[0]
		for _, v := range r.vs[1:] {
			if fn == "min_over_time" && (v < m || math.IsNaN(m)) || fn == "max_over_time" && (v > m || math.IsNaN(m)) {
				m = v
			}
		}
		return m, true
	case "count_over_time":
		return float64(n), true
	case "last_over_time":
		return r.vs[n-1], true
	}
	return 0, false
}

// extrapolatedRate is Prometheus's rate/increase/delta: the change over the
// samples in the window, corrected for counter resets, extrapolated to the
// window's edges unless the series seems to start or end inside it.
func extrapolatedRate(r matrixRow, rangeStart, rangeEnd int64, rng time.Duration, isCounter, isRate bool) (float64, bool) {
	n := len(r.vs)
	if n < 2 {
		return 0, false
	}
	result := r.vs[n-1] - r.vs[0]
	if isCounter {
		prev := r.vs[0]
		for _, v := range r.vs[1:] {
			if v < prev {
				result += prev
			}
			prev = v
		}
	}
	durationToStart := float64(r.ts[0]-rangeStart) / 1000
	durationToEnd := float64(rangeEnd-r.ts[n-1]) / 1000
	sampled := float64(r.ts[n-1]-r.ts[0]) / 1000
	avg := sampled / float64(n-1)
	threshold := avg * 1.1
	if durationToStart >= threshold {
		durationToStart = avg / 2
	}
	if isCounter && result > 0 && r.vs[0] >= 0 {
		if toZero := sampled * (r.vs[0] / result); toZero < durationToStart {
			durationToStart = toZero
		}
	}
	if durationToEnd >= threshold {
		durationToEnd = avg / 2
	}
	factor := (sampled + durationToStart + durationToEnd) / sampled
	if isRate {
		factor /= rng.Seconds()
	}
	return result * factor, true
}

type bucket struct {
	upper, count float64
}

// histogramQuantile is Prometheus's histogram_quantile over classic buckets.
func histogramQuantile(q float64, vec vectorVal) vectorVal {
	type group struct {
		labels  evidence.Labels
		buckets []bucket
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range vec {
		le, ok := s.labels["le"]
		if !ok {
			continue
		}
		upper, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		l := make(evidence.Labels, len(s.labels))
		for k, v := range s.labels {
			if k != "le" && k != "__name__" {
				l[k] = v
			}
		}
		k := labelsKey(l)
		g, ok := groups[k]
		if !ok {
			g = &group{labels: l}
			groups[k] = g
			order = append(order, k)
		}
		g.buckets = append(g.buckets, bucket{upper, s.v})
	}
	out := make(vectorVal, 0, len(order))
	for _, k := range order {
		g := groups[k]
		out = append(out, promSample{labels: g.labels, v: bucketQuantile(q, g.buckets)})
	}
	return out
}

func bucketQuantile(q float64, bs []bucket) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	slices.SortFunc(bs, func(a, b bucket) int { return cmp.Compare(a.upper, b.upper) })
	if !math.IsInf(bs[len(bs)-1].upper, 1) {
		return math.NaN()
	}
	// coalesce buckets with the same upper bound
	w := 0
	for i := range bs {
		if w > 0 && bs[w-1].upper == bs[i].upper {
			bs[w-1].count += bs[i].count
			continue
		}
		bs[w] = bs[i]
		w++
	}
	bs = bs[:w]
	// ensure monotonic counts
	maxCount := math.Inf(-1)
	for i := range bs {
		if bs[i].count > maxCount {
			maxCount = bs[i].count
		} else if bs[i].count < maxCount {
			bs[i].count = maxCount
		}
	}
	if len(bs) < 2 {
		return math.NaN()
	}
	observations := bs[len(bs)-1].count
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].count >= rank })
	if b == len(bs)-1 {
		return bs[len(bs)-2].upper
	}
	if b == 0 && bs[0].upper <= 0 {
		return bs[0].upper
	}
	var start float64
	end, count := bs[b].upper, bs[b].count
	if b > 0 {
		start = bs[b-1].upper
		count -= bs[b-1].count
		rank -= bs[b-1].count
	}
	return start + (end-start)*(rank/count)
}

func (e *promEval) aggregate(a *aggrNode, t int64) (any, error) {
	vec, err := e.vectorArg(a.expr, t, a.op)
	if err != nil {
		return nil, err
	}
	k := 0.0
	if a.param != nil {
		if k, err = e.scalarArg(a.param, t, a.op+"()'s first argument"); err != nil {
			return nil, err
		}
	}
	type group struct {
		labels  evidence.Labels
		members []promSample
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range vec {
		gl := evidence.Labels{}
		if a.without {
			for n, v := range s.labels {
				if n != "__name__" && !slices.Contains(a.grouping, n) {
					gl[n] = v
				}
			}
		} else {
			for _, n := range a.grouping {
				if v, ok := s.labels[n]; ok && v != "" {
					gl[n] = v
				}
			}
		}
		key := labelsKey(gl)
		g, ok := groups[key]
		if !ok {
			g = &group{labels: gl}
			groups[key] = g
			order = append(order, key)
		}
		g.members = append(g.members, s)
	}
	var out vectorVal
	for _, key := range order {
		g := groups[key]
		m := g.members
		switch a.op {
		case "topk", "bottomk":
			sorted := slices.Clone(m)
			slices.SortStableFunc(sorted, func(x, y promSample) int {
				if a.op == "topk" {
					return cmp.Compare(y.v, x.v)
				}
				return cmp.Compare(x.v, y.v)
			})
			n := int(k)
			if n > len(sorted) {
				n = len(sorted)
			}
			if n > 0 {
				out = append(out, sorted[:n]...)
			}
			continue
		}
		var v float64
		switch a.op {
		case "sum":
			for _, s := range m {
				v += s.v
			}
		case "avg":
			for _, s := range m {
				v += s.v
			}
			v /= float64(len(m))
		case "count":
			v = float64(len(m))
		case "min", "max":
			v = m[0].v
			for _, s := range m[1:] {
				if a.op == "min" && (s.v < v || math.IsNaN(v)) || a.op == "max" && (s.v > v || math.IsNaN(v)) {
					v = s.v
				}
			}
		case "stddev", "stdvar":
			var mean, m2 float64
			for i, s := range m {
				d := s.v - mean
				mean += d / float64(i+1)
				m2 += d * (s.v - mean)
			}
			v = m2 / float64(len(m))
			if a.op == "stddev" {
				v = math.Sqrt(v)
			}
		}
		out = append(out, promSample{labels: g.labels, v: v})
	}
	return out, nil
}

func (e *promEval) binary(b *binNode, t int64) (any, error) {
	lv, err := e.eval(b.lhs, t)
	if err != nil {
		return nil, err
	}
	rv, err := e.eval(b.rhs, t)
	if err != nil {
		return nil, err
	}
	cmpOp := isComparison(b.op)
	ls, lIsScalar := lv.(scalarVal)
	rs, rIsScalar := rv.(scalarVal)
	switch {
	case lIsScalar && rIsScalar:
		if cmpOp && !b.boolMod {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "comparisons between scalars need the bool modifier")
		}
		v, _ := applyOp(b.op, float64(ls), float64(rs))
		return scalarVal(v), nil
	case lIsScalar || rIsScalar:
		var vec vectorVal
		var sc float64
		if lIsScalar {
			vec, sc = rv.(vectorVal), float64(ls)
		} else {
			vec, sc = lv.(vectorVal), float64(rs)
		}
		var out vectorVal
		for _, s := range vec {
			x, y := s.v, sc
			if lIsScalar {
				x, y = sc, s.v
			}
			v, keep := applyOp(b.op, x, y)
			switch {
			case cmpOp && b.boolMod:
				out = append(out, promSample{labels: dropName(s.labels), v: v})
			case cmpOp:
				if keep {
					out = append(out, s)
				}
			default:
				out = append(out, promSample{labels: dropName(s.labels), v: v})
			}
		}
		return out, nil
	}
	lvec, rvec := lv.(vectorVal), rv.(vectorVal)
	sig := func(l evidence.Labels) string {
		m := evidence.Labels{}
		for k, v := range l {
			if k == "__name__" {
				continue
			}
			in := slices.Contains(b.matchLbls, k)
			if b.on && in || !b.on && !in {
				m[k] = v
			}
		}
		return labelsKey(m)
	}
	right := map[string]promSample{}
	for _, s := range rvec {
		k := sig(s.labels)
		if _, dup := right[k]; dup {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "found duplicate series for the match group {%s} on the right side of %q (many-to-many matching is not allowed)", k, b.op)
		}
		right[k] = s
	}
	var out vectorVal
	seenLeft := map[string]bool{}
	for _, s := range lvec {
		k := sig(s.labels)
		r, ok := right[k]
		if !ok {
			continue
		}
		if seenLeft[k] {
			return nil, evidence.Errorf("prometheus", evidence.CodeInvalid, "found duplicate series for the match group {%s} on the left side of %q (many-to-many matching is not allowed)", k, b.op)
		}
		seenLeft[k] = true
		v, keep := applyOp(b.op, s.v, r.v)
		if cmpOp && !b.boolMod {
			if keep {
				out = append(out, s)
			}
			continue
		}
		l := dropName(s.labels)
		if b.hasMatch {
			nl := evidence.Labels{}
			for n, val := range l {
				in := slices.Contains(b.matchLbls, n)
				if b.on && in || !b.on && !in {
					nl[n] = val
				}
			}
			l = nl
		}
		out = append(out, promSample{labels: l, v: v})
	}
	return out, nil
}

func isComparison(op string) bool {
	switch op {
	case "==", "!=", "<", ">", "<=", ">=":
		return true
	}
	return false
}

// applyOp returns op's value and, for comparisons, whether it holds (the
// value is then 1 or 0).
func applyOp(op string, x, y float64) (float64, bool) {
	b := func(c bool) (float64, bool) {
		if c {
			return 1, true
		}
		return 0, false
	}
	switch op {
	case "+":
		return x + y, true
	case "-":
		return x - y, true
	case "*":
		return x * y, true
	case "/":
		return x / y, true
	case "%":
		return math.Mod(x, y), true
	case "^":
		return math.Pow(x, y), true
	case "==":
		return b(x == y)
	case "!=":
		return b(x != y)
	case "<":
		return b(x < y)
	case ">":
		return b(x > y)
	case "<=":
		return b(x <= y)
	case ">=":
		return b(x >= y)
	}
	return math.NaN(), false
}
