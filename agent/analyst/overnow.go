package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A question about whether a failure is still going on ("we had a burst
// of 500s this morning: is it still a problem, or can I close the
// incident?") is answered by the present: when the subject's errors
// stopped long ago and it has served normally since, it is healthy now,
// and what caused the burst (the cause the reasoning found) is the why,
// not a fault to fix. The answer says when the errors ran and since when
// they are gone; it never calls a failure over while its errors go on.

// presentAskRE matches a question about the present state of a failure.
var presentAskRE = regexp.MustCompile(`(?i)\bstill (?:a problem|an issue|a concern|happening|going on|ongoing|occurring|failing|broken|erroring|affecting|impacting|down|there|present)\b|\b(?:can|could|should|may) (?:i|we) (?:close|resolve)\b|\bclose (?:the|this) (?:incident|ticket|page)\b|\bis it (?:over|fixed|resolved|gone|done)\b|\bhas it (?:recovered|stopped|cleared|gone away|settled)\b|\bare (?:we|they) (?:ok|okay|fine|good) now\b`)

// Quiet periods: the errors must have stopped at least overQuiet before
// now, and for at least half as long as they ran.
const overQuiet = 15 * time.Minute

// errorBurst is when a subject's new or surging error lines ran.
type errorBurst struct {
	First, Last time.Time
	Lines       int
	Serving     time.Time // the last line of normal work after the errors
	Source      string
}

// subjectErrorBurst reads the errors of the subjects' own log sources:
// the templates that read as errors and are new or surging in the
// window, and whether the subject went on logging normal work after
// them. ok is false when no such error was logged.
func subjectErrorBurst(sets []LogSet, subjects []string) (b errorBurst, ok bool) {
	for i := range sets {
		set := &sets[i]
		if !containsFold(subjects, set.Subject) {
			continue
		}
		for j, t := range set.Templates {
			if t.Incident == 0 || !set.classified(j).isErr {
				continue
			}
			if set.HasBaseline && !t.New && t.Surge < 3 {
				continue
			}
			first := orTime(t.FirstIncident, t.FirstSeen)
			if first.IsZero() || t.LastSeen.IsZero() {
				continue
			}
			if !ok || first.Before(b.First) {
				b.First = first
			}
			if !ok || t.LastSeen.After(b.Last) {
				b.Last, b.Source = t.LastSeen, set.Source
			}
			b.Lines += t.Incident
			ok = true
		}
	}
	if !ok {
		return b, false
	}
	for i := range sets {
		set := &sets[i]
		if !containsFold(subjects, set.Subject) {
			continue
		}
		for j, t := range set.Templates {
			if t.Incident > 0 && !set.classified(j).isErr && t.LastSeen.After(b.Serving) {
				b.Serving = t.LastSeen
			}
		}
	}
	return b, true
}

// failureOver reports whether the burst ended well before now while the
// subject kept serving: quiet for overQuiet and for half the burst's
// length at least, normal lines for five minutes past its last error.
func failureOver(b errorBurst, now time.Time) bool {
	quiet := now.Sub(b.Last)
	return !now.IsZero() && quiet >= overQuiet && quiet >= b.Last.Sub(b.First)/2 && b.Serving.After(b.Last.Add(5*time.Minute))
}

// firingAbout reports whether an alert about the subjects still fires.
func firingAbout(alerts []evidence.Alert, subjects []string, named string, now time.Time) (firing bool, resolved []evidence.Alert) {
	for _, a := range alerts {
		if !alertAbout(a, subjects, named) {
			continue
		}
		if alertResolved(a, now) {
			resolved = append(resolved, a)
		} else {
			firing = true
		}
	}
	return firing, resolved
}

// answerOverNow turns a result that found a cause into "healthy now" when
// the question asks about the present and the failure is over.
func answerOverNow(res *finding.Result, sets []LogSet, alerts []evidence.Alert, sc Scope) bool {
	if res == nil || res.Verdict == finding.VerdictHealthy || !matchLine(presentAskRE, sc.Message+" "+sc.Hint) {
		return false
	}
	subjects := sc.Subjects()
	if len(subjects) == 0 {
		return false
	}
	now := sc.Window.End
	b, ok := subjectErrorBurst(sets, subjects)
	if !ok || !failureOver(b, now) {
		return false
	}
	firing, resolved := firingAbout(alerts, subjects, sc.Alert, now)
	if firing {
		return false
	}
	what := strings.Join(subjects, ", ")
	hms := func(t time.Time) string { return t.UTC().Format("15:04:05") }
	span := b.Last.Sub(b.First).Round(time.Second)
	expl := fmt.Sprintf("%s is healthy now: the failure is over. Its errors ran from %s to %s UTC (%s, %s) and none since, %s ago, while it kept serving requests (normal lines until %s UTC)",
		what, hms(b.First), hms(b.Last), plural(b.Lines, "line", "lines"), span, now.Sub(b.Last).Round(time.Minute), hms(b.Serving))
	for _, a := range resolved {
		expl += fmt.Sprintf("; alert %s fired at %s and resolved at %s UTC", a.Name, a.StartsAt.UTC().Format("15:04"), a.EndsAt.UTC().Format("15:04"))
	}
	expl += "."
	if old, cur := burstVersions(sets, subjects); old != "" {
		expl += fmt.Sprintf(" Its errors came only from instances still running %s while they were replaced by %s (the two versions side by side during the rollout: a version skew between old and new pods), and stopped when the last old one was gone; %s serves without them, so rolling back to %s would bring the mixed versions back.", old, cur, cur, old)
		res.RootCause.Evidence = append(res.RootCause.Evidence, fmt.Sprintf("every error line names version %s; the instances serving since name version %s", old, cur))
	}
	cause := strings.TrimSpace(res.RootCause.Description)
	res.RootCause.Description = expl + " What caused them (transient, recovered on its own): " + cause
	res.Summary = expl + " " + res.Summary
	res.Verdict = finding.VerdictHealthy
	res.RootCause.Confidence = min(res.RootCause.Confidence, 70)
	res.RootCause.Evidence = append([]string{
		fmt.Sprintf("%s: %s of errors from %s to %s UTC, none in the %s since; normal lines until %s UTC", b.Source, plural(b.Lines, "line", "lines"), hms(b.First), hms(b.Last), now.Sub(b.Last).Round(time.Minute), hms(b.Serving)),
	}, res.RootCause.Evidence...)
	for _, a := range resolved {
		res.RootCause.Evidence = append(res.RootCause.Evidence, fmt.Sprintf("alert %s resolved at %s UTC (fired %s UTC)", a.Name, a.EndsAt.UTC().Format("15:04"), a.StartsAt.UTC().Format("15:04")))
	}
	res.Timeline = append(res.Timeline, finding.TimelineEvent{Timestamp: b.Last.UTC().Format(time.RFC3339), Event: fmt.Sprintf("last error of %s; none since", what)})
	sort.SliceStable(res.Timeline, func(i, j int) bool { return res.Timeline[i].Timestamp < res.Timeline[j].Timestamp })
	res.Recommendations = append([]finding.Recommendation{{Priority: finding.PriorityLow,
		Action: fmt.Sprintf("Close the incident: %s has recovered; keep the follow-ups below to make the next occurrence shorter or silent", what)}},
		res.Recommendations...)
	res.Normalize()
	return true
}

// versionFieldRE is the version a structured line names ("version":
// "8.2.4", version=8.2.4, app_version=...).
var versionFieldRE = regexp.MustCompile(`(?i)"?\b(?:app_?|service_?)?version"?\s*[:=]\s*"?v?(\d+\.\d+(?:\.\d+)?(?:[-+][\w.]+)?)\b`)

// burstVersions reads the version the subjects' error lines name and the
// one their other lines name: when every error names one version and the
// lines of normal work name another, the errors came from the old
// instances of a rollout only.
func burstVersions(sets []LogSet, subjects []string) (old, cur string) {
	errs, oks := map[string]bool{}, map[string]bool{}
	for i := range sets {
		set := &sets[i]
		if !containsFold(subjects, set.Subject) {
			continue
		}
		for j, t := range set.Templates {
			for _, l := range t.Lines() {
				m := findSubmatch(versionFieldRE, l)
				if m == nil {
					continue
				}
				if set.classified(j).isErr {
					errs[m[1]] = true
				} else {
					oks[m[1]] = true
				}
			}
		}
	}
	if len(errs) != 1 {
		return "", ""
	}
	for v := range errs {
		old = v
	}
	for v := range oks {
		if v != old {
			if cur != "" {
				return "", "" // more than one other version: no rollout's two sides
			}
			cur = v
		}
	}
	if cur == "" {
		return "", ""
	}
	return old, cur
}
