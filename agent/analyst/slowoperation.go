package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A latency question ("why is the database call slow?") may have no metric
// to answer it: the durations the log lines themselves report
// ("completed in 10.01 seconds", "took 2300ms") do.

// KindSlowOperation is an operation whose own log lines report long
// durations.
const KindSlowOperation Kind = "slow_operation"

var slowOperation = &mechanism{
	kind:   KindSlowOperation,
	class:  classCause,
	label:  "slow operation (durations reported in its log)",
	detect: detectLoggedDurations,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindInfraChange
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s is slow: its log reports %s taking up to %s", h.Subject, orWord(h.fact("operation"), "an operation"), h.fact("max"))
		if b := h.fact("typical"); b != "" {
			d += fmt.Sprintf(" (typically %s)", b)
		}
		d += h.quoteClause(": ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Find what the slow %s of %s waits on (the database or dependency it calls: its query plan, locks, connection pool, network)", orWord(h.fact("operation"), "operation"), h.Subject)
		r.med("Put a timeout on the operation and trace one slow call end to end")
		r.low("Export the operation's duration as a histogram metric and alert on its p99")
	},
}

var (
	// Durations log lines report: "completed in 10.01 seconds", "took
	// 2300ms", "took=2300ms", "last_bulk_took=591ms", "duration=2.5s",
	// "elapsed: 1.2 s", "in 812 ms".
	durationRE   = regexp.MustCompile(`(?i)(?:\b(?:in|took|took:|duration[=:]?|elapsed[=:]?|latency[=:]?|time[=:]|after)|(?:\b|_)took=|\bslow(?: [\w -]+)?:)\s*"?(\d+(?:\.\d+)?)\s*(ms|msec|milliseconds?|s|sec|secs|seconds?|µs|us|microseconds?|m|min|minutes?)\b`)
	latencyAskRE = regexp.MustCompile(`(?i)\b(slow|latenc|takes? (?:too )?long|took|duration|seconds|response time|timing|sluggish|delay)`)
	// threadHeaderRE matches a JVM thread dump's header of a thread,
	// whose cpu= and elapsed= are the thread's age, not an operation's
	// duration.
	threadHeaderRE = regexp.MustCompile(`^\s*(?:\S+\s+)?"[^"]*" #\d+ .*\belapsed=[\d.]+s\b`)
	opWordRE       = regexp.MustCompile(`(?i)\b([a-z][\w-]*(?: [a-z][\w-]*)?) (?:call|query|request|job|operation|batch|sync|export|render|upload|download)s?\b|\b(?:call|query|request|operation) (?:to )?([\w.-]+)`)
)

// startupTimeRE is a process's own start-up time, which no request waits
// for: Spring Boot's "Started OrdersApplication in 8.9 seconds", Tomcat's
// "Server startup in [2431] milliseconds", Quarkus's "started in 1.2s",
// Micronaut's "Startup completed in 812ms", ASP.NET's "Application
// started", Node's "ready in 512 ms".
var startupTimeRE = regexp.MustCompile(`(?i)\bStarted \w+ in \d|\bServer startup in\b|\bstarted in \d|\bStartup completed in\b|\bstartup took\b|\bready in \d+(?:\.\d+)?\s*m?s\b|\binitiali[sz]ation completed in\b|\bRoot WebApplicationContext: initialization completed\b`)

// lineDuration is the longest duration a log line reports, in seconds.
func lineDuration(line string) (float64, bool) {
	best, ok := 0.0, false
	if matchLine(threadHeaderRE, line) || matchLine(startupTimeRE, line) {
		return 0, false
	}
	for _, m := range findAllSubmatch(durationRE, line, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		switch u := strings.ToLower(m[2]); {
		case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli"):
			v /= 1000
		case u == "µs" || u == "us" || strings.HasPrefix(u, "micro"):
			v /= 1e6
		case u == "m" || strings.HasPrefix(u, "min"):
			v *= 60
		}
		if v > best {
			best, ok = v, true
		}
	}
	return best, ok
}

// slowBar is the least duration an operation's log line must report to be
// slow when the question asks about time.
const slowBar = 1.0

// detectLoggedDurations answers a latency question from the durations log
// lines report: the template whose lines in the window report the
// longest time, when it is at least slowBar and several times what other
// lines of the same template report.
func detectLoggedDurations(ev *Gathered, _ []Finding) []Finding {
	asked := matchLine(latencyAskRE, ev.Scope.Message+" "+ev.Scope.Hint+" "+ev.Scope.Alert)
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		// A service whose calls time out: the slow call its log reports
		// is what it waits for, asked about or not (its own timeout lines
		// are the symptom, not the slow call).
		timesOut := false
		if !asked {
			for _, t := range set.Templates {
				if t.Incident > 0 && t.Baseline == 0 && matchLine(timeoutM.lines, t.Example) {
					timesOut = true
				}
			}
			if !timesOut {
				continue
			}
		}
		var best *Finding
		bestMax := 0.0
		for _, t := range set.Templates {
			if t.Incident == 0 || timesOut && (matchLine(timeoutM.lines, t.Example) || !strings.Contains(strings.ToLower(t.Example), "slow")) {
				continue
			}
			hi, okE := lineDuration(t.Example)
			lo := hi
			if d, ok := lineDuration(t.Last); ok {
				hi, lo = max(hi, d), min(lo, d)
				okE = true
			}
			// One or two lines must report a clearly long time.
			bar := slowBar
			if t.Incident < 3 {
				bar = 2 * slowBar
			}
			if !okE || hi < bar || hi <= bestMax {
				continue
			}
			// Durations the template reported at the same rate before the
			// window are its usual pace, unless they now vary several-fold.
			if set.HasBaseline && t.Baseline > 0 && !t.Surging(3, 3) && lo >= hi/3 {
				continue
			}
			bestMax = hi
			f := Finding{Kind: KindSlowOperation, Subject: set.Subject, Object: set.Origin + " " + set.Source, Namespace: set.Namespace,
				Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevWarning, Weight: 0.85, Source: set.Origin}
			line := t.Example
			if d, _ := lineDuration(t.Last); d == hi {
				line = t.Last
			}
			f.setFact("max", seconds(hi))
			if lo < hi/3 {
				f.setFact("typical", seconds(lo))
			}
			f.setFact("line", line)
			f.setFact("caller", set.Subject)
			f.setFact("lines", strconv.Itoa(t.Incident))
			if m := findSubmatch(opWordRE, line); m != nil {
				var op []string
				phrase := m[2]
				if m[1] != "" {
					phrase = m[1] + " " + opNoun(m[0])
				}
				for _, w := range strings.Fields(phrase) {
					if LineLevel(w) == "" {
						op = append(op, w)
					}
				}
				f.setFact("operation", strings.Join(op, " "))
			}
			f.Evidence = []string{fmt.Sprintf("%s %s logged %s of this operation in the window, the longest reporting %s: %s", set.Origin, set.Source, plural(t.Incident, "line", "lines"), seconds(hi), quote(ReadableLine(line), 240))}
			f.Summary = fmt.Sprintf("%s logs operations taking up to %s", set.Subject, seconds(hi))
			best = &f
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

// opNoun is the noun of an operation phrase ("call" in "database call").
func opNoun(phrase string) string {
	f := strings.Fields(phrase)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[len(f)-1], "s")
}

func seconds(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.0f ms", v*1000)
	}
	return fmt.Sprintf("%.2f s", v)
}

func orTime(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	return a
}
