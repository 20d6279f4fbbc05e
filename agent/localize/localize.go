// Package localize names the service (or node) most likely at the origin of
// an incident asked about at another service, from metrics, logs and traces
// of every service. It is a pure algorithm: no I/O, deterministic output.
//
// Each signal (a metric series, a log template's counts per bin, a
// service's exclusive span latency or error rate per bin) is compared with
// its own reference — the bins before the symptom began — through robust
// z-scores (median and MAD, as BARO does with median and IQR), with floors
// per unit so that a move that is tiny in absolute terms (0.002 → 0.006
// cores) does not count as a deviation. A level (latency, CPU, throughput)
// must hold for two bins, a series that routinely jumps for a bin or two is
// judged against its earlier jumps, and a percentile weighs by the
// requests behind it. A log template is
// judged by its share of its service's lines, with the split between
// before and since searched near the symptom (logs are often kept only
// around an incident). For every signal the episode of deviation that is
// still under way at the end of the window is found, and its onset
// compared with the onset of the symptom (the asked service's own latency
// and error signals): a cause deviates from the symptom's onset on, not
// before it (the tail of an earlier incident) and not only after it.
// Among signals that began together, a caller whose latency or errors are
// explained by a callee that deviated at the same time gives way to the
// callee (the deepest service whose own behaviour changed; a callee's
// latency explains only a comparable rise, as latency adds up along a
// path), using the call graph from traces or from mesh metrics (source →
// destination labels); new code paths at a callee follow a change at its
// caller. What an operation does per call (its log lines, joined to its
// spans by the ids they carry, and its child spans) is compared too: a
// step it stopped taking while its calls go on is a code path cut short,
// whatever the traffic. Node-level signals are candidates of their own: a
// node, not a pod on it.
//
// The package knows no system, service name or benchmark: the constants are
// statistical conventions (a robust z of 3, ten events for a rate, a 95%
// interval) and unit floors.
package localize

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// Level says what a candidate is.
type Level string

// Candidate levels.
const (
	LevelService Level = "service"
	LevelNode    Level = "node"
)

// Signal is the kind of evidence a series carries.
type Signal string

// Signals.
const (
	SignalLatency  Signal = "latency"
	SignalErrors   Signal = "errors"
	SignalCPU      Signal = "cpu"
	SignalMemory   Signal = "memory"
	SignalNetwork  Signal = "network"
	SignalTraffic  Signal = "traffic"
	SignalLogs     Signal = "logs"
	SignalTraceLat Signal = "trace_latency" // exclusive (self) span time
	SignalTraceErr Signal = "trace_errors"  // span errors
	SignalTraceOps Signal = "trace_calls"   // calls per root trace of an operation
	SignalOpEvents Signal = "op_events"     // what an operation logs and calls per call
	SignalOther    Signal = "other"
)

// propagates reports whether a deviation of this signal in a callee shows
// up in its callers (latency and errors do; a callee's CPU does not).
func (s Signal) propagates() bool {
	switch s {
	case SignalLatency, SignalErrors, SignalTraceErr:
		return true
	}
	return false
}

// Direction is which way a series moving means trouble.
type Direction int

// Directions.
const (
	Both Direction = iota
	Up
	Down
)

// Series is one metric series of a service (or one of its pods), of a
// node, or of a call edge into a service (Caller set).
type Series struct {
	Service string // the service the series belongs to ("" for a node series)
	Pod     string
	Node    string // the node of a node-level series
	Caller  string // for an edge series: the calling service; Service is the callee
	Metric  string
	Signal  Signal
	Unit    string // "s", "%", "cores", "bytes", "bytes/s", "/s", "" (plain)
	Bad     Direction
	// Outbound marks a measure of the service's calls to others (client
	// latency and errors): it shows its callees more than itself.
	Outbound bool
	// PerBin, when set, is how many samples a percentile series is taken
	// over in a typical bin (its reference median), for a series that
	// carries no traffic series of its own (a span-time percentile of
	// sampled traces).
	PerBin float64
	Points []evidence.Point
}

// Subject is the series' candidate: its node for node series, else its
// service.
func (s *Series) subject() (string, Level) {
	if s.Service == "" && s.Node != "" {
		return s.Node, LevelNode
	}
	return s.Service, LevelService
}

// LogTemplate is one log template of a service with its line counts per
// minute (unix minute → lines).
type LogTemplate struct {
	Service  string
	Template string
	Example  string
	Error    bool // the template reads as an error
	// Outbound marks a template that names another service (an error
	// calling it): it points at that service more than at its own.
	Outbound bool
	Counts   map[int64]int
}

// Edge is a call from one service to another.
type Edge struct{ Caller, Callee string }

// Window bounds the analysis: a baseline [BaselineStart, Start) and the
// incident window [Start, End]. Step is the bin width (0: one minute).
type Window struct {
	BaselineStart, Start, End time.Time
	Step                      time.Duration
}

// Input is everything localization reads.
type Input struct {
	Window
	// Entry is the service asked about (may be empty).
	Entry   string
	Metrics []Series
	Logs    []LogTemplate
	// Edges is the call graph (from traces, mesh metrics or both).
	Edges []Edge
	// Ops is what each operation logs and calls per call (log lines joined
	// to their spans, and child spans).
	Ops []OpEvent
}

// Candidate is one ranked suspect.
type Candidate struct {
	Subject string
	Level   Level
	Signal  Signal
	// Score is 0-100: how strongly and how timely the subject's own
	// behaviour changed.
	Score float64
	Onset time.Time
	// Explanation is one line, direction-correct ("CPU of checkoutservice
	// rose from 0.07 to 0.99 cores at 04:45").
	Explanation string
	Evidence    []string
	// Preexisting: the subject was already deviating before the symptom
	// began (an earlier incident's tail, or a slow build-up).
	Preexisting bool
	// Timing places the candidate's strongest signal against the
	// symptom: TimingWith, TimingBefore, TimingAfter or TimingEnded.
	Timing string
	// Signals lists the distinct signal kinds that deviated.
	Signals []Signal
}

// Timings of a candidate against the symptom's onset.
const (
	TimingWith   = "with the symptom"
	TimingBefore = "before the symptom"
	TimingAfter  = "after the symptom"
	TimingEnded  = "ended before the symptom"
)

// Result is the ranking with what it was measured against.
type Result struct {
	Candidates []Candidate
	// SymptomOnset is when the entry service's own signals began to
	// deviate (or, without one, the latest onset among services).
	SymptomOnset time.Time
	// EntryMoved is true when the entry service's own latency or error
	// signals deviated in the incident window; EntryEvidence says how.
	EntryMoved    bool
	EntryEvidence string
	// EntryExplainedBy names the service the entry calls that explains
	// every latency and error episode of the entry still under way (it
	// deviated at the same time, as strongly, in its own signals): the
	// entry's symptom is that service's consequence. Empty otherwise.
	EntryExplainedBy string
}

// Robust-z threshold for a deviated bin (the usual 3 robust deviations).
const zThreshold = 3

// episode is one series' deviation still under way at the window's end.
type episode struct {
	s        *Series
	onset    time.Time
	timing   string
	lastAt   time.Time // the last deviated bin
	peak     float64   // peak robust z in the direction of trouble
	ref      float64   // reference median
	peakVal  float64   // value at the peak
	last     float64   // last value
	active   bool
	dir      int // +1 rose, -1 fell
	subject  string
	level    Level
	signal   Signal
	factor   float64
	note     string
	explain  string
	fromLogs bool
	template string
	lines    int
	isNew    bool
	errTmpl  bool // a log episode of an error template
	// explainedBy is the callee that explains a caller's latency or errors.
	explainedBy string
	// op, calls and opLog describe an operation-event episode: the
	// operation, its calls since the split, and whether the event is a log
	// template.
	op    string
	calls int
	opLog bool
	// switched is the event an operation took more often since, when one
	// of its steps fell: a branch taken instead, not a step cut short.
	switched string
	// vol weighs a percentile by the requests behind it (1: enough);
	// hasVol says it was set.
	vol    float64
	hasVol bool
}

// Rank localizes: it returns candidates best first.
func Rank(in Input) Result {
	w := in.Window
	if w.Step <= 0 {
		w.Step = time.Minute
	}
	if w.BaselineStart.IsZero() || !w.BaselineStart.Before(w.Start) {
		w.BaselineStart = w.Start.Add(-3 * w.End.Sub(w.Start))
	}
	g := newGrid(w)
	g.entry = in.Entry
	var res Result
	// Pass 1: the symptom's onset from the entry's own signals, against
	// the baseline window.
	var entryEps []*episode
	for i := range in.Metrics {
		s := &in.Metrics[i]
		if in.Entry == "" || !strings.EqualFold(s.Service, in.Entry) || s.Caller != "" || !s.Signal.propagates() {
			continue
		}
		if ep := g.episodeOf(s, g.index(w.Start)); ep != nil && ep.active && ep.peak >= zThreshold {
			entryEps = append(entryEps, ep)
		}
	}
	var ts time.Time
	for _, ep := range entryEps {
		if ts.IsZero() || ep.onset.Before(ts) {
			ts = ep.onset
		}
	}
	if len(entryEps) > 0 {
		best := entryEps[0]
		for _, ep := range entryEps[1:] {
			if ep.peak > best.peak {
				best = ep
			}
		}
		res.EntryMoved = true
		res.EntryEvidence = describe(best)
	}
	if ts.IsZero() {
		// No entry signal: the minute around which most latency and error
		// episodes under way at the end began, and new error templates
		// first appeared (the incident's onset).
		var onsets []time.Time
		for i := range in.Metrics {
			s := &in.Metrics[i]
			if !s.Signal.propagates() || s.Outbound {
				continue
			}
			if ep := g.episodeOf(s, g.index(w.Start)); ep != nil && ep.active && ep.peak >= zThreshold {
				onsets = append(onsets, ep.onset)
			}
		}
		onsets = append(onsets, g.newErrorOnsets(in.Logs, g.index(w.Start))...)
		ts = densest(onsets, 2*w.Step)
	}
	if ts.IsZero() {
		ts = w.Start
	}
	res.SymptomOnset = ts
	// Pass 2: every signal against its reference before the symptom.
	tol := 2 * w.Step
	refEnd := g.index(ts.Add(-tol))
	var eps []*episode
	for i := range in.Metrics {
		s := &in.Metrics[i]
		ep := g.episodeOf(s, refEnd)
		if ep == nil {
			continue
		}
		ep.subject, ep.level = s.subject()
		if ep.subject == "" {
			continue
		}
		eps = append(eps, ep)
	}
	eps = append(eps, g.logEpisodes(in.Logs, g.index(ts), int(tol/w.Step))...)
	eps = append(eps, g.opEpisodes(in.Ops, g.index(ts), int(tol/w.Step))...)
	for _, ep := range eps {
		if !ep.fromLogs {
			// Under way when the symptom began: sporadic signals (errors)
			// need not deviate in every bin to the end.
			ep.active = !ep.lastAt.Before(ts.Add(-tol))
		}
		f, note := timing(ep, ts, tol)
		ep.factor, ep.note = f, joinNote(note, ep.note)
		if ep.switched != "" {
			ep.factor *= 0.3
			ep.note = joinNote(ep.note, "it took another step more often instead: "+shorten(ep.switched, 80))
		}
		switch {
		case ep.s != nil && ep.s.Outbound:
			// A client-side measure shows the callees more than the
			// service: it points away from itself.
			ep.factor *= 0.25
		case ep.level == LevelNode && (ep.signal == SignalTraffic || ep.signal == SignalNetwork):
			// A node's throughput is the sum of its pods' traffic: where
			// load went, far more often than why anything failed.
			ep.factor *= 0.25
		case ep.signal == SignalTraffic || ep.signal == SignalNetwork || ep.signal == SignalTraceOps:
			// A change of load, throughput or call mix is where a symptom
			// is felt more often than where it starts.
			ep.factor *= 0.5
		}
	}
	volumeWeights(g, in.Metrics, eps, refEnd)
	idle := idleServices(in)
	for _, ep := range eps {
		if ep.level == LevelService && idle[strings.ToLower(ep.subject)] {
			ep.factor *= idleWeight
			ep.note = joinNote(ep.note, "it served no request in the window (its request rate read zero throughout, and no trace reached it): on no request's path")
		}
	}
	explainCallers(eps, in.Edges, in.Entry, ts, tol)
	res.EntryExplainedBy = entryExplainedBy(eps, in.Entry)
	explainByOwnCalls(eps)
	explainNewPaths(eps, in.Edges, tol)
	explainByCalleeOps(eps, in.Edges, tol)
	res.Candidates = combine(eps)
	return res
}

// idleWeight is what a service that served no request weighs: the weight
// of a caller explained by a callee (explainCallers), as its changes are
// no origin of what the asked service's requests met.
const idleWeight = 0.3

// idleServices returns the services (lower case) that served no request
// in the whole window, baseline included: each of their request-rate
// series (traffic, and request counts by status) reads zero in every bin,
// and no trace series or call edge names them. A service that serves no
// request is on no request's path: its memory or CPU moving, or its log,
// cannot be where the asked service's latency or errors come from (a
// shared node shows as the node's own candidate). A service that went
// down during the window served requests before it, and is not idle.
func idleServices(in Input) map[string]bool {
	zero := map[string]bool{} // request-rate series seen, all zero so far
	busy := map[string]bool{}
	for i := range in.Metrics {
		s := &in.Metrics[i]
		if s.Service == "" {
			continue
		}
		svc := strings.ToLower(s.Service)
		switch {
		case s.Caller != "":
			// An edge series: calls between two services.
			busy[svc], busy[strings.ToLower(s.Caller)] = true, true
			continue
		case s.Signal == SignalTraceLat || s.Signal == SignalTraceErr || s.Signal == SignalTraceOps:
			busy[svc] = true
			continue
		case s.Outbound || s.Unit != "/s" || s.Signal != SignalTraffic && s.Signal != SignalErrors:
			continue
		}
		nonzero := false
		for _, p := range s.Points {
			if p.V != 0 && !math.IsNaN(p.V) {
				nonzero = true
				break
			}
		}
		if nonzero || len(s.Points) == 0 {
			busy[svc] = true
		} else if s.Signal == SignalTraffic {
			zero[svc] = true
		}
	}
	for _, e := range in.Edges {
		busy[strings.ToLower(e.Caller)], busy[strings.ToLower(e.Callee)] = true, true
	}
	idle := map[string]bool{}
	for svc := range zero {
		if !busy[svc] {
			idle[svc] = true
		}
	}
	return idle
}

// entryExplainedBy returns the callee that explains every latency and
// error episode of the entry under way (a measure of its own, not of its
// calls), or "" when one of them stands on its own or there is none.
func entryExplainedBy(eps []*episode, entry string) string {
	by := ""
	for _, ep := range eps {
		if entry == "" || ep.level != LevelService || !strings.EqualFold(ep.subject, entry) || ep.fromLogs || !ep.signal.propagates() ||
			!ep.active || ep.peak < zThreshold || ep.s == nil || ep.s.Caller != "" || ep.s.Outbound {
			continue
		}
		if ep.explainedBy == "" {
			return ""
		}
		if by == "" {
			by = ep.explainedBy
		}
	}
	return by
}

// densest returns the onset with the most onsets within tol of it (the
// latest of equals: an alert is asked about when it fires, an equal burst
// before it is the tail of something else), moved to the first onset of
// its burst. Zero for none.
func densest(ts []time.Time, tol time.Duration) time.Time {
	var best time.Time
	top := 0
	for _, a := range ts {
		n := 0
		for _, b := range ts {
			if d := a.Sub(b); d <= tol && d >= -tol {
				n++
			}
		}
		if n > top || n == top && a.After(best) {
			best, top = a, n
		}
	}
	for _, a := range ts {
		if a.Before(best) && best.Sub(a) <= tol {
			best = a
		}
	}
	return best
}

// timing weighs an episode by its onset against the symptom's.
func timing(ep *episode, ts time.Time, tol time.Duration) (float64, string) {
	switch {
	case !ep.active:
		ep.timing = TimingEnded
		return 0.2, "over before the symptom began"
	case ep.onset.Before(ts.Add(-tol)):
		ep.timing = TimingBefore
		return 0.5, fmt.Sprintf("already deviating since %s, before the symptom began at %s", hm(ep.onset), hm(ts))
	case ep.onset.After(ts.Add(tol)):
		ep.timing = TimingAfter
		return 0.6, fmt.Sprintf("began at %s, after the symptom (%s)", hm(ep.onset), hm(ts))
	}
	ep.timing = TimingWith
	return 1, ""
}

// explainCallers lowers a caller's propagating signals (latency, errors)
// when a service it calls, directly or not, deviated from the symptom's
// onset on at least half as strongly, in any of its own signals (a
// callee's CPU starvation shows as its callers' latency): the deepest
// service whose own behaviour changed is the suspect. Without a call
// graph the entry service is taken to call every other service, and its
// nodes.
func explainCallers(eps []*episode, edges []Edge, entry string, ts time.Time, tol time.Duration) {
	callees := map[string][]string{}
	for _, e := range edges {
		if e.Caller != "" && e.Callee != "" && e.Caller != e.Callee {
			callees[e.Caller] = append(callees[e.Caller], e.Callee)
		}
	}
	// The strongest timely own-behaviour deviation of each subject, and
	// its strongest error deviation: a caller's latency is explained by a
	// callee's slowness of any cause, its errors only by the callee's
	// errors. Latency adds up along a call path, so a callee's latency
	// explains its caller's only when it rose by a comparable amount:
	// 20 ms more at a callee does not explain 400 ms more at its caller.
	other := map[string]float64{}   // non-latency own signals
	latency := map[string]float64{} // latency signals
	delta := map[string]float64{}   // the largest latency rise, seconds
	errStrength := map[string]float64{}
	for _, ep := range eps {
		if ep.factor < 1 || ep.peak < zThreshold || ep.signal == SignalTraffic || ep.s != nil && ep.s.Outbound {
			continue
		}
		k := string(ep.level) + "/" + ep.subject
		m := magnitude(ep.peak) * ep.volume()
		if ep.signal == SignalLatency || ep.signal == SignalTraceLat {
			latency[k] = max(latency[k], m)
			if d := ep.rise(); d > 0 {
				delta[k] = max(delta[k], d)
			}
		} else {
			other[k] = max(other[k], m)
		}
		if ep.signal == SignalErrors || ep.signal == SignalTraceErr || ep.fromLogs && ep.dir > 0 && ep.errTmpl {
			errStrength[k] = max(errStrength[k], m)
		}
	}
	// explains reports whether subject k's own deviation explains a
	// caller's of strength need (and latency rise d, 0 when not latency).
	explains := func(k string, need, d float64, errs bool) (float64, bool) {
		if errs {
			return errStrength[k], errStrength[k] >= need
		}
		if other[k] >= need {
			return other[k], true
		}
		if latency[k] >= need && (d <= 0 || delta[k] >= 0.5*d) {
			return latency[k], true
		}
		return 0, false
	}
	below := func(svc string, need, d float64, errs bool) string {
		if n := nearest(callees, svc, func(n string) bool {
			_, ok := explains(string(LevelService)+"/"+n, need, d, errs)
			return ok
		}); n != "" {
			return n
		}
		if len(edges) == 0 && strings.EqualFold(svc, entry) {
			keys := map[string]bool{}
			for _, m := range []map[string]float64{other, latency, errStrength} {
				for k := range m {
					keys[k] = true
				}
			}
			best, bestM := "", 0.0
			for _, k := range sortedKeys(keys) {
				_, name, _ := strings.Cut(k, "/")
				if m, ok := explains(k, need, d, errs); ok && !strings.EqualFold(name, entry) && m > bestM {
					best, bestM = name, m
				}
			}
			return best
		}
		return ""
	}
	for _, ep := range eps {
		if ep.level != LevelService || !ep.signal.propagates() || ep.fromLogs {
			continue
		}
		errs := ep.signal == SignalErrors || ep.signal == SignalTraceErr
		d := 0.0
		if !errs {
			d = ep.rise()
		}
		if b := below(ep.subject, 0.5*magnitude(ep.peak)*ep.volume(), d, errs); b != "" {
			ep.factor *= 0.3
			ep.explainedBy = b
			ep.note = joinNote(ep.note, "explained by "+b+", which it calls")
		}
	}
}

// rise is how much a latency episode rose, in seconds (0 for other
// units or a fall).
func (ep *episode) rise() float64 {
	if ep.s == nil || ep.s.Unit != "s" || ep.dir <= 0 {
		return 0
	}
	return ep.peakVal - ep.ref
}

// volume is the episode's weight for the requests behind it.
func (ep *episode) volume() float64 {
	if !ep.hasVol {
		return 1
	}
	return ep.vol
}

// tailRequests is how many requests a percentile needs in its tail, per
// bin, to count fully: ten, the usual least count for a frequency to be
// read as a rate rather than as chance.
const tailRequests = 10

// quantileRE finds a percentile in a metric's name (p90, p99, _0.95).
var quantileRE = regexp.MustCompile(`(?i)(?:^|[_.\s-])p(\d{2,3})(?:$|[_.\s-])|quantile_?0?\.(\d+)`)

// quantileOf returns the percentile a metric's name declares (0.9 for
// p90), or 0.
func quantileOf(metric string) float64 {
	m := quantileRE.FindStringSubmatch(metric)
	if m == nil {
		return 0
	}
	d := m[1]
	if d == "" {
		d = m[2]
	}
	q := 0.0
	for i, c := range d {
		q += float64(c-'0') * math.Pow(10, -float64(i+1))
	}
	if q <= 0 || q >= 1 {
		return 0
	}
	return q
}

// volumeWeights weighs each latency percentile of a pod by the requests
// behind it: a p90 over 8 requests a minute is the slowest one of them,
// and one slow request moves it from one histogram bucket to the next.
// The pod's request rate is the reference median of its own traffic
// series (requests per second); the tail is (1−q) of a bin's requests,
// and the weight √(tail/tailRequests), at most 1. A percentile without a
// traffic series of its pod keeps its weight.
func volumeWeights(g *grid, ms []Series, eps []*episode, refEnd int) {
	rate := map[string]float64{}
	for i := range ms {
		s := &ms[i]
		if s.Signal != SignalTraffic || s.Pod == "" || s.Unit != "/s" || s.Caller != "" {
			continue
		}
		var ref []float64
		for _, v := range g.bin(s.Points)[:refEnd] {
			if !math.IsNaN(v) {
				ref = append(ref, v)
			}
		}
		if len(ref) >= 3 {
			rate[s.Pod] = analysis.Median(ref)
		}
	}
	for _, ep := range eps {
		s := ep.s
		if s == nil || s.Signal != SignalLatency && s.Signal != SignalTraceLat {
			continue
		}
		q := quantileOf(s.Metric)
		n, known := s.PerBin, s.PerBin > 0
		if r, ok := rate[s.Pod]; s.Pod != "" && ok && s.Signal == SignalLatency {
			n, known = r*g.w.Step.Seconds(), true
		}
		if q == 0 || !known {
			continue
		}
		tail := (1 - q) * n
		ep.vol, ep.hasVol = math.Min(1, math.Sqrt(tail/tailRequests)), true
		if ep.vol < 1 {
			ep.note = joinNote(ep.note, fmt.Sprintf("a p%.0f over ~%.0f requests a bin", 100*q, n))
		}
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// explainByOwnCalls lowers the other log episodes of a service that logs
// failing calls to another service (a rising error template naming it):
// a code path it stopped or started taking then follows from the failing
// dependency, as its own log says.
func explainByOwnCalls(eps []*episode) {
	failing := map[string]bool{}
	for _, ep := range eps {
		if ep.fromLogs && ep.dir > 0 && ep.s != nil && ep.s.Outbound && ep.factor > 0.2 {
			failing[ep.subject] = true
		}
	}
	for _, ep := range eps {
		if ep.fromLogs && failing[ep.subject] && !(ep.s != nil && ep.s.Outbound) {
			ep.factor *= 0.3
			ep.note = joinNote(ep.note, "its own log reports failing calls to another service")
		}
	}
}

// explainNewPaths lowers a routine template that is new at a service when
// a service calling it, directly or not, changed what it does at the same
// time (a log or call-mix change at least half as strong): a flow that
// resumes or starts at a caller reaches every service it calls, and the
// new paths there follow from the caller's.
func explainNewPaths(eps []*episode, edges []Edge, tol time.Duration) {
	callers := map[string][]string{}
	for _, e := range edges {
		if e.Caller != "" && e.Callee != "" && e.Caller != e.Callee {
			callers[e.Callee] = append(callers[e.Callee], e.Caller)
		}
	}
	if len(callers) == 0 {
		return
	}
	type change struct {
		m     float64
		onset time.Time
	}
	own := map[string][]change{}
	for _, ep := range eps {
		// A caller's errors are no flow that starts: they stop what it
		// does, and start no new path at what it calls.
		if ep.level == LevelService && ep.peak >= zThreshold && ep.factor >= 0.5 && (ep.fromLogs && !ep.errTmpl || ep.signal == SignalTraceOps) {
			own[ep.subject] = append(own[ep.subject], change{magnitude(ep.peak), ep.onset})
		}
	}
	for _, ep := range eps {
		if !ep.fromLogs || ep.errTmpl || ep.dir <= 0 || !ep.isNew {
			continue
		}
		need := 0.5 * magnitude(ep.peak)
		found := nearest(callers, ep.subject, func(up string) bool {
			for _, ch := range own[up] {
				if d := ch.onset.Sub(ep.onset); ch.m >= need && d <= tol && d >= -tol {
					return true
				}
			}
			return false
		})
		if found != "" {
			ep.factor *= 0.3
			ep.note = joinNote(ep.note, "follows a change at "+found+", which calls it")
		}
	}
}

// combine groups episodes by subject into candidates.
func combine(eps []*episode) []Candidate {
	type agg struct {
		c    Candidate
		best *episode
		sc   float64
		sigs map[Signal]float64
	}
	by := map[string]*agg{}
	var order []string
	for _, ep := range eps {
		if ep.peak < zThreshold {
			continue
		}
		key := string(ep.level) + "/" + ep.subject
		a := by[key]
		if a == nil {
			a = &agg{c: Candidate{Subject: ep.subject, Level: ep.level}, sigs: map[Signal]float64{}}
			by[key] = a
			order = append(order, key)
		}
		s := magnitude(ep.peak) * ep.factor * ep.volume()
		sig := family(ep.signal)
		if s > a.sigs[sig] {
			a.sigs[sig] = s
		}
		if a.best == nil || s > a.sc {
			a.best, a.sc = ep, s
		}
	}
	var out []Candidate
	for _, k := range order {
		a := by[k]
		ep := a.best
		// Independent kinds of evidence that also deviated add a quarter
		// of their own score: modalities that agree are strong evidence.
		bonus := 0.0
		for sig, s := range a.sigs {
			if sig != family(ep.signal) && s >= 0.3*a.sc {
				bonus += 0.25 * s
			}
			a.c.Signals = append(a.c.Signals, sig)
		}
		sort.Slice(a.c.Signals, func(i, j int) bool { return a.c.Signals[i] < a.c.Signals[j] })
		a.c.Score = math.Round(math.Min(100, 100*(a.sc+bonus))*10) / 10
		a.c.Signal = ep.signal
		a.c.Onset = ep.onset
		a.c.Preexisting = ep.timing == TimingBefore
		a.c.Timing = ep.timing
		a.c.Explanation = a.c.Subject + ": " + describe(ep)
		if ep.note != "" {
			a.c.Explanation += " (" + ep.note + ")"
		}
		// Evidence: the best episode of each signal kind, strongest first.
		var mine []*episode
		for _, e := range eps {
			if e.subject == ep.subject && e.level == ep.level && e.peak >= zThreshold {
				mine = append(mine, e)
			}
		}
		sort.SliceStable(mine, func(i, j int) bool {
			return magnitude(mine[i].peak)*mine[i].factor*mine[i].volume() > magnitude(mine[j].peak)*mine[j].factor*mine[j].volume()
		})
		seen := map[string]bool{}
		for _, e := range mine {
			d := describe(e)
			if seen[d] || len(a.c.Evidence) >= 5 {
				continue
			}
			seen[d] = true
			a.c.Evidence = append(a.c.Evidence, d)
		}
		out = append(out, a.c)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		if !out[i].Onset.Equal(out[j].Onset) {
			return out[i].Onset.Before(out[j].Onset)
		}
		return out[i].Subject < out[j].Subject
	})
	return out
}

// family groups signals for corroboration: two latency metrics of one
// service are one kind of evidence.
func family(s Signal) Signal {
	switch s {
	case SignalTraceLat:
		return SignalLatency
	case SignalTraceErr, SignalTraceOps:
		return SignalErrors
	case SignalOpEvents:
		return SignalLogs
	}
	return s
}

// magnitude maps a robust z to 0..1, monotonically: 3 → 0.2, 30 → 0.5,
// 1000 and above → 1.
func magnitude(z float64) float64 {
	if z <= 0 {
		return 0
	}
	return math.Min(1, math.Log10(1+z)/3)
}

func hm(t time.Time) string { return t.UTC().Format("15:04") }

// nearest walks graph breadth-first from start (start itself excluded)
// and returns the first service for which match holds, or "".
func nearest(graph map[string][]string, start string, match func(string) bool) string {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		for _, n := range graph[c] {
			if seen[n] {
				continue
			}
			seen[n] = true
			if match(n) {
				return n
			}
			queue = append(queue, n)
		}
	}
	return ""
}

// shorten cuts a text to n bytes with an ellipsis.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
