package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// An event loop blocked by synchronous work: a single-threaded runtime
// (Node.js, Python's asyncio, a Vert.x event loop) serves every request on
// one thread, so a piece of synchronous work on it (decompressing or
// parsing a large payload with zlib.gunzipSync and JSON.parse, a crypto
// hash, a regular expression, a blocking call in a coroutine) stops every
// request the process holds for as long as it runs. Requests that arrive
// meanwhile wait seconds and the edge answers 504, health checks time out
// (readiness fails, the pod leaves the endpoints), and nothing in the
// error logs says why: the requests themselves are fast once they run.
// The runtime says so when asked: blocked-at's "Blocked for 7009ms,
// operation started here" with the stack of the operation, Vert.x's
// BlockedThreadChecker ("Thread[vert.x-eventloop-thread-1] has been
// blocked for 2767 ms, time limit is 2000 ms"), asyncio's debug warning
// ("Executing <Task ...> took 2.345 seconds"), and prom-client's
// nodejs_eventloop_lag_max_seconds. The fix is moving the work off the
// loop (a worker thread, a streaming parser, an executor), not the proxy
// in front or more replicas.

// KindEventLoopBlocked is a single-threaded runtime's event loop blocked
// by synchronous work.
const KindEventLoopBlocked Kind = "event_loop_blocked"

var eventLoopBlocked = &mechanism{
	kind:       KindEventLoopBlocked,
	class:      classCause,
	label:      "event loop blocked by synchronous work",
	lines:      eventLoopBlockedRE,
	lineWeight: 0.86,
	detect:     detectEventLoopBlocked,
	related:    kindsOnSubject(KindProbeFailure, KindLatency, KindTimeout, KindSlowOperation, KindSaturation, KindErrorRate, KindCPUThrottling),
	// The release that put the work on the loop is the subject's own.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) && (c.Kind == KindDeploy || c.Kind == KindConfigChange) && !matchLine(restartChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s's event loop is blocked by synchronous work", s)
		if b := h.fact("blocked"); b != "" {
			d += " for up to " + b + " at a time"
		}
		if o := h.fact("operation"); o != "" {
			d += fmt.Sprintf(" (the operation started at %s)", o)
		}
		d += fmt.Sprintf(": the runtime serves every request on that one thread, so while the work runs every request %s holds waits, callers and proxies time out (504s) and health checks fail", s)
		if m := h.fact("lag"); m != "" {
			d += " (" + m + ")"
		}
		d += ", although each request is fast once it runs: the cause is the blocking work in the process, not the network, the proxy in front or the load"
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 160)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.high("Move the blocking work of %s off the event loop%s: a worker thread or a separate job, streaming or asynchronous decompression and parsing instead of the synchronous calls", s, h.wrapped(" (", "operation", ")"))
		r.med("Until then keep %s's health checks off the blocked loop's path and give them a timeout longer than the longest block, so pods are not taken out together", s)
		r.low("Alert on %s's event loop lag (nodejs_eventloop_lag_max_seconds, blocked-at warnings) above a few hundred milliseconds", s)
	},
}

var (
	// eventLoopBlockedRE is a runtime saying its loop was blocked, with
	// for how long: blocked-at (Node), Vert.x's blocked-thread checker,
	// asyncio's slow-callback warning in debug mode.
	eventLoopBlockedRE = regexp.MustCompile(`(?i)\bBlocked for \d+(?:\.\d+)? ?ms\b|\bevent[ -]?loop (?:was |is |has been )?blocked for \d+|vert\.x-eventloop-thread-\d+.{0,20} has been blocked for \d+ ms|\bExecuting <(?:Task|Handle|TimerHandle)\b.{0,300}> took \d+(?:\.\d+)? seconds`)
	// blockedForRE reads the block's length from such a line.
	blockedForRE = regexp.MustCompile(`(?i)blocked for (\d+(?:\.\d+)?) ?(ms|s|seconds)\b|took (\d+(?:\.\d+)?) seconds|"blockedMs":\s*(\d+)`)
	// jsAppFrameRE is an application frame of a JavaScript stack ("at
	// PriceSnapshot.start (/app/dist/pricing/snapshot.js:24:22)"), not one
	// of node's own ("node:internal/timers") or of node_modules.
	jsAppFrameRE = regexp.MustCompile(`at ([\w$.<>\[\] ]+?) \(((?:/|[A-Za-z]:\\)[^():"]+\.(?:js|mjs|cjs|ts)):\d+`)
	// eventLoopLagMetricRE is a runtime's event loop lag gauge: prom-client's
	// maximum, p99 or plain lag (seconds).
	eventLoopLagMetricRE = regexp.MustCompile(`(?i)^nodejs_eventloop_(?:lag_max|lag_p99|lag|delay_max|delay_p99)_seconds$`)
)

// detectEventLoopBlocked explains the findings of blocked-loop lines (the
// longest block, the application frame the operation started in, the lag
// gauge) and finds a loop blocked for seconds from its lag gauge alone.
func detectEventLoopBlocked(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i := range found {
		f := &found[i]
		if f.Kind != KindEventLoopBlocked {
			continue
		}
		seen[strings.ToLower(f.Subject)] = true
		explainEventLoop(f, ev)
	}
	// A lag gauge of seconds with no line of the runtime: the loop was
	// blocked, by what is not said.
	for _, ms := range ev.Metrics {
		if !matchLine(eventLoopLagMetricRE, ms.Name) || !strings.Contains(ms.Name, "max") {
			continue
		}
		for _, s := range ms.Series {
			subj := SubjectOfLabels(s.Labels)
			if subj == "" || seen[strings.ToLower(subj)] {
				continue
			}
			var before []float64
			peak, at := 0.0, ev.Window.Start
			for _, p := range s.Points {
				switch {
				case p.T.Before(ev.Window.Start):
					before = append(before, p.V)
				case !p.T.After(ev.Window.End) && p.V > peak:
					peak, at = p.V, p.T
				}
			}
			if peak < 2 || peak < 10*medianOf(before) {
				continue
			}
			seen[strings.ToLower(subj)] = true
			f := Finding{Kind: KindEventLoopBlocked, Subject: subj, Object: "service " + subj, Source: SrcMetrics, Time: at, Severity: SevCritical, Weight: 0.72}
			f.setFact("blocked", formatValue(peak, "s"))
			f.setFact("lag", fmt.Sprintf("%s reached %s, from %s before", ms.Name, formatValue(peak, "s"), formatValue(medianOf(before), "s")))
			f.Evidence = append(f.Evidence, f.fact("lag"))
			f.Summary = fmt.Sprintf("%s: event loop blocked for %s", subj, formatValue(peak, "s"))
			out = append(out, f)
		}
	}
	return out
}

// explainEventLoop reads, over the lines of the subject's blocked loop,
// the longest block and the first application frame of the operation,
// and the peak of its lag gauge.
func explainEventLoop(f *Finding, ev *Gathered) {
	longest := 0.0
	for _, set := range ev.Logs {
		if !strings.EqualFold(set.Subject, f.Subject) {
			continue
		}
		for _, t := range set.Templates {
			for _, line := range t.Lines() {
				if !matchLine(eventLoopBlockedRE, line) {
					continue
				}
				if sec := blockedSeconds(line); sec > longest {
					longest = sec
				}
				if f.fact("operation") == "" {
					for _, m := range findAllSubmatch(jsAppFrameRE, line, -1) {
						if strings.Contains(m[2], "node_modules") {
							continue
						}
						f.setFact("operation", fmt.Sprintf("%s (%s)", strings.TrimSpace(m[1]), m[2]))
						break
					}
				}
			}
		}
	}
	if longest > 0 {
		f.setFact("blocked", formatValue(longest, "s"))
	}
	for _, ms := range ev.Metrics {
		if !matchLine(eventLoopLagMetricRE, ms.Name) {
			continue
		}
		peak := 0.0
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), f.Subject) {
				continue
			}
			for _, p := range s.Points {
				if p.T.After(ev.Window.End) {
					continue
				}
				if !p.T.Before(ev.Window.Start) {
					peak = max(peak, p.V)
				}
				// The loop blocked for a second or more since then: the
				// lines read may begin later than the blocks did.
				if p.V >= 1 && !p.T.Before(ev.Window.BaselineStart) {
					f.Time = earliest(f.Time, p.T)
				}
			}
		}
		if peak > 0 && (f.fact("lag") == "" || strings.Contains(ms.Name, "max")) {
			f.setFact("lag", fmt.Sprintf("%s reached %s", ms.Name, formatValue(peak, "s")))
		}
	}
	if l := f.fact("lag"); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	if f.fact("blocked") != "" {
		f.Weight = max(f.Weight, 0.9)
		f.Severity = SevCritical
	}
}

// blockedSeconds is how long a blocked-loop line says the loop was
// blocked, in seconds.
func blockedSeconds(line string) float64 {
	m := findSubmatch(blockedForRE, line)
	if m == nil {
		return 0
	}
	switch {
	case m[1] != "":
		v, _ := strconv.ParseFloat(m[1], 64)
		if strings.EqualFold(m[2], "ms") {
			return v / 1000
		}
		return v
	case m[3] != "":
		v, _ := strconv.ParseFloat(m[3], 64)
		return v
	case m[4] != "":
		v, _ := strconv.ParseFloat(m[4], 64)
		return v / 1000
	}
	return 0
}
