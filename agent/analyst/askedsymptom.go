package analyst

import (
	"regexp"
	"slices"
	"strings"
)

// "pod keeps restarting in staging", "why does my pod keep crashing?": a
// question that names no object but the symptom it sees. Its answer is
// the cause of that symptom: a workload whose containers restart
// (CrashLoopBackOff, killed by a probe or the OOM killer, exiting) is what
// the asker looks at; a louder failure of another workload that does not
// restart at all (an image that cannot be pulled, a Job that gave up, a
// pod that cannot be scheduled) is another finding nearby. When nothing
// that restarts has a cause of its own, the louder failure keeps its rank.

// restartAskedRE reads a question about containers that restart.
var restartAskedRE = regexp.MustCompile(`(?i)\b(?:keeps?|kept|keeping)\s+(?:on\s+)?(?:restarting|crashing|dying|getting killed|being killed|rebooting)\b|\brestart(?:s|ing|ed)?\b|\brestart\s*loop|\bcrash\s*-?\s*loop(?:ing|s)?\b|crashloopbackoff|\bboot\s*-?\s*loop`)

// restartKinds are the findings that show containers restarting.
var restartKinds = []Kind{KindCrashLoop, KindRestarts, KindLivenessKill, KindOOMKilled, KindAppCrash}

// unfinishedAskedRE reads a question about a run that does not finish:
// "why is my job not finishing", "the backup never completes", "it
// didn't finish", "the export is taking forever".
var unfinishedAskedRE = regexp.MustCompile(`(?i)\bnot\s+(?:finishing|finished|completing|completed|ending)\b|\bnever\s+(?:finish|finishes|finished|complete|completes|completed|ends|ended)\b|\b(?:doesn'?t|does not|didn'?t|did not|won'?t|will not|can'?t|cannot)\s+(?:finish|complete)\b|\btak(?:es|ing)\s+(?:forever|too long)\b|\bruns?\s+(?:forever|too long)\b`)

// askedSymptom is a symptom a question can name without naming an
// object: the words that ask it, what shows it, and how the answer names
// it.
type askedSymptom struct {
	asked *regexp.Regexp
	shows func(f *Finding) bool
	words string
}

var askedSymptoms = []askedSymptom{
	{restartAskedRE, func(f *Finding) bool { return slices.Contains(restartKinds, f.Kind) }, "restarting containers"},
	// A run stopped at its deadline did not finish; a Job whose pods
	// failed until its backoff limit did.
	{unfinishedAskedRE, func(f *Finding) bool { return f.Kind == KindJobFailed && f.fact("reason") == "DeadlineExceeded" }, "a run that does not finish"},
}

// symptomAsked ranks, for a question that names the restarts it sees and
// no object, the hypotheses about workloads that do not restart below the
// strongest cause of a workload that does. Demoted hypotheses are marked
// elsewhere.
func symptomAsked(hs []*Hypothesis, sc Scope) {
	if len(sc.Subjects()) > 0 {
		return
	}
	for _, s := range askedSymptoms {
		if matchLine(s.asked, sc.Message) {
			symptomFirst(hs, sc, s)
			return
		}
	}
}

// symptomFirst ranks the hypotheses about workloads that do not show the
// symptom s below the strongest cause of one that does.
func symptomFirst(hs []*Hypothesis, sc Scope, s askedSymptom) {
	restarting := map[string]bool{}
	for _, h := range hs {
		for _, f := range append(slices.Clone(h.Primary), h.Support...) {
			if s.shows(f) && f.fact("resolved") == "" && f.Subject != "" {
				restarting[strings.ToLower(f.Subject)] = true
			}
		}
	}
	if len(restarting) == 0 {
		return
	}
	shows := func(h *Hypothesis) bool { return restarting[strings.ToLower(h.Subject)] }
	best := 0.0
	for _, h := range hs {
		if c := h.class(); (c == classCause || c == classDependency) && !neutral(h, sc) && shows(h) && slices.ContainsFunc(h.Primary, substantial) {
			best = max(best, h.Score)
		}
	}
	if best < asideBar {
		return
	}
	for _, h := range hs {
		if neutral(h, sc) || shows(h) || !elsewhereState(h, sc) || h.Score < best {
			continue
		}
		h.Score = best * 0.95
		h.elsewhere, h.unasked = true, s.words
	}
}
