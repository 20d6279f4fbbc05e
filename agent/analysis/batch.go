package analysis

import (
	"slices"
	"sort"
	"strings"
)

// Batch template mining: a pass over a whole batch of lines in the manner
// of Brain (Yu et al., "Brain: Log Parsing with Bidirectional Parallel Tree",
// IEEE TSC 2023). Where Drain routes each line by its leading tokens as it
// arrives, a batch pass sees how often every (position, token) pair occurs
// among the lines of the same length, so a variable in a leading position
// does not misroute a line:
//
//  1. lines are grouped by token count, and each (position, token) pair is
//     counted over the group;
//  2. in each line, the largest set of positions whose pairs share one
//     count is the line's longest common pattern; lines with the same
//     pattern (same positions, same tokens) form an initial group;
//  3. in an initial group, a position outside the pattern whose tokens are
//     rarer than the pattern's is a constant when it takes fewer than
//     BatchTheta distinct values in the group (the group splits by them)
//     and a variable otherwise; a position whose tokens are more frequent
//     than the pattern's (shared with other templates) is a constant when
//     it holds one value in the group and a variable otherwise. Values
//     (valueLike) and severity levels (a header field: "FATAL:" and
//     "PANIC:" before the same message are one event) are variables too.
//
// BatchTheta is fixed: no parameter depends on the system whose logs are
// mined.
const BatchTheta = 4

// BatchGroups groups tokenised lines (as Tokens returns them) with a
// weight each (the number of identical lines it stands for; 0 counts as
// 1). It returns each line's group index and each group's template, in
// order of first appearance. Lines without tokens get group -1.
func BatchGroups(lines [][]string, weights []int) (group []int, templates [][]string) {
	group = make([]int, len(lines))
	byLen := map[int][]int{}
	var lens []int
	for i, toks := range lines {
		group[i] = -1
		if len(toks) == 0 {
			continue
		}
		if _, ok := byLen[len(toks)]; !ok {
			lens = append(lens, len(toks))
		}
		byLen[len(toks)] = append(byLen[len(toks)], i)
	}
	type final struct {
		first int
		tmpl  []string
		lines []int
	}
	var finals []final
	for _, n := range lens {
		idx := byLen[n]
		// (position, token) counts over the lines of this length.
		freq := make([]map[string]int, n)
		for p := range freq {
			freq[p] = map[string]int{}
		}
		for _, i := range idx {
			w := 1
			if weights != nil && weights[i] > 0 {
				w = weights[i]
			}
			for p, t := range lines[i] {
				freq[p][t] += w
			}
		}
		// Initial groups by longest common pattern.
		type initial struct {
			count int // the pattern's count
			in    []bool
			lines []int
		}
		inits := map[string]*initial{}
		var order []string
		f := make([]int, n)
		sorted := make([]int, n)
		for _, i := range idx {
			toks := lines[i]
			for p, t := range toks {
				f[p] = freq[p][t]
			}
			// The count shared by most positions (the larger on a tie).
			copy(sorted, f)
			slices.Sort(sorted)
			best, bestN := 0, 0
			for a := 0; a < n; {
				b := a
				for b < n && sorted[b] == sorted[a] {
					b++
				}
				if b-a >= bestN {
					best, bestN = sorted[a], b-a
				}
				a = b
			}
			var b strings.Builder
			in := make([]bool, n)
			for p, t := range toks {
				if f[p] == best {
					in[p] = true
					b.WriteString(t)
				}
				b.WriteByte(0)
			}
			key := b.String()
			g := inits[key]
			if g == nil {
				g = &initial{count: best, in: in}
				inits[key] = g
				order = append(order, key)
			}
			g.lines = append(g.lines, i)
		}
		for _, key := range order {
			g := inits[key]
			// Decide each position outside the pattern.
			split := make([]bool, n)
			variable := make([]bool, n)
			for p := 0; p < n; p++ {
				if g.in[p] {
					continue
				}
				vals := map[string]bool{}
				up, value, levels := false, false, true
				for _, i := range g.lines {
					t := lines[i][p]
					vals[t] = true
					if freq[p][t] > g.count {
						up = true
					}
					if valueLike(t) {
						value = true
					}
					if !isLevel(t) {
						levels = false
					}
				}
				switch {
				case len(vals) == 1:
				case up || value || levels || len(vals) >= BatchTheta:
					variable[p] = true
				default:
					split[p] = true
				}
			}
			sub := map[string]int{}
			for _, i := range g.lines {
				var b strings.Builder
				for p := 0; p < n; p++ {
					if split[p] {
						b.WriteString(lines[i][p])
					}
					b.WriteByte(0)
				}
				k := b.String()
				j, ok := sub[k]
				if !ok {
					j = len(finals)
					sub[k] = j
					tmpl := append([]string(nil), lines[i]...)
					for p := range tmpl {
						if variable[p] {
							tmpl[p] = Wildcard
						}
					}
					finals = append(finals, final{first: i, tmpl: tmpl})
				}
				finals[j].lines = append(finals[j].lines, i)
			}
		}
	}
	sort.SliceStable(finals, func(a, b int) bool { return finals[a].first < finals[b].first })
	templates = make([][]string, len(finals))
	for j, fg := range finals {
		templates[j] = fg.tmpl
		for _, i := range fg.lines {
			group[i] = j
		}
	}
	return group, templates
}

// GroupBatch mines a batch of lines with BatchGroups and returns each
// line's template group (identical masked lines are counted once, with
// their number as weight).
func GroupBatch(lines []string) []int {
	uniq := map[string]int{}
	var toks [][]string
	var weights []int
	form := make([]int, len(lines))
	for i, l := range lines {
		t := Tokens(l)
		k := strings.Join(t, "\x00")
		j, ok := uniq[k]
		if !ok {
			j = len(toks)
			uniq[k] = j
			toks = append(toks, t)
			weights = append(weights, 0)
		}
		weights[j]++
		form[i] = j
	}
	g, _ := BatchGroups(toks, weights)
	out := make([]int, len(lines))
	for i := range lines {
		out[i] = g[form[i]] + 1
	}
	return out
}

// valueLike reports whether a token reads as a value rather than a word:
// one that begins with a masked value (a quantity with its unit); a host
// name (three or more dotted labels, the last of letters: property names
// such as mapreduce.task.id count too); an identifier with a numeric part
// (rdd_<NUM>_<NUM>); or one whose value part (after the last '=') is at
// least 30% digits, masked values counting as one digit. HTTP status codes
// are words: Tokens keeps them because they tell lines apart.
// ValueLike reports whether a token reads as a value rather than a word,
// by the batch pass's rule (see valueLike): a number with a unit, a host
// name, an identifier with a numeric part, or a token at least 30% digits.
func ValueLike(t string) bool { return valueLike(t) }

func valueLike(t string) bool {
	if k := strings.LastIndexByte(t, '='); k >= 0 {
		t = t[k+1:]
	}
	for len(t) > 1 && t[0] != '<' && (isPunct(t[0]) || t[0] == '/' || t[0] == ':') {
		t = t[1:]
	}
	if strings.HasPrefix(t, "<<") {
		t = t[1:] // "<1 sec" masked
	}
	if isStatusCode(t) || t == "" {
		return false
	}
	if t[0] == '<' && strings.IndexByte(t, '>') > 1 {
		return true
	}
	if hostLike(t) || strings.Contains(t, "_<") {
		return true // a host name, an identifier with a number (rdd_<NUM>)
	}
	digits, n := 0, 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '<' {
			if k := strings.IndexByte(t[i:], '>'); k > 1 {
				digits++
				n++
				i += k
				continue
			}
		}
		switch {
		case c >= '0' && c <= '9':
			digits++
		case isPunct(c) || c == ':' || c == '/' || c == '-':
			continue // separators inside a value do not make it a word
		}
		n++
	}
	return digits > 0 && float64(digits) >= 0.3*float64(n)
}

var levelWords = map[string]bool{"trace": true, "debug": true, "info": true, "notice": true, "warn": true, "warning": true,
	"error": true, "err": true, "fatal": true, "panic": true, "crit": true, "critical": true, "alert": true, "emerg": true, "severe": true}

// isLevel reports whether a token is a severity level ("ERROR", "[warn]",
// "FATAL:", "level=info").
func isLevel(t string) bool {
	if k := strings.LastIndexByte(t, '='); k >= 0 {
		t = t[k+1:]
	}
	return levelWords[strings.ToLower(strings.Trim(t, "[]():,;\"'"))]
}

// hostLike reports a DNS name of at least three labels ending in a
// letter-only label ("db-3.eu.example.com").
func hostLike(t string) bool {
	t = strings.TrimRight(t, ".,;:)")
	if strings.Count(t, ".") < 2 || strings.ContainsAny(t, "/=@") {
		return false
	}
	labels := strings.Split(t, ".")
	for _, l := range labels {
		if l == "" {
			return false
		}
	}
	tld := labels[len(labels)-1]
	for i := 0; i < len(tld); i++ {
		if c := tld[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return len(tld) >= 2
}
