package analyst

import (
	"regexp"
	"sync"
)

// With some two hundred mechanisms, most of them reading the same gathered
// lines (each log template's example and last line, each command's
// output) with their own regular expression, the analyst's time goes to
// expressions that do not match: nearly every line matches none of them,
// and Go's backtracker takes microseconds to say so on an ordinary line.
// matchLine gives every expression the keyword prefilter the log rules
// have (prefilter.go): derived once per expression and kept, it skips the
// expression on an ASCII line that holds none of the words every match
// contains. The answer is always the expression's own.

// maxMatchers bounds the kept matchers: expressions compiled per call
// (around a name read from the evidence) would otherwise grow the table
// without end; it starts over when full.
const maxMatchers = 4096

var (
	matchersMu sync.RWMutex
	matchers   = map[*regexp.Regexp]matcher{}
)

// matcherOf is re with its keyword prefilter, derived once.
func matcherOf(re *regexp.Regexp) matcher {
	matchersMu.RLock()
	m, ok := matchers[re]
	matchersMu.RUnlock()
	if ok {
		return m
	}
	m = newMatcher(re)
	matchersMu.Lock()
	if len(matchers) >= maxMatchers {
		matchers = map[*regexp.Regexp]matcher{}
	}
	matchers[re] = m
	matchersMu.Unlock()
	return m
}

// matchLine reports whether re matches s: re.MatchString(s), skipped when
// s holds none of the words every match of re contains.
func matchLine(re *regexp.Regexp, s string) bool {
	m := matcherOf(re)
	if m.keywords == nil {
		return re.MatchString(s)
	}
	return m.match(s, lowerASCII(s))
}

// mayMatch is false when re cannot match s (s holds none of the words
// every match contains); true tells nothing. It guards re's Find methods
// in loops over many lines.
func mayMatch(re *regexp.Regexp, s string) bool {
	m := matcherOf(re)
	if m.keywords == nil {
		return true
	}
	lower := lowerASCII(s)
	return lower == "" || containsAny(lower, m.keywords)
}

// findSubmatch is re.FindStringSubmatch(s), nil without running re when s
// cannot match.
func findSubmatch(re *regexp.Regexp, s string) []string {
	if !mayMatch(re, s) {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// findAllSubmatch is re.FindAllStringSubmatch(s, n), nil without running
// re when s cannot match.
func findAllSubmatch(re *regexp.Regexp, s string, n int) [][]string {
	if !mayMatch(re, s) {
		return nil
	}
	return re.FindAllStringSubmatch(s, n)
}

// findString is re.FindString(s), "" without running re when s cannot
// match.
func findString(re *regexp.Regexp, s string) string {
	if !mayMatch(re, s) {
		return ""
	}
	return re.FindString(s)
}

// findAllString is re.FindAllString(s, n), nil without running re when s
// cannot match.
func findAllString(re *regexp.Regexp, s string, n int) []string {
	if !mayMatch(re, s) {
		return nil
	}
	return re.FindAllString(s, n)
}
