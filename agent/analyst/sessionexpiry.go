package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A run that outlasts its credentials: a batch job obtains short-lived
// session credentials once, at its start (aws sts assume-role with
// --duration-seconds, a role's MaxSessionDuration capping it, a token
// minted with a lifetime) and hands them to the process as plain keys,
// which nothing refreshes. While the run is shorter than the session it
// succeeds; once the work grows past the session's lifetime (more tables,
// more data), every run fails at the same elapsed time with an expired
// token (AWS's ExpiredToken, "The provided token has expired", "The
// security token included in the request is expired"; Google's
// ACCESS_TOKEN_EXPIRED; Azure's ExpiredAuthenticationToken), on whatever
// call it was making then. The storage it called is not flaky and the
// credential is not revoked: the run is longer than its session. Read by
// the failed Job's mechanism (jobfailed.go) as the reason behind the
// expired-token line of its log.

var (
	// sessionExpiredRE is a provider's refusal of a session credential
	// that has expired (not an unknown or a revoked one).
	sessionExpiredRE = regexp.MustCompile(`(?i)\bExpiredToken(?:Exception)?\b|token has expired|security token included in the request is expired|\bRequestExpired\b|\bExpiredAuthenticationToken\b|ACCESS_TOKEN_EXPIRED|credentials? (?:have|has) expired`)
	// sessionLifetimeRE is the lifetime a session was asked for or is
	// capped at: the CLI's --duration-seconds, the STS request's
	// DurationSeconds (CloudTrail's requestParameters), the role's
	// MaxSessionDuration, an AWS config profile's duration_seconds, a
	// Google access token's --lifetime.
	sessionLifetimeRE = regexp.MustCompile(`(?i)(--duration-seconds|\bdurationSeconds|\bMaxSessionDuration|\bduration_seconds|--lifetime)["'\s:=]+"?(\d+)(s|m|h)?\b`)
	// An elapsed time a process reports at its end ("aborted after
	// 3687s", "elapsed=3420s").
	sessionElapsedRE = regexp.MustCompile(`(?i)\b(?:after|elapsed[=: ]+|took|ran for)\s*(\d+(?:\.\d+)?)\s*(s|sec|seconds|m|min|minutes)\b`)
)

// sessionLife is a stated session lifetime and where it was read.
type sessionLife struct {
	d      time.Duration
	source string
}

// sessionLifetimes reads the session lifetimes the evidence states: the
// commands handed over (an entrypoint script, get-role's output), the
// logs (CloudTrail's AssumeRole events), the changes.
func sessionLifetimes(ev *Gathered) []sessionLife {
	var out []sessionLife
	seen := map[string]bool{}
	add := func(l, where string) {
		for _, m := range findAllSubmatch(sessionLifetimeRE, l, -1) {
			d := durationOf(m[2], m[3], time.Second)
			if d < time.Minute || d > 48*time.Hour {
				continue
			}
			key := strings.ToLower(m[1]) + fmtSeconds(d)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, sessionLife{d: d, source: fmt.Sprintf("%s %s (%s)", strings.Trim(m[1], `"'`), fmtSeconds(d), where)})
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			add(l, "from "+quote(c.Command, 80))
		}
	}
	for _, set := range ev.Logs {
		for _, l := range setLines(set) {
			add(l, "in "+set.Source)
		}
	}
	for _, c := range ev.Changes {
		add(c.Description, "change of "+ts(c.Timestamp))
	}
	return out
}

// runElapsed is how long a run had been going when its log first
// reported an expired session: from its first dated line to that line, or
// what the process says at its end.
func runElapsed(lines []string, ref time.Time) (time.Duration, string) {
	// What the process says at its end is the run's own measure.
	for _, l := range lines {
		if m := findSubmatch(sessionElapsedRE, l); m != nil && !strings.Contains(strings.ToLower(l), "elapsed=") {
			unit := "s"
			if strings.HasPrefix(strings.ToLower(m[2]), "m") {
				unit = "m"
			}
			n, _, _ := strings.Cut(m[1], ".")
			if d := durationOf(n, unit, time.Second); d > 0 {
				return d, "as its log says: " + quote(ReadableLine(l), 120)
			}
		}
	}
	var first, expired time.Time
	for _, l := range lines {
		t, ok := evidence.LineTime([]byte(l), ref)
		if !ok {
			continue
		}
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if matchLine(sessionExpiredRE, l) && (expired.IsZero() || t.Before(expired)) {
			expired = t
		}
	}
	if !first.IsZero() && expired.After(first) {
		return expired.Sub(first), "from its first log line to its first expired-token line"
	}
	return 0, ""
}

// jobRan is how long a Job ran before it failed, from its object.
func jobRan(k K8sEvidence, name string) time.Duration {
	for i := range k.Jobs {
		j := &k.Jobs[i]
		if j.Name != name || j.Status.StartTime == nil {
			continue
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.LastTransitionTime.After(j.Status.StartTime.Time) {
				return c.LastTransitionTime.Sub(j.Status.StartTime.Time)
			}
		}
	}
	return 0
}

// sessionOutlived explains a failed run whose log reports an expired
// session by the run's length against the session's lifetime: when the
// run had lasted at least about the lifetime the evidence states, the
// session ran out under it. It sets the finding's facts and evidence.
func sessionOutlived(ev *Gathered, f *Finding, lines []string) bool {
	if !matchLine(sessionExpiredRE, f.fact("line")) && !anyMatch(sessionExpiredRE, lines) {
		return false
	}
	elapsed, how := runElapsed(lines, ev.Window.End)
	if d := jobRan(ev.K8s, f.fact("job")); elapsed <= 0 && d > 0 {
		elapsed, how = d, "from the Job's start to its failure"
	}
	if elapsed <= 0 {
		return false
	}
	var life *sessionLife
	for _, l := range sessionLifetimes(ev) {
		// The session ran out under the run: it had lasted about the
		// lifetime or more (clocks and the start of the process differ
		// by a few minutes at most).
		if elapsed+5*time.Minute >= l.d && (life == nil || l.d < life.d) {
			life = &l
		}
	}
	if life == nil {
		return false
	}
	f.setFact("session_lifetime", fmtSeconds(life.d))
	f.setFact("session_lifetime_words", durationWords(life.d))
	f.setFact("session_source", life.source)
	f.setFact("run_elapsed", elapsed.Round(time.Minute).String())
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("the session credentials last %s: %s", fmtSeconds(life.d), life.source),
		fmt.Sprintf("the run had lasted %s when its session expired (%s)", elapsed.Round(time.Second), how))
	return true
}

// describeSessionOutlived is the sentence of a run that outlasted its
// session.
func describeSessionOutlived(h *Hypothesis) string {
	return fmt.Sprintf("the run outlasts its session credentials: they last at most %s (%s: %s) and nothing renews them during the run; the run had been going %s when they expired, so every call from then on (whatever it is: an upload, a query) fails with an expired token — the service called is not flaky and the credential is not revoked, the work has grown longer than the session",
		h.fact("session_lifetime"), h.fact("session_lifetime_words"), h.fact("session_source"), h.fact("run_elapsed"))
}

// recommendSessionOutlived recommends what ends a run outlasting its
// session.
func recommendSessionOutlived(h *Hypothesis, r *recommender) {
	r.high("Let the credentials of %s outlive its run: raise the session duration it asks for (--duration-seconds) together with the role's MaxSessionDuration (up to 12 hours), or better let the SDK refresh them (a profile with role_arn and a source, or web identity / pod identity credentials instead of keys exported once), then re-run it", h.Subject)
	r.med("Split the run (one job per table or partition) so that each part stays well within its session")
	r.low("Alert on the run's duration approaching its session lifetime of %s", h.fact("session_lifetime"))
}

// durationWords says a duration the way people do ("one hour").
func durationWords(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "one hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}

// anyMatch reports whether re matches any of lines.
func anyMatch(re *regexp.Regexp, lines []string) bool {
	for _, l := range lines {
		if matchLine(re, l) {
			return true
		}
	}
	return false
}

// jobRunLines are the log lines of a failed Job's pod: its container's
// log handed over, else its pod's log, else the logs of its Job or
// CronJob (the pod is gone with the Job).
func jobRunLines(ev *Gathered, f *Finding) []string {
	var out []string
	if pod := f.fact("pod"); pod != "" {
		for _, l := range ev.K8s.PreviousLogs[f.Namespace+"/"+pod+"/"+f.fact("container")] {
			out = append(out, l.Text)
		}
		if len(out) == 0 {
			out = podLogLines(ev.Logs, pod)
		}
	}
	if len(out) > 0 {
		return out
	}
	job := f.fact("job")
	for _, set := range ev.Logs {
		if set.Subject != f.Subject && (job == "" || !strings.HasPrefix(set.Source, job)) {
			continue
		}
		out = append(out, setLines(set)...)
	}
	return out
}

// setLines are a log set's lines, or its templates' examples when its
// lines were not kept.
func setLines(set LogSet) []string {
	var out []string
	for _, l := range set.Lines {
		out = append(out, l.Text)
	}
	if len(out) == 0 {
		for _, t := range set.Templates {
			out = append(out, t.Example)
		}
	}
	return out
}

// kindSessionOutlived names, in a failed Job's playbook, a run that
// outlasted its session (not a kind of finding of its own).
const kindSessionOutlived Kind = "session_outlived"
