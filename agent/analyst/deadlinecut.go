package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A caller's deadline cut below a call's duration: the caller's calls fail
// with DEADLINE_EXCEEDED ("context deadline exceeded", "Deadline
// Exceeded") all at the same elapsed time, its own deadline, while the
// callee logs the same calls cancelled by the client after that time —
// the callee is neither slow nor overloaded, its longer calls (a bulk
// method) just take longer than the caller now waits. The caller's change
// that set the timeout (a shared client's default, a per-call timeout)
// is the root; the callee is where the failures show.

// KindDeadlineCut is a caller's deadline shorter than its callee's calls.
const KindDeadlineCut Kind = "deadline_cut"

var (
	deadlineExceededRE = regexp.MustCompile(`(?i)DeadlineExceeded|DEADLINE_EXCEEDED|context deadline exceeded|deadline exceeded`)
	// clientCancelledRE is a server's log of a call its client gave up on.
	clientCancelledRE = regexp.MustCompile(`(?i)cancell?ed by (?:the )?client|client cancell?ed|CANCELL?ED: (?:io\.grpc\.)?Context was cancell?ed|context canceled by client|client disconnected before`)
	elapsedRE         = regexp.MustCompile(`(?i)(?:elapsed|duration|took|after|latency)"?\s*[=: ]\s*"?(\d+(?:\.\d+)?)\s*(ms|s)\b`)
	timeoutChangeRE   = regexp.MustCompile(`(?i)(?:timeout|deadline)\D{0,30}?(\d+(?:\.\d+)?\s*(?:ms|s))\b`)
	grpcMethodRE      = regexp.MustCompile(`\b((?:Get|List|Create|Update|Delete|Put|Search|Find|Compute|Calculate|Fetch|Batch|Bulk|Stream|Send|Submit|Check|Validate|Process)[A-Z]\w*)\b`)
)

var deadlineCut = &mechanism{
	kind:   KindDeadlineCut,
	class:  classCause,
	label:  "a caller's deadline shorter than its calls",
	detect: detectDeadlineCut,
	related: func(h *Hypothesis, f *Finding) bool {
		c := h.fact("callee")
		return c != "" && (f.Subject == c || f.relates(c))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.relates(h.Subject) && timeoutChangeRE.MatchString(changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's deadline for its calls to %s", h.Subject, orWord(h.fact("callee"), "its upstream"))
		if v := h.fact("deadline"); v != "" {
			d += " is " + v
		}
		d += ", shorter than those calls take"
		if m := h.fact("method"); m != "" {
			d += fmt.Sprintf(" (%s)", m)
		}
		d += fmt.Sprintf(": every longer call is cut at the deadline with DEADLINE_EXCEEDED — %s", quote(ReadableLine(h.fact("line")), 200))
		if c := h.fact("cancelled"); c != "" {
			d += fmt.Sprintf("; %s sees the same calls cancelled by the client — %s; it is not slow nor overloaded", orWord(h.fact("callee"), "the callee"), quote(ReadableLine(c), 200))
		}
		if c := h.fact("timeout_change"); c != "" {
			d += fmt.Sprintf("; the timeout was set by %s", quote(c, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give %s's calls to %s a deadline above their duration (%s) or roll the timeout change back", h.Subject, orWord(h.fact("callee"), "its upstream"), orWord(h.fact("method"), "the long calls"))
		r.rollback()
		r.low("Set timeouts per method from measured latency (p99 plus headroom), not one default for every upstream call, and alert on DEADLINE_EXCEEDED by method")
	},
}

// detectDeadlineCut reads a caller's DEADLINE_EXCEEDED lines, all cut at
// one elapsed time or following its own timeout change, with a callee
// logging the calls cancelled by its client.
func detectDeadlineCut(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			if t.Incident == 0 || t.Baseline > 0 || !deadlineExceededRE.MatchString(t.Example) {
				continue
			}
			onset := orTime(t.FirstIncident, t.FirstSeen)
			// The elapsed times of the failures: one deadline when equal.
			var elapsed []float64
			for _, l := range []string{t.Example, t.Last} {
				if v, ok := lineElapsed(l); ok {
					elapsed = append(elapsed, v)
				}
			}
			same := len(elapsed) > 0
			for _, v := range elapsed {
				same = same && v > 0.9*elapsed[0] && v < 1.1*elapsed[0]
			}
			var change, deadline string
			for _, c := range ev.Changes {
				if c.Service != set.Subject || onset.IsZero() || c.Timestamp.After(onset.Add(2*time.Minute)) || onset.Sub(c.Timestamp) > triggerFar {
					continue
				}
				if m := timeoutChangeRE.FindStringSubmatch(c.Description); m != nil {
					change, deadline = c.Description, strings.ReplaceAll(m[1], " ", "")
				}
			}
			callee, cancelled := "", ""
			for _, o := range ev.Logs {
				if o.Subject == set.Subject {
					continue
				}
				for _, ot := range o.Templates {
					if ot.Incident > 0 && clientCancelledRE.MatchString(ot.Example) {
						callee, cancelled = o.Subject, ot.Example
						break
					}
				}
				if callee != "" {
					break
				}
			}
			if callee == "" || !same && change == "" {
				continue
			}
			// The deadline as the callee states it ("cancelled by client
			// after 800ms"), else about the caller's elapsed time.
			if v, ok := lineElapsed(cancelled); deadline == "" && ok {
				deadline = strconv.FormatFloat(v*1000, 'f', 0, 64) + "ms"
			} else if deadline == "" && same {
				deadline = "about " + strconv.FormatFloat(elapsed[0]*1000, 'f', 0, 64) + "ms"
			}
			f := Finding{Kind: KindDeadlineCut, Subject: set.Subject, Source: SrcLogs, Time: onset, Severity: SevCritical, Weight: 0.9,
				Related: []string{callee},
				Summary: fmt.Sprintf("%s's calls to %s fail with DEADLINE_EXCEEDED at its deadline (%s)", set.Subject, callee, orWord(deadline, "one elapsed time")),
				Evidence: []string{fmt.Sprintf("logs %s: %d DEADLINE_EXCEEDED lines, new in the window: %s", set.Subject, t.Incident, quote(t.Example, 240)),
					fmt.Sprintf("logs %s: calls cancelled by the client: %s", callee, quote(cancelled, 240))}}
			f.setFact("line", t.Example)
			f.setFact("callee", callee)
			f.setFact("cancelled", cancelled)
			f.setFact("deadline", deadline)
			f.setFact("timeout_change", change)
			f.setFact("method", grpcMethodRE.FindString(cancelled))
			out = append(out, f)
			break
		}
	}
	return out
}

// lineElapsed is the elapsed time a line states, in seconds.
func lineElapsed(l string) (float64, bool) {
	m := elapsedRE.FindStringSubmatch(l)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	if strings.EqualFold(m[2], "ms") {
		v /= 1000
	}
	return v, true
}
