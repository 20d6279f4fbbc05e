package analyst

import (
	"regexp"
	"slices"
	"strings"
)

// "A is late and its queue grows, is the database slow? also B is
// failing, related?": a question about one complaint that names, in a
// clause of its own, another failure the asker has noticed and asks
// whether it is related. That other failure is an aside: when a cause of
// the complaint stands on its own (it bears on the question's other
// subjects, with a root-cause score), the aside's own cause is not the
// answer, however loud it is; it is listed as a failure nearby, the
// answer to "related?" being no. When nothing explains the complaint,
// the aside keeps its rank: it may be the cause after all.

// asideRE reads a clause that names a failure beside the complaint and
// asks whether it is related: "also X is failing, related?", "X is also
// erroring — is that connected?", "btw X is red, same issue?".
var asideRE = regexp.MustCompile(`(?i)(?:^|[.?!;,]\s*|\s)(?:and\s+)?(?:also|btw|by the way|separately|unrelated(?:ly)?,?|on a side note)[,:]?\s+(?:the\s+)?([a-z0-9][a-z0-9.-]*[a-z0-9])\b([^.?!]{0,80}?)[,:;—-]?\s*(?:is (?:it|that|this) |could (?:it|that|this) be |are they |might (?:it|that) be )?(?:related|connected|linked|the same (?:issue|problem|thing|cause)|same (?:issue|problem|root cause|cause)|part of (?:it|this|the same))\b`)

// asideBar is the score a cause of the complaint needs to outrank the
// aside's: a cause that stands on its own, not a symptom.
const asideBar = 0.6

// asides returns the names of the question's subjects that only an aside
// clause names.
func asides(sc Scope) []string {
	subjects := sc.Subjects()
	if len(subjects) == 0 {
		return nil
	}
	msg := strings.ToLower(sc.Message)
	var out []string
	for _, m := range asideRE.FindAllStringSubmatchIndex(msg, -1) {
		name := msg[m[2]:m[3]]
		if !slices.Contains(subjects, name) || strings.EqualFold(name, sc.Service) {
			continue
		}
		// Named elsewhere in the question too: not only an aside.
		rest := msg[:m[0]] + " " + msg[m[1]:]
		if namesWord(rest, name) {
			continue
		}
		out = appendNew(out, name)
	}
	return out
}

// asideLast ranks the causes that bear only on an aside below the
// strongest cause that bears on the question's other subjects.
func asideLast(hs []*Hypothesis, sc Scope) {
	aside := asides(sc)
	if len(aside) == 0 {
		return
	}
	var main []string
	for _, s := range sc.Subjects() {
		if !slices.Contains(aside, s) {
			main = append(main, s)
		}
	}
	// The complaint names no object the evidence knows: its causes are
	// those that do not bear on the aside.
	bears := func(h *Hypothesis) bool { return bearsOn(h, main) }
	if len(main) == 0 {
		bears = func(h *Hypothesis) bool { return !bearsOn(h, aside) }
	}
	best := 0.0
	for _, h := range hs {
		if c := h.class(); (c == classCause || c == classDependency) && !neutral(h, sc) && bears(h) && slices.ContainsFunc(h.Primary, substantial) {
			best = max(best, h.Score)
		}
	}
	if best < asideBar {
		return
	}
	for _, h := range hs {
		if neutral(h, sc) || len(main) > 0 && bearsOn(h, main) || !bearsOn(h, aside) || h.Score < best {
			continue
		}
		h.Score = best * 0.95
		h.elsewhere, h.aside = true, true
	}
}
