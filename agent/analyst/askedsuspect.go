package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/finding"
)

// A question often names the suspect its asker has in mind ("was it the
// ledger-close cron?", "could this be the new sidecar?", "is it
// payments-worker?"). When the root cause is something else, the answer
// says so about that suspect in its own words: what the evidence shows of
// it (its change and when, anything of it failing) against the root
// cause's onset, rather than leaving it unanswered among the ruled-out
// hypotheses, where a suspect that did nothing wrong never appears.

// suspectAskedRE finds the words a question puts after "was it", "could it
// be", "is this"...
var suspectAskedRE = regexp.MustCompile(`(?i)\b(?:was|is|could|did|might|maybe)\s+(?:it|this|that)\s+(?:be\s+|caused\s+by\s+|because\s+of\s+|due\s+to\s+)?(?:the\s+|a\s+|an\s+|our\s+)?([a-z0-9][\w.-]*(?:\s+[a-z0-9][\w.-]*)?)`)

// suspectNames are the names of the suspects a question asks about: the
// words after "was it …" that are names (with a hyphen, a dot or a digit,
// or known from the evidence), not generic words ("the database").
func suspectNames(msg string, sc Scope) []string {
	var out []string
	for _, m := range findAllSubmatch(suspectAskedRE, msg, -1) {
		for _, w := range strings.Fields(m[1]) {
			w = strings.ToLower(strings.Trim(w, ".,;:?!'\"()"))
			if len(w) < 3 {
				continue
			}
			if strings.ContainsAny(w, "-.0123456789_") || sc.Known[w] {
				out = appendNew(out, w)
			}
		}
	}
	return out
}

// askedSuspects answers each suspect the question names that the root
// cause w is not about: the findings that name it (its changes, its
// failures) and how they stand against the root cause.
func askedSuspects(a *Analysis, w *Hypothesis, sc Scope) []finding.RuledOut {
	var out []finding.RuledOut
	for _, s := range suspectNames(sc.Message, sc) {
		if strings.Contains(strings.ToLower(w.Subject), s) {
			continue
		}
		var changes, failures []string
		used, subject := false, ""
		for i := range a.Findings {
			f := &a.Findings[i]
			if !strings.Contains(strings.ToLower(f.Subject+" "+f.Summary), s) {
				continue
			}
			if w.uses(f) {
				used = true
				break
			}
			subject = orWord(subject, f.Subject)
			switch {
			case infoOf(f.Kind).class == classChange:
				when := ""
				if !w.Onset.IsZero() && !f.Time.IsZero() && f.Time.Before(w.Onset) {
					when = fmt.Sprintf(", %s before the onset", humanDuration(w.Onset.Sub(f.Time)))
				}
				changes = append(changes, fmt.Sprintf("%s at %s%s", f.Summary, ts(f.Time), when))
			case f.Severity >= SevWarning:
				failures = append(failures, f.Summary)
			}
		}
		if used || len(changes)+len(failures) == 0 {
			continue
		}
		reason := fmt.Sprintf("asked about: the evidence shows %s", strings.Join(append(changes, failures...), "; "))
		if len(failures) == 0 {
			reason += ", and nothing of it failing"
		}
		reason += fmt.Sprintf("; the root cause (%s from %s) explains the symptoms without it", infoOf(w.Kind).label, ts(w.Onset))
		out = append(out, finding.RuledOut{Hypothesis: orWord(subject, s) + " (" + s + ", asked about)", Reason: reason})
	}
	return out
}
