package analyst

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// A caller's deadline cut below a call's duration: the caller's calls fail
// with DEADLINE_EXCEEDED ("context deadline exceeded", "Deadline
// Exceeded") all at the same elapsed time, its own deadline, while the
// callee logs the same calls cancelled by the client after that time —
// the callee is neither slow nor overloaded, its longer calls (a bulk
// method) just take longer than the caller now waits. The caller's change
// that set the timeout (a shared client's default, a per-call timeout)
// is the root; the callee is where the failures show.
//
// The callee's own latency histogram says the same without its log: a
// caller whose calls time out at its deadline (Go's "Client.Timeout
// exceeded", a read timeout, axios's "timeout of 800ms exceeded") while
// the callee's p99, read from its request-duration buckets, sits above
// that deadline and did not grow from the baseline. The callee is not
// slower: the share of its calls longer than the deadline is what fails.

// KindDeadlineCut is a caller's deadline shorter than its callee's calls.
const KindDeadlineCut Kind = "deadline_cut"

var (
	deadlineExceededRE = regexp.MustCompile(`(?i)DeadlineExceeded|DEADLINE_EXCEEDED|context deadline exceeded|deadline exceeded`)
	// clientCancelledRE is a server's log of a call its client gave up on.
	clientCancelledRE = regexp.MustCompile(`(?i)cancell?ed by (?:the )?client|client cancell?ed|CANCELL?ED: (?:io\.grpc\.)?Context was cancell?ed|context canceled by client|client disconnected before`)
	elapsedRE         = regexp.MustCompile(`(?i)(?:elapsed|duration|took|after|latency)"?\s*[=: ]\s*"?(\d+(?:\.\d+)?)\s*(ms|s)\b`)
	timeoutChangeRE   = regexp.MustCompile(`(?i)(?:timeout|deadline)\D{0,30}?(\d+(?:\.\d+)?\s*(?:ms|s))\b`)
	// timeoutToRE is a timeout set from one value to another
	// (PRICING_TIMEOUT 2s -> 800ms): the deadline is the new one.
	timeoutToRE = regexp.MustCompile(`(?i)(?:timeout|deadline)\D{0,30}?(\d+(?:\.\d+)?\s*(?:ms|s))\s*(?:->|→|=>|to)\s*(\d+(?:\.\d+)?\s*(?:ms|s))\b`)
	// callTimeoutRE is a caller's line of a call given up at its timeout,
	// in the words clients use.
	callTimeoutRE = regexp.MustCompile(`(?i)DeadlineExceeded|DEADLINE_EXCEEDED|deadline exceeded|Client\.Timeout exceeded|Read timed out|ReadTimeout|read timeout|timeout of \d+\s*ms exceeded|ESOCKETTIMEDOUT|ETIMEDOUT|upstream request timeout|TimeoutException|timed out after`)
	// lineTimeoutRE is the timeout a caller's line states
	// ("timeout":"800ms", timeout=0.8s, "timeout of 800ms exceeded",
	// "(read timeout=0.8)").
	lineTimeoutRE = regexp.MustCompile(`(?i)\btimeout(?:_ms)?"?\s*(?:[=:]|of)\s*"?(\d+(?:\.\d+)?)\s*(ms|s)?\b`)
	// upstreamRE names the callee in a caller's line: an upstream field,
	// or the host of the URL called.
	upstreamRE = regexp.MustCompile(`(?i)"?(?:upstream|callee|dependency|target|service|peer)"?\s*[=:]\s*"?([a-z][a-z0-9-]+)|\bhttps?://([a-z][a-z0-9-]*)[.:/]|host='([a-z][a-z0-9-]*)`)
	// elapsedKeyRE: a duration whose unit is in its key (elapsed_ms=803).
	elapsedKeyRE = regexp.MustCompile(`(?i)(?:elapsed|duration|took|latency)_(ms|s)"?\s*[=:]\s*"?(\d+(?:\.\d+)?)`)
	grpcMethodRE = regexp.MustCompile(`\b((?:Get|List|Create|Update|Delete|Put|Search|Find|Compute|Calculate|Fetch|Batch|Bulk|Stream|Send|Submit|Check|Validate|Process)[A-Z]\w*)\b`)
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
		return c.relates(h.Subject) && matchLine(timeoutChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's deadline for its calls to %s", h.Subject, orWord(h.fact("callee"), "its upstream"))
		d += h.clause(" is ", "deadline")
		if h.fact("callee_p99") != "" {
			d += ", shorter than its slowest calls take"
		} else {
			d += ", shorter than those calls take"
		}
		if m := h.fact("method"); m != "" {
			d += fmt.Sprintf(" (%s)", m)
		}
		if matchLine(deadlineExceededRE, h.fact("line")) {
			d += fmt.Sprintf(": every longer call is cut at the deadline with DEADLINE_EXCEEDED — %s", quote(ReadableLine(h.fact("line")), 200))
		} else {
			d += fmt.Sprintf(": every longer call is given up at the deadline — %s", quote(ReadableLine(h.fact("line")), 200))
		}
		if c := h.fact("cancelled"); c != "" {
			d += fmt.Sprintf("; %s sees the same calls cancelled by the client — %s; it is not slow nor overloaded", orWord(h.fact("callee"), "the callee"), quote(ReadableLine(c), 200))
		}
		if p := h.fact("callee_p99"); p != "" {
			d += fmt.Sprintf("; %s is not slower: its p99 is %s, above the deadline", orWord(h.fact("callee"), "the callee"), p)
			if b := h.fact("baseline_p99"); b != "" {
				d += fmt.Sprintf(" and unchanged (%s before)", b)
			}
			d += h.wrapped("; ", "over", " of its calls take longer than the deadline and fail")
		}
		if c := h.fact("timeout_change"); c != "" {
			d += fmt.Sprintf("; the timeout was set by %s", quote(c, 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if p := h.fact("callee_p99"); p != "" {
			r.high("Give %s's calls to %s a deadline above their p99 (%s) with headroom, or set the timeout back to its earlier value", h.Subject, orWord(h.fact("callee"), "its upstream"), p)
		} else {
			r.high("Give %s's calls to %s a deadline above their duration (%s) or roll the timeout change back", h.Subject, orWord(h.fact("callee"), "its upstream"), orWord(h.fact("method"), "the long calls"))
		}
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
			if t.Incident == 0 || t.Baseline > 0 || !matchLine(callTimeoutRE, t.Example) {
				continue
			}
			onset := orTime(t.FirstIncident, t.FirstSeen)
			// The elapsed times of the failures: one deadline when equal.
			var elapsed []float64
			for _, l := range t.Lines() {
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
				if m := findSubmatch(timeoutToRE, c.Description); m != nil {
					change, deadline = c.Description, strings.ReplaceAll(m[2], " ", "")
				} else if m := findSubmatch(timeoutChangeRE, c.Description); m != nil {
					change, deadline = c.Description, strings.ReplaceAll(m[1], " ", "")
				}
			}
			callee, cancelled := "", ""
			for _, o := range ev.Logs {
				if o.Subject == set.Subject {
					continue
				}
				for _, ot := range o.Templates {
					if ot.Incident > 0 && matchLine(clientCancelledRE, ot.Example) {
						callee, cancelled = o.Subject, ot.Example
						break
					}
				}
				if callee != "" {
					break
				}
			}
			if callee == "" {
				// The callee's latency histogram instead of its log.
				if f, ok := deadlineBelowP99(ev, set, t, onset, deadline, change); ok {
					out = append(out, f)
					break
				}
				continue
			}
			if !matchLine(deadlineExceededRE, t.Example) || !same && change == "" {
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
			f.setFact("method", findString(grpcMethodRE, cancelled))
			out = append(out, f)
			break
		}
	}
	return out
}

// lineElapsed is the elapsed time a line states, in seconds.
func lineElapsed(l string) (float64, bool) {
	m := findSubmatch(elapsedRE, l)
	if m == nil {
		if k := findSubmatch(elapsedKeyRE, l); k != nil {
			m = []string{k[0], k[2], k[1]}
		}
	}
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

// MetricBuckets is the class of a latency histogram's _bucket series,
// read raw (cumulative counts per "le") for quantiles; only the mechanisms
// that compute one read them.
const MetricBuckets = "buckets"

// bucketAskRE is a question about latency or timeouts: the histograms'
// buckets are read for it.
var bucketAskRE = regexp.MustCompile(`(?i)\b(?:50[34]s?|time ?outs?|timing out|timed out|deadlines?)\b`)

// wantsBuckets reports whether a question needs latency histograms'
// buckets (quantiles of a callee against a caller's deadline).
func wantsBuckets(sc Scope) bool {
	q := sc.Message + " " + sc.Hint + " " + sc.Alert
	return matchLine(bucketAskRE, q) || matchLine(durationAskRE, q)
}

// bucketCounts are a histogram's observations per upper bound, over a span.
type bucketCounts struct {
	le    []float64
	count []float64 // cumulative, per le
}

// quantile is the q-quantile, interpolated within its bucket as
// Prometheus's histogram_quantile does; ok is false with no observations.
func (b bucketCounts) quantile(q float64) (float64, bool) {
	n := len(b.le)
	if n == 0 || b.count[n-1] <= 0 {
		return 0, false
	}
	rank := q * b.count[n-1]
	for i := range b.le {
		if b.count[i] >= rank {
			if math.IsInf(b.le[i], 1) {
				if i == 0 {
					return 0, false
				}
				return b.le[i-1], true
			}
			lo, below := 0.0, 0.0
			if i > 0 {
				lo, below = b.le[i-1], b.count[i-1]
			}
			if b.count[i] == below {
				return b.le[i], true
			}
			return lo + (b.le[i]-lo)*(rank-below)/(b.count[i]-below), true
		}
	}
	return 0, false
}

// over is the share of observations above v, interpolated within its
// bucket.
func (b bucketCounts) over(v float64) float64 {
	n := len(b.le)
	if n == 0 || b.count[n-1] <= 0 {
		return 0
	}
	total := b.count[n-1]
	lo, below := 0.0, 0.0
	for i := range b.le {
		if v <= b.le[i] {
			at := below
			if !math.IsInf(b.le[i], 1) && b.le[i] > lo {
				at += (b.count[i] - below) * (v - lo) / (b.le[i] - lo)
			}
			return 1 - at/total
		}
		lo, below = b.le[i], b.count[i]
	}
	return 0
}

// histogramOf gathers the buckets of the histograms whose labels name
// the callee (service, job, app, destination), summed over their other
// labels, over the incident window and the baseline.
func histogramOf(sets []MetricSet, callee string, w Window) (win, base bucketCounts, name string) {
	inc := map[float64]float64{}
	bas := map[float64]float64{}
	for _, ms := range sets {
		if ms.Class != MetricBuckets {
			continue
		}
		for _, s := range ms.Series {
			if !labelsName(s.Labels, callee) {
				continue
			}
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil {
				continue
			}
			name = ms.Name
			inc[le] += increase(s, w.Start, w.End)
			bas[le] += increase(s, w.BaselineStart, w.Start)
		}
	}
	return cumulative(inc), cumulative(bas), name
}

func cumulative(m map[float64]float64) bucketCounts {
	var b bucketCounts
	for le := range m {
		b.le = append(b.le, le)
	}
	slices.Sort(b.le)
	for _, le := range b.le {
		b.count = append(b.count, m[le])
	}
	return b
}

// increase is how much a counter grew within [from, to], over resets.
func increase(s evidence.Series, from, to time.Time) float64 {
	var sum, prev float64
	first := true
	for _, p := range s.Points {
		if p.T.Before(from) || p.T.After(to) {
			continue
		}
		if !first {
			if p.V >= prev {
				sum += p.V - prev
			} else {
				sum += p.V
			}
		}
		prev, first = p.V, false
	}
	return sum
}

// labelsName reports whether a series' labels name a service.
func labelsName(l evidence.Labels, name string) bool {
	for _, k := range []string{"service", "job", "app", "app_kubernetes_io_name", "destination_service_name", "destination_workload", "service_name", "container"} {
		if v := l[k]; v != "" && strings.EqualFold(v, name) {
			return true
		}
	}
	return false
}

// secondsOf reads "800ms", "0.8s" or "0.8" (seconds).
func secondsOf(v, unit string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	if strings.EqualFold(unit, "ms") {
		f /= 1000
	}
	return f, f > 0
}

// deadlineValRE reads a deadline as a change states it ("800ms").
var deadlineValRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)(ms|s)$`)

// fmtSecs prints a duration in seconds the way people read it.
func fmtSecs(v float64) string {
	if v < 1 {
		return strconv.FormatFloat(v*1000, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " s"
}

// deadlineBelowP99 finds a caller's timeouts whose deadline lies below its
// callee's p99, read from the callee's request-duration histogram, with
// that p99 no higher than in the baseline: the callee is not slower, the
// deadline cuts its slowest calls.
func deadlineBelowP99(ev *Gathered, set LogSet, t analysis.LogTemplate, onset time.Time, deadline, change string) (Finding, bool) {
	callee := ""
	if m := findSubmatch(upstreamRE, t.Example); m != nil {
		callee = m[1] + m[2] + m[3]
	}
	if callee == "" || strings.EqualFold(callee, set.Subject) {
		return Finding{}, false
	}
	// The deadline: the change's new value, else what the line states.
	dl := 0.0
	if deadline != "" {
		if m := findSubmatch(deadlineValRE, deadline); m != nil {
			dl, _ = secondsOf(m[1], m[2])
		}
	}
	if dl == 0 {
		if m := findSubmatch(lineTimeoutRE, t.Example); m != nil {
			unit := m[2]
			if unit == "" && strings.Contains(strings.ToLower(m[0]), "_ms") {
				unit = "ms"
			}
			dl, _ = secondsOf(m[1], unit)
			deadline = strings.ReplaceAll(m[1]+m[2], " ", "")
		}
	}
	if dl == 0 {
		return Finding{}, false
	}
	win, base, name := histogramOf(ev.Metrics, callee, ev.Window)
	p99, ok := win.quantile(0.99)
	if !ok || p99 <= dl {
		return Finding{}, false
	}
	over := win.over(dl)
	if over < 0.002 {
		return Finding{}, false
	}
	bp99, bok := base.quantile(0.99)
	if bok && p99 > 1.2*bp99 {
		return Finding{}, false // the callee did get slower
	}
	if !bok && change == "" {
		return Finding{}, false
	}
	f := Finding{Kind: KindDeadlineCut, Subject: set.Subject, Source: SrcLogs, Time: onset, Severity: SevCritical, Weight: 0.9,
		Related: []string{callee},
		Summary: fmt.Sprintf("%s's calls to %s time out at its %s deadline, below %s's p99 of %s", set.Subject, callee, deadline, callee, fmtSecs(p99)),
		Evidence: []string{fmt.Sprintf("logs %s: %d timed-out calls to %s, new in the window: %s", set.Subject, t.Incident, callee, quote(t.Example, 240)),
			fmt.Sprintf("metrics %s: %s's p99 %s in the window, %.1f%% of its calls above %s", name, callee, fmtSecs(p99), 100*over, deadline)}}
	f.setFact("line", t.Example)
	f.setFact("callee", callee)
	f.setFact("deadline", deadline)
	f.setFact("timeout_change", change)
	f.setFact("callee_p99", fmtSecs(p99))
	f.setFact("over", fmt.Sprintf("%.1f%%", 100*over))
	why := fmt.Sprintf("the %s deadline is below %s's p99 of %s", deadline, callee, fmtSecs(p99))
	if bok {
		f.setFact("baseline_p99", fmtSecs(bp99))
		f.Evidence = append(f.Evidence, fmt.Sprintf("metrics %s: %s's p99 %s before the window", name, callee, fmtSecs(bp99)))
		why += ", which did not grow"
	}
	f.setFact("why", why)
	return f, true
}
