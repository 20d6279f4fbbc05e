package analyst

import (
	"regexp"
	"slices"
	"strings"
)

// "a 12.99 jacket shows at 1299.00": a question about wrong data quotes
// the values it sees. A cause whose own findings show those same values
// (the program that read 12.99 as 1299.00) bears on the complaint
// directly, however quiet it is; a louder failure that shows none of them
// (a crash-looping pod nearby) does not outrank it. Only decimal values
// count (prices, amounts, ratios as written): whole numbers, times,
// dates and versions are too common to tie a finding to a question, and
// two of them must be shown.

// askedValueRE reads a decimal value in a question: digits, a point or
// comma, one to three digits, not part of a version, a time or a date.
var askedValueRE = regexp.MustCompile(`(?:^|[^\w.,:/-])(\d{1,7}[.,]\d{1,3})(?:$|[^\w.,:/-]|[.,](?:\s|$))`)

// askedValues returns the decimal values the question quotes.
func askedValues(msg string) []string {
	var out []string
	for _, m := range askedValueRE.FindAllStringSubmatch(msg, -1) {
		out = appendNew(out, m[1])
	}
	return out
}

// showsValues counts the values of vals that h's own findings show as
// whole values.
func showsValues(h *Hypothesis, vals []string) int {
	var b strings.Builder
	for _, f := range h.Primary {
		b.WriteString(f.Summary)
		b.WriteByte('\n')
		for _, e := range f.Evidence {
			b.WriteString(e)
			b.WriteByte('\n')
		}
	}
	text := b.String()
	n := 0
	for _, v := range vals {
		if slices.Contains(askedValues(text), v) {
			n++
		}
	}
	return n
}

// valuesFirst ranks a cause that shows the values the question quotes
// above the louder failures that show none of them.
func valuesFirst(hs []*Hypothesis, sc Scope) {
	vals := askedValues(sc.Message)
	if len(vals) < 2 {
		return
	}
	var best *Hypothesis
	for _, h := range hs {
		if neutral(h, sc) || h.class() != classCause || h.Score < healthyBar || !slices.ContainsFunc(h.Primary, substantial) {
			continue
		}
		if showsValues(h, vals) >= 2 && (best == nil || h.Score > best.Score) {
			best = h
		}
	}
	if best == nil {
		return
	}
	for _, h := range hs {
		if h == best || h.Score < best.Score || neutral(h, sc) || showsValues(h, vals) > 0 {
			continue
		}
		h.Score = best.Score * 0.95
	}
}
