package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Threads deadlocked in a process: the JVM's thread dump reports "Found
// one Java-level deadlock" (threads BLOCKED, each waiting for a monitor
// another holds), Go's runtime "all goroutines are asleep - deadlock!".
// The requests that need those locks hang for ever, the server's workers
// fill up one by one and its callers time out, while the CPU stays idle:
// the process is neither slow nor overloaded, it is stuck.

// KindDeadlock is a process whose threads wait on each other's locks.
const KindDeadlock Kind = "thread_deadlock"

var (
	// deadlockReportRE matches the line a runtime prints when it found a
	// deadlock (not a database's "deadlock detected", which aborts one
	// transaction and lets the rest go on).
	deadlockReportRE = regexp.MustCompile(`Found (?:one|\d+) Java-level deadlocks?|\bFound \d+ deadlocks?\.|all goroutines are asleep - deadlock`)
	// lockWaitRE matches a thread dump's line of a thread waiting for a
	// lock, with the class of the lock's object.
	lockWaitRE = regexp.MustCompile(`waiting to lock (?:monitor 0x[0-9a-f]+ \(object 0x[0-9a-f]+, a |<0x[0-9a-f]+> \(a )([\w.$]+)\)|waiting for ownable synchronizer 0x[0-9a-f]+, \(a ([\w.$]+)\)`)
	// blockedStateRE matches a thread dump's state line of a thread
	// blocked on a monitor.
	blockedStateRE = regexp.MustCompile(`java\.lang\.Thread\.State: BLOCKED`)
)

var threadDeadlock = &mechanism{
	kind:   KindDeadlock,
	class:  classCause,
	label:  "threads deadlocked (waiting on each other's locks)",
	detect: detectDeadlocks,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindFeatureFlag) && c.relates(h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the threads of %s are deadlocked: its runtime reports a deadlock (%s)", h.Subject, quote(ReadableLine(h.fact("line")), 120))
		if l := h.fact("locks"); l != "" {
			d += fmt.Sprintf(": threads hold locks and wait for each other's (%s)", l)
		}
		if n := h.fact("blocked"); n != "" {
			d += fmt.Sprintf(", %s threads BLOCKED in its thread dump", n)
		}
		d += ", so every request that needs those locks hangs for ever, its request threads fill up and its callers time out while its CPU stays idle — it is stuck, not slow or overloaded"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Restart %s to release the deadlocked threads (a thread dump before the restart keeps the evidence)", h.Subject)
		r.med("Fix the lock order in %s: take %s always in one order, or do the work outside the lock", h.Subject, orWord(h.fact("locks"), "the locks"))
		r.low("Alert on BLOCKED threads (jvm_threads_states_threads{state=\"blocked\"}) and on busy request threads with idle CPU")
	},
}

// detectDeadlocks finds, in each log source, the report of a runtime that
// found a deadlock, with the classes of the locks its threads wait for. It
// began no later than the source subject's own saturation (its workers
// filling up): a thread dump is taken after the fact.
func detectDeadlocks(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		report, blocked := -1, 0
		var locks []string
		for j, t := range set.Templates {
			for _, l := range t.Lines() {
				// The report that names the runtime ("Found one
				// Java-level deadlock") before its count ("Found 1
				// deadlock.").
				if matchLine(deadlockReportRE, l) && (report < 0 || strings.Contains(l, "-level") && !strings.Contains(set.Templates[report].Example, "-level")) {
					report = j
				}
				if m := findSubmatch(lockWaitRE, l); m != nil {
					c := shortClass(m[1] + m[2])
					if !slices.Contains(locks, c) {
						locks = append(locks, c)
					}
				}
			}
			if matchLine(blockedStateRE, t.Example) {
				blocked += t.Count
			}
		}
		if report < 0 {
			continue
		}
		t := set.Templates[report]
		onset := t.FirstIncident
		if onset.IsZero() {
			onset = t.FirstSeen
		}
		if !ev.Window.recent(onset) {
			continue
		}
		for _, g := range found {
			if g.Subject == set.Subject && (g.Kind == KindSaturation || g.Kind == KindWorkerPool) && !g.Time.IsZero() &&
				g.Time.Before(onset) && !g.Time.Before(ev.Window.Start) {
				onset = g.Time
			}
		}
		line := t.Example
		f := Finding{Kind: KindDeadlock, Subject: set.Subject, Namespace: set.Namespace, Source: set.Origin, Object: set.Origin + " " + set.Source,
			Time: onset, Severity: SevCritical, Weight: 0.92,
			Summary:  fmt.Sprintf("%s reports a deadlock of its threads", set.Subject),
			Evidence: []string{templateEvidence(*set, t, line)}}
		f.setFact("line", line)
		f.setFact("source", set.Source)
		f.setFact("caller", set.Subject)
		f.setFact("locks", strings.Join(locks, ", "))
		if blocked > 0 {
			f.setFact("blocked", fmt.Sprint(blocked))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s in its thread dump", set.Source, plural(blocked, "thread BLOCKED (on object monitor)", "threads BLOCKED (on object monitor)")))
		}
		out = append(out, f)
	}
	return out
}

// shortClass is a class name without its package
// ("com.acme.policy.PolicyCache" → "PolicyCache").
func shortClass(c string) string {
	if i := strings.LastIndexByte(c, '.'); i >= 0 && i < len(c)-1 {
		return c[i+1:]
	}
	return c
}
