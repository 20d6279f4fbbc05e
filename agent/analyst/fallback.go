package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A caller that carries on without a dependency it cannot reach: it logs
// the failed call and serves its answer without what the dependency adds
// (a page rendered without recommendations, a stale or cached value, a
// default, an empty list), or its circuit breaker's fallback answers. The
// dependency's failure is real and its own; the caller is not failing:
// its requests still succeed. Such a line names the dependency's failure
// as the caller saw it, and does not make the caller a failing subject:
// "is the caller affected?" is answered "healthy, carrying on without
// it", the dependency's failure listed nearby.

// fallbackLineRE is a caller carrying on without a dependency:
// "rendering without recs", "serving stale cache", "falling back to the
// default", "using cached value", "Hystrix fallback", "degraded mode", a
// result returned empty. A fallback that failed, or none to fall back to,
// is not.
var (
	fallbackLineRE = regexp.MustCompile(`(?i)\b(?:render(?:ing|ed|s)?|serv(?:ing|ed|es)|return(?:ing|ed|s)?|respond(?:ing|ed|s)?|continu(?:ing|ed|es)|proceed(?:ing|ed|s)?|carry(?:ing)? on|build(?:ing)?|show(?:ing|n)?)\b[\w ,'-]{0,40}?\bwithout\b` +
		`|\bfall(?:ing|s)? ?back\b|\bfallback\b|\b(?:serving|using|returning|served|returned|used)\s+(?:a |the |last[- ]known |previous )?(?:stale|cached|default|empty|fallback|partial)\b` +
		`|\bdegraded mode\b|\bgraceful(?:ly)? degrad`)
	fallbackFailedRE = regexp.MustCompile(`(?i)fall(?:ing)? ?back (?:failed|error|threw|unavailable|not (?:available|found|defined))|no fallback|without (?:a |any )?fallback|fallback (?:method )?(?:failed|threw|error|not found)|could not fall ?back|fallback to \w+ failed`)
)

// fallbackLine reports whether a line is a caller carrying on without the
// dependency it failed to call.
func fallbackLine(line string) bool {
	return matchLine(fallbackLineRE, line) && !matchLine(fallbackFailedRE, line)
}

// fallbackNote is what a healthy answer about names adds when one of them
// carries on without a failing dependency: the sentence and its line as
// evidence ("" when none does).
func fallbackNote(a *Analysis, names []string) (note, evidence string) {
	for _, h := range a.Hypotheses {
		for _, f := range h.Primary {
			c := f.fact("fallback_of")
			if c == "" || !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, c) }) {
				continue
			}
			note = fmt.Sprintf("%s carries on without %s, which fails: it logs the failed calls and answers without it (degraded, not failing).", c, h.Subject)
			return note, fmt.Sprintf("%s carries on without %s: %s", c, h.Subject, quote(ReadableLine(f.fact("line")), 240))
		}
	}
	return "", ""
}
