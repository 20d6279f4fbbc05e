package analyst

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A value larger than its column holds. A decimal column has a fixed
// precision and scale (numeric(12,2) holds less than 10^10); when the data
// grows past it (a currency with large amounts, a merchant or account far
// bigger than the others, a unit changed upstream) the database refuses
// the write: PostgreSQL's "numeric field overflow" with "A field with
// precision 12, scale 2 must round to an absolute value less than 10^10"
// (SQLSTATE 22003), MySQL's "Out of range value for column 'amount'"
// (1264), SQL Server's "Arithmetic overflow error converting numeric to
// data type numeric" (8115), Oracle's ORA-01438. Nothing in the code
// changed: the batch or the request that writes the row fails on that
// row every time, the rows before it are fine, and a rollback of the
// writer does not help. The answer names the column and its type, the
// value and the row that carries it (a driver's failed statement shows
// them), and the change that brought the new data (a currency, a
// merchant, a unit). A generated key at its integer maximum is another
// cause (idexhausted.go).

// KindValueOverflow is a write refused because a value exceeds its
// column's precision.
const KindValueOverflow Kind = "value_overflow"

var valueOverflow = &mechanism{
	kind:   KindValueOverflow,
	class:  classCause,
	label:  "a value larger than its column's precision (writes refused)",
	detect: detectValueOverflow,
	// The writer's failed Job or crash is this refusal, one hop short.
	related: exceptOwnAndChanges(KindValueOverflow, kindsOnSubject(KindJobFailed, KindCrashLoop, KindAppCrash)),
	refines: []Kind{KindJobFailed, KindCrashLoop, KindAppCrash},
	// A change to the column's type or to what writes it.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		col := strings.ToLower(h.fact("column"))
		t := strings.ToLower(changeText(c))
		return col != "" && containsToken(t, col) && (strings.Contains(t, "numeric") || strings.Contains(t, "decimal") || strings.Contains(t, "precision"))
	},
	strictTriggers: true,
	describe:       describeValueOverflow,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		col := orWord(h.fact("column"), "the column")
		if t := h.fact("table"); t != "" && col != "the column" {
			col = lastDotted(t) + "." + col
		}
		wider := "numeric(18,2) or wider"
		if p, s := h.fact("precision"), h.fact("scale"); p != "" && s != "" {
			wider = fmt.Sprintf("a precision above %s (numeric(18,%s))", p, s)
		}
		r.high("Widen %s to %s (ALTER TABLE … ALTER COLUMN … TYPE, with the columns computed from it), then re-run what failed", col, wider)
		r.med("Until then, keep the rows that do not fit out of the run (the %s) so the others are written", orWord(h.fact("row"), "row named in the error"))
		r.low("Check the largest values each new currency, unit or tenant can bring against the columns that store them before enabling it, and alert on SQLSTATE 22003")
	},
}

var (
	// The database's refusal of a value beyond the column's precision.
	valueOverflowRE = regexp.MustCompile(`(?i)numeric field overflow|Out of range value for column '(\w+)'|Arithmetic overflow error converting (?:numeric|expression|float|real|money|decimal) to data type (?:numeric|decimal|money|smallmoney)|ORA-01438`)
	// PostgreSQL's DETAIL: the column's precision, scale and bound.
	overflowDetailRE = regexp.MustCompile(`(?i)precision (\d+), scale (\d+) must round to an absolute value less than (10\^\d+|\d+)`)
	// A failed statement that carries the row: an INSERT with its
	// columns and values (a JDBC batch entry, a server log's STATEMENT).
	insertRowRE = regexp.MustCompile(`(?i)\binsert\s+into\s+([\w."]+)\s*\(([^)]*)\)\s*values\s*(\(.*\))`)
	// A column's decimal type in a table's description (psql \d, MySQL's
	// SHOW CREATE TABLE or DESCRIBE, sqlcmd sp_columns).
	decimalColumnRE = regexp.MustCompile(`(?i)^\s*\|?\s*[\x60"]?(\w+)[\x60"]?\s*(?:\|\s*)?(numeric|decimal|number)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)`)
	numberRE        = regexp.MustCompile(`^-?\d+(?:\.\d+)?$`)
	dateValueRE     = regexp.MustCompile(`^\d{4}-\d\d-\d\d`)
)

// overflowRow is a failed statement's row: its table, its columns and
// their values.
type overflowRow struct {
	table  string
	cols   []string
	values []string
}

// parseInsertRow reads the first row of an INSERT's VALUES list.
func parseInsertRow(line string) (overflowRow, bool) {
	m := findSubmatch(insertRowRE, line)
	if m == nil {
		return overflowRow{}, false
	}
	r := overflowRow{table: strings.Trim(m[1], `"`)}
	for _, c := range strings.Split(m[2], ",") {
		r.cols = append(r.cols, strings.Trim(strings.TrimSpace(c), "\"`"))
	}
	// The first parenthesised tuple, split at its top-level commas.
	s := m[3]
	depth, start := 0, 1
	var quoted bool
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\'':
			quoted = !quoted
		case quoted:
		case ch == '(':
			depth++
		case ch == ')':
			depth--
			if depth == 0 {
				r.values = append(r.values, cleanSQLValue(s[start:i]))
				i = len(s)
			}
		case ch == ',' && depth == 1:
			r.values = append(r.values, cleanSQLValue(s[start:i]))
			start = i + 1
		}
	}
	if len(r.values) != len(r.cols) {
		return overflowRow{}, false
	}
	return r, true
}

// cleanSQLValue strips a literal of its parentheses, cast and quotes:
// ('18734410550.00'::numeric) -> 18734410550.00.
func cleanSQLValue(v string) string {
	v = strings.TrimSpace(v)
	for strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")") {
		v = strings.TrimSpace(v[1 : len(v)-1])
	}
	if i := strings.Index(v, "::"); i > 0 {
		v = v[:i]
	}
	v = strings.TrimPrefix(v, "N")
	return strings.Trim(v, "'")
}

// exceeds reports whether the decimal v is at least bound ("10^10" or
// digits).
func exceeds(v, bound string) bool {
	x, ok := new(big.Float).SetString(strings.TrimPrefix(v, "-"))
	if !ok {
		return false
	}
	var b *big.Float
	if e, ok := strings.CutPrefix(bound, "10^"); ok {
		n := 0
		fmt.Sscanf(e, "%d", &n)
		b = new(big.Float).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
	} else if b, ok = new(big.Float).SetString(bound); !ok {
		return false
	}
	return x.Cmp(b) >= 0
}

// detectValueOverflow finds writes refused because a value exceeds its
// column's precision, with the row and the column where the logs show
// them.
func detectValueOverflow(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	var detail, rowLine string
	var row overflowRow
	type stmt struct {
		row  overflowRow
		line string
	}
	var stmts []stmt
	note := func(set *LogSet, l string, at time.Time) {
		for _, part := range strings.Split(l, "\n") {
			if m := findSubmatch(overflowDetailRE, part); m != nil && detail == "" {
				detail = strings.TrimSpace(part)
				if f != nil {
					f.setFact("precision", m[1])
					f.setFact("scale", m[2])
					f.setFact("bound", m[3])
				}
			}
		}
		m := findSubmatch(valueOverflowRE, l)
		if m == nil {
			// A server log's statement on a line of its own.
			if r, ok := parseInsertRow(l); ok {
				stmts = append(stmts, stmt{r, l})
			}
			return
		}
		// A key at its integer maximum is idexhausted's.
		if m[1] != "" && strings.HasSuffix(strings.ToLower(m[1]), "id") {
			return
		}
		if r, ok := parseInsertRow(l); ok && rowLine == "" {
			row, rowLine = r, l
		}
		if f != nil {
			if at.Before(f.Time) && !at.IsZero() {
				f.Time = at
			}
			f.addCount(1)
			return
		}
		subject := orWord(set.Subject, ev.Scope.Service)
		f = &Finding{Kind: KindValueOverflow, Subject: subject, Namespace: set.Namespace, Time: at, Severity: SevCritical, Weight: 0.9, Source: SrcLogs,
			Object: "workload " + subject}
		first, _, _ := strings.Cut(l, "\n")
		f.setFact("line", first)
		if m[1] != "" {
			f.setFact("column", m[1])
		}
		f.addCount(1)
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for j, l := range t.Lines() {
				at := firstOf(t.FirstIncident, t.FirstSeen)
				if j > 0 {
					at = t.LastSeen
				}
				note(set, l, at)
			}
		}
		for _, l := range set.Lines {
			note(set, l.Text, l.Time)
		}
	}
	// The last lines of terminated containers (a failed Job's pod, a
	// crash), read whatever the window.
	keys := slices.Sorted(maps.Keys(ev.K8s.PreviousLogs))
	for _, key := range keys {
		ns, rest, _ := strings.Cut(key, "/")
		pod, _, _ := strings.Cut(rest, "/")
		set := &LogSet{Source: pod, Namespace: ns, Subject: workloadOfName(pod)}
		if cj := cronJobOf(set.Subject); cj != "" {
			set.Subject = cj
		}
		for i := range ev.K8s.Pods {
			if p := &ev.K8s.Pods[i]; p.Namespace == ns && p.Name == pod {
				set.Subject = WorkloadOfPod(p)
				if j := jobOfPod(p); j != "" {
					set.Subject = orWord(cronJobOf(j), j)
				}
			}
		}
		for _, l := range ev.K8s.PreviousLogs[key] {
			note(set, l.Text, l.Time)
		}
	}
	if f == nil {
		return nil
	}
	if m := findSubmatch(overflowDetailRE, detail); m != nil {
		f.setFact("precision", m[1])
		f.setFact("scale", m[2])
		f.setFact("bound", m[3])
	}
	// A statement logged apart from the error carries the row when one of
	// its values is beyond the bound, or it writes the column named.
	for _, st := range stmts {
		if rowLine != "" {
			break
		}
		for i, v := range st.row.values {
			if b := f.fact("bound"); b != "" && numberRE.MatchString(v) && exceeds(v, b) || f.fact("column") != "" && strings.EqualFold(st.row.cols[i], f.fact("column")) {
				row, rowLine = st.row, st.line
				break
			}
		}
	}
	// The column: the one MySQL names, else the first value of the failed
	// row at or above the bound.
	if rowLine != "" {
		f.setFact("table", row.table)
		col := f.fact("column")
		for i, v := range row.values {
			if col == "" && numberRE.MatchString(v) && f.fact("bound") != "" && exceeds(v, f.fact("bound")) {
				col = row.cols[i]
			}
		}
		var named, keys []string
		for i, v := range row.values {
			if strings.EqualFold(row.cols[i], col) {
				f.setFact("value", v)
				continue
			}
			// The row's identifying values: its text, not its numbers,
			// dates or generated id.
			if v == "" || numberRE.MatchString(v) || dateValueRE.MatchString(v) || strings.EqualFold(v, "null") {
				continue
			}
			named = append(named, row.cols[i]+" "+v)
			keys = append(keys, v)
		}
		f.setFact("column", col)
		f.setFact("row", strings.Join(named, ", "))
		f.setFact("row_values", strings.Join(keys, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the failed write: %s", quote(ReadableLine(rowLine), 300)))
	}
	// The column's declared type, from a description of its table.
	if col := f.fact("column"); col != "" {
		for _, c := range ev.Commands {
			if t := f.fact("table"); t != "" && !strings.Contains(strings.ToLower(c.Command+strings.Join(c.Lines, "\n")), strings.ToLower(lastDotted(t))) {
				continue
			}
			for _, l := range c.Lines {
				if m := findSubmatch(decimalColumnRE, l); m != nil && strings.EqualFold(m[1], col) {
					f.setFact("type", fmt.Sprintf("%s(%s,%s)", strings.ToLower(m[2]), m[3], m[4]))
					if f.fact("precision") == "" {
						f.setFact("precision", m[3])
						f.setFact("scale", m[4])
					}
					f.Evidence = append(f.Evidence, fmt.Sprintf("the column %s is declared %s (%s)", col, f.fact("type"), strings.TrimSpace(c.Command)))
				}
			}
		}
	}
	if detail != "" {
		f.Evidence = append(f.Evidence, "the database: "+quote(detail, 200))
	}
	// The change that brought the row's data: one that names a value of
	// the row (a currency enabled, a merchant onboarded), in the window or
	// the month before it.
	if vals := f.fact("row_values"); vals != "" {
		for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
			if c.Timestamp.After(f.Time) {
				continue
			}
			text := strings.ToLower(c.Description)
			for _, v := range strings.Split(vals, ", ") {
				// A three-letter value names it only as a code (IDR, KWD).
				code := len(v) == 3 && v == strings.ToUpper(v) && containsToken(c.Description, v)
				if code || len(v) >= 4 && containsToken(text, strings.ToLower(v)) {
					f.setFact("data_change", fmt.Sprintf("%s's %s change at %s (%s)", c.Service, strings.ReplaceAll(c.Kind, "_", " "), ts(c.Timestamp), quote(c.Description, 160)))
					break
				}
			}
		}
		if c := f.fact("data_change"); c != "" {
			f.Evidence = append(f.Evidence, "the row's data came with "+c)
		}
	}
	f.Evidence = append([]string{fmt.Sprintf("%s's write is refused from %s: %s", f.Subject, ts(f.Time), quote(ReadableLine(f.fact("line")), 240))}, f.Evidence...)
	f.Summary = fmt.Sprintf("%s: a value exceeds its column's precision (%s), the write is refused", f.Subject, orWord(f.fact("column"), "numeric overflow"))
	return []Finding{*f}
}

// lastDotted is the last part of a dotted name (a table without its
// schema).
func lastDotted(s string) string {
	return s[strings.LastIndexByte(s, '.')+1:]
}

func describeValueOverflow(h *Hypothesis, sc Scope) string {
	col := "a column"
	if c := h.fact("column"); c != "" {
		col = "the column " + c
		if t := h.fact("table"); t != "" {
			col = fmt.Sprintf("the column %s.%s", lastDotted(t), c)
		}
	}
	d := fmt.Sprintf("%s's write is refused by the database with a numeric field overflow: a value is larger than %s holds", h.Subject, col)
	switch t, p, s := h.fact("type"), h.fact("precision"), h.fact("scale"); {
	case t != "":
		d += fmt.Sprintf(" (declared %s", t)
		if b := h.fact("bound"); b != "" {
			d += fmt.Sprintf(": less than %s", b)
		}
		d += ")"
	case p != "" && s != "":
		d += fmt.Sprintf(" (precision %s, scale %s", p, s)
		if b := h.fact("bound"); b != "" {
			d += fmt.Sprintf(": less than %s", b)
		}
		d += ")"
	}
	if v := h.fact("value"); v != "" {
		d += fmt.Sprintf("; the value is %s", v)
	}
	if r := h.fact("row"); r != "" {
		d += fmt.Sprintf(", in the row of %s", r)
	}
	// A trigger is told by the engine; a change older than the window
	// only here.
	if c := h.fact("data_change"); c != "" && h.Trigger == nil {
		d += "; such data first came with " + c
	}
	d += ". The data outgrew the column, not the code: rows whose values fit are accepted, every write of this one fails again, and rolling back the writer does not help"
	return d
}
