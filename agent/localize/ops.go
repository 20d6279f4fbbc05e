package localize

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// OpEvent is one thing an operation (a span name of a service) does within
// its calls: a log template its spans emit (log lines joined to their span
// by the trace and span ids they carry) or a child operation it calls.
// Calls counts the operation's spans per unix minute, Counts the event's
// occurrences within those spans per unix minute (the minute of the span,
// not of the line). Counting per call makes the comparison immune to
// traffic: an operation called half as often logs half as much.
type OpEvent struct {
	Service   string
	Operation string
	Event     string
	Log       bool // the event is a log template (else a call to a child operation)
	// Error marks an event of an error path (an error template, an error
	// handler's span): its stopping is a recovery, not a fault.
	Error  bool
	Calls  map[int64]int
	Counts map[int64]int
}

// Floors of a per-call comparison: the fewest calls of the operation on
// each side of the split and the fewest occurrences of the event before it
// (an event seen twice is no habit).
const (
	opMinCalls  = 5
	opMinEvents = 3
)

// opEpisodes finds, per operation event, a fall in what the operation does
// per call: an event it did on a share of its calls before the split that
// it does on far fewer of them since (an injected exception cuts a handler
// short: its later log lines and calls stop while its span goes on). The
// split is searched like a log template's, among the bins within tol of the
// symptom's bin to the window's end. Rises are not scored: a new mix of
// requests inside one operation adds lines and calls at every service it
// reaches, while the code path that stopped is where the fault is.
func (g *grid) opEpisodes(ops []OpEvent, symptom, tol int) []*episode {
	lo, hi := max(symptom-tol, 1), g.n-1
	var out []*episode
	for i := range ops {
		o := &ops[i]
		if o.Service == "" || o.Error {
			continue
		}
		calls, counts := g.perBin(o.Calls), g.perBin(o.Counts)
		var best *episode
		for split := lo; split <= hi; split++ {
			var refCalls, incCalls, refN, incN int
			for b, n := range calls {
				if b < split {
					refCalls += n
				} else {
					incCalls += n
				}
			}
			if refCalls < opMinCalls || incCalls < opMinCalls {
				continue
			}
			for b, n := range counts {
				if b < split {
					refN += n
				} else {
					incN += n
				}
			}
			if refN < opMinEvents {
				continue
			}
			expected := float64(refN) / float64(refCalls) * float64(incCalls)
			z := poissonLowZ(incN, expected)
			if z < zThreshold {
				continue
			}
			// Full weight, unlike a routine template falling in a service's
			// whole log: counted per call of its own operation, a stop is
			// no change of load or request mix.
			if peak := z; best == nil || peak > best.peak {
				best = &episode{subject: o.Service, level: LevelService, signal: SignalOpEvents, active: true,
					dir: -1, peak: peak, onset: g.at(split), lastAt: g.at(hi), ref: expected, peakVal: float64(incN),
					lines: incN, template: o.Event, op: o.Operation, calls: incCalls, opLog: o.Log}
			}
		}
		if best != nil {
			best.s = &Series{Service: o.Service, Metric: "per-call events of " + o.Operation, Signal: SignalOpEvents}
			// A branch taken instead (another event of the operation
			// rose by at least half the fall) is a new mix, not a stop.
			if alt, gain := g.switchedTo(ops, i, g.index(best.onset)); alt != "" && gain >= 0.5*(best.ref-float64(best.lines)) {
				best.switched = alt
			}
			out = append(out, best)
		}
	}
	return out
}

// switchedTo looks, among the other routine events of operation ops[i],
// for those taken more often per call since split than before: a branch
// the operation took instead (another kind of request, another code path
// of the same handler), not a step cut short. It returns the event that
// rose most and the occurrences the rises add over what their rates before
// predict. Error events do not count: an exception thrown instead of the
// step is the fault itself.
func (g *grid) switchedTo(ops []OpEvent, i, split int) (string, float64) {
	o := &ops[i]
	alt, top, gain := "", 0.0, 0.0
	for k := range ops {
		p := &ops[k]
		if k == i || p.Error || p.Service != o.Service || p.Operation != o.Operation {
			continue
		}
		var refCalls, incCalls, refN, incN int
		for b, n := range g.perBin(p.Calls) {
			if b < split {
				refCalls += n
			} else {
				incCalls += n
			}
		}
		if refCalls == 0 || incCalls == 0 {
			continue
		}
		for b, n := range g.perBin(p.Counts) {
			if b < split {
				refN += n
			} else {
				incN += n
			}
		}
		if d := float64(incN) - float64(refN)/float64(refCalls)*float64(incCalls); d > 0 {
			gain += d
			if d > top {
				alt, top = p.Event, d
			}
		}
	}
	return alt, gain
}

// perBin sums counts per unix minute into the grid's bins.
func (g *grid) perBin(m map[int64]int) map[int]int {
	out := map[int]int{}
	for minute, n := range m {
		if b, ok := g.minuteIndex(minute); ok && n > 0 {
			out[b] += n
		}
	}
	return out
}

// describeOp writes the line of an operation-event episode.
func describeOp(ep *episode) string {
	ev := ep.template
	if len(ev) > 160 {
		ev = ev[:160] + "…"
	}
	what := "logged " + fmt.Sprintf("%q", ev)
	if !ep.opLog {
		what = "called " + ev
	}
	return fmt.Sprintf("%s: %s %s %d times in its %d calls since %s, where ~%.0f were expected from its calls before (fell)",
		ep.subject, ep.op, what, ep.lines, ep.calls, hm(ep.onset), ep.ref)
}

// explainByCalleeOps lowers a departure at a service that follows from its
// callee's (see followsCallee) when a service it calls, directly or not,
// changed at the same time at least half as strongly in its own stops,
// errors or error templates: a callee that fails or stops short returns
// early to its caller, whose own later steps then stop or change, and whose
// handling of the failure takes time of its own. The deepest departure
// along the call path is where it began (Nezha keeps only the earliest
// break of a trace's pattern).
func explainByCalleeOps(eps []*episode, edges []Edge, tol time.Duration) {
	callees := map[string][]string{}
	for _, e := range edges {
		if e.Caller != "" && e.Callee != "" && e.Caller != e.Callee {
			callees[e.Caller] = append(callees[e.Caller], e.Callee)
		}
	}
	// A callee's own change that a caller's stop can follow: its own
	// stop, its errors, a rising error template.
	best := map[string][]*episode{}
	for _, ep := range eps {
		own := ep.signal == SignalOpEvents || ep.signal == SignalErrors && ep.s != nil && !ep.s.Outbound && ep.s.Caller == "" ||
			ep.signal == SignalTraceErr || ep.fromLogs && ep.errTmpl && ep.dir > 0 && ep.s != nil && !ep.s.Outbound
		if own && ep.level == LevelService && ep.peak >= zThreshold {
			best[ep.subject] = append(best[ep.subject], ep)
		}
	}
	for _, ep := range eps {
		if !followsCallee(ep) || ep.peak < zThreshold {
			continue
		}
		need := 0.5 * magnitude(ep.peak)
		found := nearest(callees, ep.subject, func(down string) bool {
			for _, o := range best[down] {
				if d := o.onset.Sub(ep.onset); magnitude(o.peak) >= need && d <= tol && d >= -tol {
					return true
				}
			}
			return false
		})
		if found != "" {
			ep.factor *= 0.3
			ep.note = joinNote(ep.note, "follows a change at "+found+", which it calls")
		}
	}
}

// poissonLowZ is the z-score of seeing at most k events where a Poisson
// mean of e was expected: the normal quantile of that lower tail (exact
// for few events, where (e−k)/√e understates how unlikely a stop is).
func poissonLowZ(k int, e float64) float64 {
	if float64(k) >= e {
		return 0
	}
	// ln P(X <= k) = −e + ln Σ_{i<=k} e^i / i!, summed in logs.
	lt, terms := 0.0, []float64{0}
	for i := 1; i <= k; i++ {
		lt += math.Log(e / float64(i))
		terms = append(terms, lt)
	}
	top := slices.Max(terms)
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - top)
	}
	lp := -e + top + math.Log(sum)
	if lp >= math.Log(0.5) {
		return 0
	}
	if lp > -20 {
		return -math.Sqrt2 * math.Erfinv(2*math.Exp(lp)-1)
	}
	// The normal tail's asymptote, where exp(lp) would lose precision.
	l := -2 * lp
	return math.Sqrt(l - math.Log(l) - math.Log(2*math.Pi))
}

// followsCallee reports whether an episode is of a kind a callee's
// departure explains at its caller: an operation's step that stopped, a
// routine log template that fell away or is new (the caller's flow after a
// failed call), and a rise of the caller's own span time (handling the
// failure: exceptions thrown, retries).
func followsCallee(ep *episode) bool {
	switch {
	case ep.signal == SignalOpEvents:
		return true
	case ep.fromLogs && !ep.errTmpl && !(ep.s != nil && ep.s.Outbound):
		return true
	case ep.signal == SignalTraceLat && ep.dir > 0:
		return true
	}
	return false
}
