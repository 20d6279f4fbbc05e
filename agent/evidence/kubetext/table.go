package kubetext

import "strings"

// table is a text table as kubectl prints it: a header row whose column
// names are separated by two or more spaces, an optional row of dashes,
// then rows aligned on the header's columns.
type table struct {
	cols   []string
	starts []int // rune offset of each column
	rows   [][]string
	raw    []string // each row as printed
	lines  []int    // line number of each row
	cut    bool     // rows beyond the maximum were dropped
}

// maxColumns bounds the columns of a table (kubectl's widest has 11).
const maxColumns = 64

// headerColumns splits a header line on runs of two or more spaces.
func headerColumns(h string) (cols []string, starts []int) {
	r := []rune(h)
	i := 0
	for i < len(r) && len(cols) < maxColumns {
		for i < len(r) && r[i] == ' ' {
			i++
		}
		if i >= len(r) {
			break
		}
		start := i
		for i < len(r) && !(r[i] == ' ' && (i+1 >= len(r) || r[i+1] == ' ')) {
			i++
		}
		cols = append(cols, strings.TrimSpace(string(r[start:i])))
		starts = append(starts, start)
	}
	return cols, starts
}

func isDashes(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, c := range s {
		if c != '-' && c != ' ' {
			return false
		}
	}
	return true
}

// cells cuts a row at the column starts. A cell that does not start on a
// column boundary (a wider value pushed the row) is re-cut on runs of
// spaces instead.
func cells(row string, starts []int) []string {
	r := []rune(row)
	out := make([]string, len(starts))
	aligned := true
	for _, s := range starts {
		if s > 0 && s < len(r) && r[s-1] != ' ' {
			aligned = false
		}
	}
	if aligned {
		for i, s := range starts {
			if s >= len(r) {
				break
			}
			e := len(r)
			if i+1 < len(starts) {
				e = min(starts[i+1], len(r))
			}
			out[i] = strings.TrimSpace(string(r[s:e]))
		}
		return out
	}
	f := splitRuns(row)
	for i := range out {
		if i < len(f) {
			out[i] = f[i]
		}
	}
	if len(f) > len(out) && len(out) > 0 {
		out[len(out)-1] = strings.Join(f[len(out)-1:], "  ")
	}
	return out
}

// splitRuns splits on runs of two or more spaces.
func splitRuns(s string) []string {
	var out []string
	for _, f := range strings.Split(strings.TrimSpace(s), "  ") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseTable reads a table from lines (the header first). Blank lines end it.
func parseTable(lines []string, first int, maxRows int) *table {
	if len(lines) == 0 {
		return nil
	}
	t := &table{}
	t.cols, t.starts = headerColumns(lines[0])
	if len(t.cols) == 0 {
		return nil
	}
	// Describe tables are indented: columns are relative to the line.
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		if i == 0 && isDashes(l) {
			continue
		}
		if len(t.rows) >= maxRows {
			t.cut = true
			break
		}
		t.rows = append(t.rows, cells(l, t.starts))
		t.raw = append(t.raw, l)
		t.lines = append(t.lines, first+1+i)
	}
	return t
}

// col returns the index of the first column named one of names, or -1.
func (t *table) col(names ...string) int {
	for _, n := range names {
		for i, c := range t.cols {
			if strings.EqualFold(c, n) {
				return i
			}
		}
	}
	return -1
}

// get returns a row's cell of the column named one of names.
func (t *table) get(row []string, names ...string) string {
	if i := t.col(names...); i >= 0 && i < len(row) {
		return row[i]
	}
	return ""
}
