package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A server that does not honour its callers' deadlines. Its requests
// wait in a queue of its own (an executor's queue, a worker pool's
// backlog) before they are handled; once a stall (a dependency's pause, a
// burst) has filled that queue, every request waits longer than its
// caller's deadline. The callers give up (gRPC DEADLINE_EXCEEDED, "context
// deadline exceeded") and retry, but the server never looks at the
// deadline or the cancellation: it handles each abandoned request in turn,
// logs it as a success in tens of milliseconds (the handling, not the
// wait), and the callers' retries keep the queue full. The state holds
// after the stall is over: the root is the server's queue of abandoned
// work, not the dependency that stalled nor the callers. Read from the
// server's request log (the time its requests spend queued, far above
// their handling and above the callers' deadline, slowcall.go's
// finding) and a caller's log of its calls to it ending in deadline
// exceeded (with the deadline it set, and its retries).

// KindDeadlineIgnored is a server working on requests its callers have
// abandoned.
const KindDeadlineIgnored Kind = "deadline_ignored"

// A call its caller cut at its deadline is deadlinecut.go's
// deadlineExceededRE.
var (
	// callDeadlineRE is the deadline a caller's line states.
	callDeadlineRE = regexp.MustCompile(`(?i)\b(?:timeout|deadline|grpc-timeout|timeout_ms|deadline_ms)"?\s*[=:]\s*"?(\d+(?:\.\d+)?)\s*(ms|s)?\b`)
	// queuedFieldRE is a request log's field of the time spent waiting
	// before the handler.
	queuedFieldRE = regexp.MustCompile(`(?i)queue|queued|wait|pending|backlog`)
	// retryingRE is a caller that retries a failed call.
	retryingRE = regexp.MustCompile(`(?i)\bretrying\b|\bretry(?:ing)? (?:attempt|in)\b|\battempts?["']?\s*[=:]\s*["']?[2-9]`)
)

var deadlineIgnored = &mechanism{
	kind:   KindDeadlineIgnored,
	class:  classCause,
	label:  "a server working on requests its callers abandoned (deadline not honoured)",
	detect: detectDeadlineIgnored,
	// The server's queue and saturation, the callers' timeouts and
	// errors, the stall that filled the queue.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject || f.fact("caller") == h.Subject || f.Subject == h.fact("caller") || f.fact("callee") == h.Subject || f.Kind == KindSlowCall && f.fact("caller") == h.Subject
	}),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s does not honour its callers' deadlines: its requests wait %s in its queue (%s) before they are handled in %s", h.Subject, h.fact("queued"), h.fact("field"), orWord(h.fact("handled"), "a normal time"))
		if dl := h.fact("deadline"); dl != "" {
			d += fmt.Sprintf(", far past %s's deadline of %s", h.fact("caller"), dl)
		}
		d += fmt.Sprintf(", so %s has abandoned every call (deadline exceeded) by the time %s handles it and logs it a success", h.fact("caller"), h.Subject)
		d += h.quoteClause(" — ", "caller_line", 180)
		d += fmt.Sprintf("; %s still works through the abandoned requests in order", h.Subject)
		if h.fact("retries") != "" {
			d += fmt.Sprintf(", and %s's retries add more of them", h.fact("caller"))
		}
		d += ", so the backlog does not drain even after what first slowed it has recovered"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Drain %s's queue now (restart its pods or shed the queued requests) so it serves fresh requests within %s's deadline again", h.Subject, h.fact("caller"))
		r.high("Make %s honour the deadline: check the call's deadline or cancellation before handling a queued request and drop it when it has passed (gRPC's Context.isCancelled / ctx.Err(), the grpc-timeout header), and bound its executor queue so it rejects rather than queues work it cannot serve in time", h.Subject)
		r.med("Give %s's retries to %s a budget (retry only within the remaining deadline, with backoff) so they do not refill the queue", h.fact("caller"), h.Subject)
		r.low("Alert on %s's queue wait against the callers' deadline (its queued time, executor queue size)", h.Subject)
	},
}

// detectDeadlineIgnored finds a server whose requests wait in its queue
// longer than a caller's deadline while that caller's calls to it end in
// deadline exceeded.
func detectDeadlineIgnored(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	// The time breakdown of the server's request log (slowcall.go).
	slow := detectTimeBreakdown(ev, found)
	for i := range slow {
		s := &slow[i]
		if s.Kind != KindSlowCall || !matchLine(queuedFieldRE, s.fact("field")) {
			continue
		}
		server := s.fact("caller")
		queued, ok := secondsWord(s.fact("now"))
		total, _ := secondsWord(s.fact("total_now"))
		if server == "" || !ok || queued < 0.5 {
			continue
		}
		caller, line, deadline, retries, first := deadlineCaller(ev, server)
		if caller == "" || deadline > 0 && queued < deadline {
			continue
		}
		f := Finding{Kind: KindDeadlineIgnored, Subject: server, Object: "service " + server, Namespace: s.Namespace, Source: s.Source, Time: firstOf(first, s.Time), Severity: SevCritical, Weight: 0.9, Related: []string{caller}}
		f.setFact("caller", caller)
		f.setFact("field", s.fact("field"))
		f.setFact("queued", s.fact("now"))
		if total > queued {
			f.setFact("handled", seconds(total-queued))
		}
		if deadline > 0 {
			f.setFact("deadline", seconds(deadline))
		}
		if retries {
			f.setFact("retries", "true")
		}
		f.setFact("caller_line", line)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's requests wait %s of %s in its queue (%s): %s", server, s.fact("now"), s.fact("total_now"), s.fact("field"), quote(ReadableLine(s.fact("line")), 220)))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s's calls to %s end in deadline exceeded from %s%s: %s", caller, server, hm(first), map[bool]string{true: ", and it retries them", false: ""}[retries], quote(ReadableLine(line), 220)))
		f.Summary = fmt.Sprintf("%s handles requests %s after %s abandoned them (deadline exceeded)", server, s.fact("now"), caller)
		out = append(out, f)
	}
	return out
}

// deadlineCaller finds a caller whose log shows its calls to server cut
// at their deadline: the caller, a line, the deadline it states
// (seconds, 0 unknown), whether it retries, and when it began.
func deadlineCaller(ev *Gathered, server string) (caller, line string, deadline float64, retries bool, first time.Time) {
	short := strings.Split(strings.ToLower(server), "-")[0]
	for _, set := range ev.Logs {
		if set.Subject == "" || set.Subject == server || set.Host {
			continue
		}
		n := 0
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, l := range t.Lines() {
				if !matchLine(deadlineExceededRE, l) {
					if matchLine(retryingRE, l) && strings.Contains(strings.ToLower(l), short) {
						retries = true
					}
					continue
				}
				low := strings.ToLower(l)
				if !strings.Contains(low, short) && !callsHost(l, server) {
					continue
				}
				n += t.Incident
				line = orWord(line, l)
				if matchLine(retryingRE, l) {
					retries = true
				}
				if m := findSubmatch(callDeadlineRE, l); m != nil && deadline == 0 {
					if v, ok := secondsOf(m[1], orWord(m[2], "ms")); ok {
						deadline = v
					}
				}
				if at := firstOf(t.FirstIncident, t.FirstSeen); first.IsZero() || at.Before(first) {
					first = at
				}
			}
		}
		if n >= 3 {
			return set.Subject, line, deadline, retries, first
		}
		line, deadline, retries, first = "", 0, false, time.Time{}
	}
	return "", "", 0, false, time.Time{}
}

// secondsWord reads a duration as seconds() prints it ("4.12 s", "800
// ms").
func secondsWord(s string) (float64, bool) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false
	}
	if unit == "ms" {
		v /= 1000
	}
	return v, true
}
