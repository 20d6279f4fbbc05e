package analyst

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rootcause/rootcause/finding"
)

// A question about a whole namespace ("is anything unhealthy in
// staging?") is answered with every real failure in it: a second failure
// that the root cause does not explain and that has nothing to do with it
// (another workload, no call or object between them) is a separate
// problem, reported beside the root cause with what to do about it, never
// "ruled out" for having weaker evidence. A question that names its
// subject keeps the failures of others as failures elsewhere (subject.go).

// separateBar is the score from which a failure unrelated to the root
// cause counts as a problem of its own (below it, a weak signal).
const separateBar = 0.5

// maxSeparate bounds the separate problems an answer names.
const maxSeparate = 3

// separateProblems returns the hypotheses after w that are failures of
// their own when the question names no service or object (a question
// about the namespace): strong (at least separateBar, a critical
// finding), of another kind than w and not a failing call (a dependency's
// symptom may well be w's), not explained by w, neither bearing on the
// other's subject, and on a subject whose name shares no word with w's
// (etcd-cp-1 and prod-eu1-cp-1-etcd are one etcd).
func separateProblems(a *Analysis, w *Hypothesis, sc Scope) []*Hypothesis {
	if sc.Service != "" || len(sc.Subjects()) > 0 {
		return nil
	}
	var out []*Hypothesis
	seen := map[string]bool{strings.ToLower(w.Subject): true}
	for _, h := range a.Hypotheses[1:] {
		if len(out) >= maxSeparate {
			break
		}
		subj := strings.ToLower(h.Subject)
		if h.Score < separateBar || h.elsewhere || subj == "" || subj == "*" || seen[subj] || h.Kind == w.Kind || h.class() == classDependency ||
			explainedBy(h, w) || !slices.ContainsFunc(h.Primary, func(f *Finding) bool { return f.Severity >= SevCritical }) ||
			bearsOn(h, []string{w.Subject}) || bearsOn(w, []string{h.Subject}) || sharesNameWord(h.Subject, w.Subject) {
			continue
		}
		seen[subj] = true
		out = append(out, h)
	}
	return out
}

// sharesNameWord reports whether two names share a word of three letters
// or more that is not a number ("etcd" in etcd-cp-1 and
// prod-eu1-cp-1-etcd).
func sharesNameWord(a, b string) bool {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	}
	bw := words(b)
	for _, x := range words(a) {
		if len(x) >= 3 && strings.Trim(x, "0123456789") != "" && slices.Contains(bw, x) {
			return true
		}
	}
	return false
}

// addSeparateProblems names the separate problems in r: after the root
// cause's description, among the affected systems, and with the first
// action of each one's own playbook.
func addSeparateProblems(r *finding.Result, w *Hypothesis, hs []*Hypothesis, sc Scope) {
	if len(hs) == 0 {
		return
	}
	var parts []string
	for _, h := range hs {
		parts = append(parts, fmt.Sprintf("%s (%s)", hypothesisLabel(h), truncate(h.top().Summary, 200)))
		if !slices.ContainsFunc(r.AffectedSystems, func(x string) bool { return strings.EqualFold(x, h.Subject) }) && len(r.AffectedSystems) < 10 {
			r.AffectedSystems = append(r.AffectedSystems, h.Subject)
		}
		action := "Investigate " + h.top().Summary
		if recs := recommend(h, sc); len(recs) > 0 {
			action = recs[0].Action
		}
		rec := finding.Recommendation{Priority: finding.PriorityMedium,
			Action: fmt.Sprintf("Separately from %s, handle %s: %s", orWord(w.Subject, "the root cause"), hypothesisLabel(h), action)}
		// before the root cause's low-priority actions
		i := slices.IndexFunc(r.Recommendations, func(x finding.Recommendation) bool { return x.Priority == finding.PriorityLow })
		if i < 0 {
			i = len(r.Recommendations)
		}
		r.Recommendations = slices.Insert(r.Recommendations, i, rec)
	}
	word := "Also failing, a separate problem not caused by this one: "
	if len(hs) > 1 {
		word = "Also failing, separate problems not caused by this one: "
	}
	r.RootCause.Description = strings.TrimSpace(r.RootCause.Description) + " " + word + strings.Join(parts, "; ") + "."
}
