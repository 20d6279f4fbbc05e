package analyst

import (
	"regexp"
	"slices"
	"strings"
)

// "X is red, is Y affected?": a question that names a failure already
// known (a cluster gone red, a dependency down, an alert firing) and asks
// whether another service, the one the asker is on call for, feels it.
// The failure named is not what the question is about: the answer speaks
// for the service asked after, healthy when nothing bears on it, with the
// named failure listed as a failure nearby. Named in the question, the
// failing neighbour would otherwise count as a subject and be answered as
// the root cause of a service that shows nothing.

// askedAfterRE reads the service a question asks after: "is Y affected",
// "are Y's requests impacted", "does this affect Y", "should I worry
// about Y", "is Y ok".
var askedAfterRE = regexp.MustCompile(`(?i)\b(?:is|are|was|were|will|would)\s+(?:my\s+|our\s+|the\s+)?([a-z0-9][a-z0-9.-]*[a-z0-9])(?:'s)?(?:\s+(?:service|app|api|pods?|requests|traffic|still|also|at all))*\s+(?:affected|impacted|hit|ok|okay|fine|healthy|safe|at risk|in trouble|involved|degraded|broken|down)\b` +
	`|\b(?:affect|affects|affecting|impact|impacts|impacting|hit|hitting|touch|touches|reach|reaches)\s+(?:my\s+|our\s+|the\s+)?([a-z0-9][a-z0-9.-]*[a-z0-9])\b` +
	`|\bworry about\s+(?:my\s+|our\s+|the\s+)?([a-z0-9][a-z0-9.-]*[a-z0-9])\b`)

// suspectWordRE ends a question that asks whether a name is the failure
// ("is vault down?", "is RBAC broken?"): beside another failure named
// ("payout-worker isn't starting, is vault down?") it names a suspect of
// that failure, not a service asked after, unless the asker is on call for
// it (the context's service).
var suspectWordRE = regexp.MustCompile(`(?i)\b(?:down|broken|degraded)$`)

// askedAfter returns the service the question asks after, when it also
// names other known objects (the failure it already knows of): the
// context's service or the name asked after, "" otherwise.
func askedAfter(sc Scope) string {
	subjects := sc.Subjects()
	if len(subjects) < 2 {
		return ""
	}
	for _, m := range findAllSubmatch(askedAfterRE, sc.Message, -1) {
		name := strings.ToLower(m[1] + m[2] + m[3])
		if matchLine(suspectWordRE, m[0]) && name != strings.ToLower(sc.Service) {
			continue
		}
		if name == strings.ToLower(sc.Service) || sc.Known[name] && slices.Contains(subjects, name) {
			return name
		}
	}
	return ""
}

// askedBesideHealthy answers a question about a service beside a named
// failure: healthy when, taken alone, the service asked after is healthy
// (subjectHealthy: nothing bears on it while the strongest hypothesis is
// another object's own state). It records the service as what the
// healthy answer speaks for.
func askedBesideHealthy(a *Analysis, hs []*Hypothesis, sc Scope) bool {
	asked := askedAfter(sc)
	if asked == "" {
		return false
	}
	only := sc
	only.Service, only.Message, only.Hint, only.Alert = asked, "", "", ""
	if !subjectHealthy(hs, only) {
		return false
	}
	a.Asked = []string{asked}
	for _, h := range a.Hypotheses {
		h.elsewhere = true
	}
	return true
}
