package analyst

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// A keyword prefilter lets a rule skip its regular expression on lines that
// cannot match it. The keywords are derived from the expression itself: a
// set of lower-case literal strings of which at least one must occur in any
// match. An ordinary log line contains none of a rule's keywords, and a few
// substring searches cost far less than Go's regexp engine running a
// case-insensitive alternation at every position of the line.

// matcher is a regular expression with the keywords one of which every
// match contains (nil keywords: no prefilter, always run the expression).
type matcher struct {
	re       *regexp.Regexp
	keywords []string
}

// newMatcher derives m's keywords from re's syntax tree.
func newMatcher(re *regexp.Regexp) matcher {
	m := matcher{re: re}
	if tree, err := syntax.Parse(re.String(), syntax.Perl); err == nil {
		m.keywords = dedupeKeywords(requiredLiterals(tree.Simplify()))
	}
	return m
}

// match reports whether line matches; lower is the line in lower case
// (ASCII), or "" when the line is not ASCII and the prefilter must not be
// trusted (Unicode case folding can match a keyword's letters with other
// runes).
func (m matcher) match(line, lower string) bool {
	if m.keywords != nil && lower != "" && !containsAny(lower, m.keywords) {
		return false
	}
	return m.re.MatchString(line)
}

// lowerASCII returns s in lower case when s is ASCII, else "". Every
// prefiltered expression lowers the line it is given, so this runs once
// per line and expression: one pass finds whether s is ASCII and holds an
// upper-case letter (s itself is then the answer when it holds none), and
// a second one, only then, writes the lowered copy (what strings.ToLower
// gives for ASCII, without its builder).
func lowerASCII(s string) string {
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return ""
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if !upper {
		return s
	}
	b := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return unsafe.String(&b[0], len(b))
}

func containsAny(s string, keywords []string) bool {
	for _, k := range keywords {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// requiredLiterals returns literal strings (lower case) one of which every
// match of re contains, or nil when it cannot tell.
func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil
		}
		return []string{strings.ToLower(string(re.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			l := requiredLiterals(s)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	case syntax.OpConcat:
		// Runs of parts that match a small finite set of strings are
		// multiplied out into longer keywords ("e(rr|xception)" gives
		// "err" and "exception"); of the parts that each require
		// something, the most selective (longest shortest keyword) is
		// kept.
		var best []string
		bestLen := 0
		consider := func(l []string) {
			if len(l) == 0 {
				return
			}
			short := selectivity(l[0])
			for _, s := range l[1:] {
				short = min(short, selectivity(s))
			}
			if short > bestLen {
				best, bestLen = l, short
			}
		}
		run := []string{""}
		for _, s := range re.Sub {
			if set, ok := exactStrings(s); ok {
				if prod := product(run, set); prod != nil && len(prod) <= maxKeywords {
					run = prod
					continue
				}
			}
			consider(run)
			run = []string{""}
			consider(requiredLiterals(s))
		}
		consider(run)
		return best
	}
	return nil
}

// selectivity estimates how rarely a keyword occurs in a log line: longer
// is rarer, and a literal number ("429") is rarer than a word of its
// length ("code").
func selectivity(k string) int {
	if k == "" {
		return 0
	}
	n := len(k)
	if strings.ContainsAny(k, "0123456789") {
		n += 3
	}
	return n
}

// maxKeywords bounds the keywords one part of a concatenation is
// multiplied out into: each costs a substring search.
const maxKeywords = 12

// maxExact bounds the strings a part may be multiplied out into.
const maxExact = 64

// exactStrings returns every string re can match (lower case) when they
// are few; zero-width assertions match "".
func exactStrings(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return []string{""}, true
	case syntax.OpCapture:
		return exactStrings(re.Sub[0])
	case syntax.OpCharClass:
		// A few letters ([sz], or one letter in both cases). Runes
		// beyond ASCII are left out: the prefilter only judges ASCII
		// lines, which cannot contain them.
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if r >= utf8.RuneSelf {
					continue
				}
				if len(out) >= 8 {
					return nil, false
				}
				if l := strings.ToLower(string(r)); !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		}
		return out, len(out) > 0
	case syntax.OpQuest:
		l, ok := exactStrings(re.Sub[0])
		if !ok {
			return nil, false
		}
		return append([]string{""}, l...), true
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			l, ok := exactStrings(s)
			if !ok || len(out)+len(l) > maxExact {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, true
	case syntax.OpConcat:
		run := []string{""}
		for _, s := range re.Sub {
			l, ok := exactStrings(s)
			if !ok {
				return nil, false
			}
			if run = product(run, l); run == nil {
				return nil, false
			}
		}
		return run, true
	}
	return nil, false
}

// product concatenates every string of a with every string of b; nil when
// there would be more than maxExact.
func product(a, b []string) []string {
	if len(a)*len(b) > maxExact {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

// dedupeKeywords drops keywords that contain another keyword (finding the
// shorter one is enough) and duplicates.
func dedupeKeywords(ks []string) []string {
	if ks == nil {
		return nil
	}
	var out []string
	for i, k := range ks {
		redundant := false
		for j, o := range ks {
			if i != j && strings.Contains(k, o) && (len(o) < len(k) || j < i) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, k)
		}
	}
	return out
}
