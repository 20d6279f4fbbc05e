package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A release rolled back because its pods never became ready: Helm's
// --atomic (or --wait with a rollback in the pipeline, a Flux HelmRelease
// with remediation, Argo Rollouts aborting) waits for the new pods, gives
// up when its timeout passes ("Upgrade "x" failed: context deadline
// exceeded", "timed out waiting for the condition") and rolls the release
// back, so the previous version keeps running. The cause is what kept the
// new pods from becoming ready (unschedulable, crashing, pulling, probing);
// the rollback is how the question meets it ("why did my deployment roll
// back?"). rolledBackNote adds the failed upgrade and the rollback of the
// root's workload to the answer, after the root's own description.

var (
	// releaseRollbackRE is a change or release revision that rolls a
	// release back.
	releaseRollbackRE = regexp.MustCompile(`(?i)\brolled back\b|\bRollbackSucceeded\b|\brollback to\b|\brolling back\b|\bRollback to \d+`)
	// releaseTimedOutRE is a release that failed waiting for its
	// workloads.
	releaseTimedOutRE = regexp.MustCompile(`(?i)\bfailed\b.*(?:context deadline exceeded|timed out waiting for the condition|timed out|timeout)|\b(?:UpgradeFailed|InstallFailed)\b.*(?:deadline|timed out|timeout)|progress deadline exceeded`)
)

// rolledBackNote is the sentence (and its evidence) that says the root's
// workload was released, timed out waiting for it and was rolled back: a
// change of the root's subject after its trigger that rolls back, with
// the failed revision's words when one was read ("" when none did).
func rolledBackNote(a *Analysis, w *Hypothesis, desc string) (note, evidence string) {
	if w.Trigger == nil || w.Trigger.Kind != KindDeploy || strings.Contains(strings.ToLower(desc), "rolled back") {
		return "", ""
	}
	var back, failed *Finding
	for i := range a.Findings {
		f := &a.Findings[i]
		if infoOf(f.Kind).class != classChange || !strings.EqualFold(f.Subject, w.Subject) || f.Time.Before(w.Trigger.Time) || f == w.Trigger {
			continue
		}
		t := f.fact("description") + " " + f.Summary
		switch {
		case matchLine(releaseTimedOutRE, t) && failed == nil:
			failed = f
		case matchLine(releaseRollbackRE, t) && back == nil && f.Time.After(w.Trigger.Time):
			back = f
		}
	}
	if back == nil {
		return "", ""
	}
	note = fmt.Sprintf("Because of it the new version of %s never became ready", w.Subject)
	if failed != nil {
		note += fmt.Sprintf(": the release gave up waiting for it (%s)", quote(truncate(releaseFailure(failed), 160), 170))
	}
	note += fmt.Sprintf(" and was rolled back at %s (%s), so the previous version keeps running.", ts(back.Time), quote(truncate(releaseWords(back), 160), 170))
	evidence = fmt.Sprintf("%s rolled back at %s: %s", w.Subject, ts(back.Time), truncate(releaseWords(back), 200))
	if failed != nil {
		evidence = fmt.Sprintf("%s: %s at %s; ", w.Subject, truncate(releaseFailure(failed), 200), ts(failed.Time)) + evidence
	}
	return note, evidence
}

// releaseWords is what a change says of itself: its description, else
// its summary.
func releaseWords(c *Finding) string {
	return orWord(c.fact("description"), c.Summary)
}

// releaseFailure is the words of a failed release from where it says it
// failed ("failed: Upgrade "x" failed: context deadline exceeded"),
// without the reader's notes in parentheses.
func releaseFailure(c *Finding) string {
	t := releaseWords(c)
	if loc := releaseTimedOutRE.FindStringIndex(t); loc != nil {
		t = t[loc[0]:]
	}
	t, _, _ = strings.Cut(t, " (helm printed")
	return t
}
