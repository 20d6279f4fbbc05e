package localize

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// grid is the bin layout of a window.
type grid struct {
	entry string // the asked service
	w     Window
	start time.Time
	n     int
}

func newGrid(w Window) *grid {
	start := w.BaselineStart.Truncate(w.Step)
	n := int(w.End.Sub(start)/w.Step) + 1
	if n < 1 {
		n = 1
	}
	return &grid{w: w, start: start, n: n}
}

// index is the bin of t, clamped to the grid.
func (g *grid) index(t time.Time) int {
	i := int(t.Sub(g.start) / g.w.Step)
	return min(max(i, 0), g.n-1)
}

func (g *grid) at(i int) time.Time { return g.start.Add(time.Duration(i) * g.w.Step) }

// bin averages a series' points per bin; empty bins are NaN.
func (g *grid) bin(ps []evidence.Point) []float64 {
	sum := make([]float64, g.n)
	cnt := make([]int, g.n)
	for _, p := range ps {
		if p.T.Before(g.start) || p.T.After(g.w.End) || math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			continue
		}
		i := int(p.T.Sub(g.start) / g.w.Step)
		if i < 0 || i >= g.n {
			continue
		}
		sum[i] += p.V
		cnt[i]++
	}
	out := make([]float64, g.n)
	for i := range out {
		if cnt[i] == 0 {
			out[i] = math.NaN()
		} else {
			out[i] = sum[i] / float64(cnt[i])
		}
	}
	return out
}

// floor is the smallest scale of a series' noise: a move smaller than a
// few floors is not a deviation however quiet the series was. Absolute
// floors per unit (a millisecond, a percentage point, 0.02 cores, a MiB,
// a KiB/s, 0.1/s, a ratio of 0.01), and 5% of the reference level.
func floor(unit string, level float64) float64 {
	rel := 0.05 * math.Abs(level)
	abs := 1e-9
	switch unit {
	case "s":
		abs = 0.001
	case "%":
		abs = 1
	case "cores":
		abs = 0.02
	case "bytes":
		abs = 1 << 20
		rel = 0.02 * math.Abs(level)
	case "bytes/s":
		abs = 1024
	case "/s":
		abs = 0.1
	case "ratio":
		abs = 0.01 // one request in a hundred
	}
	return math.Max(abs, rel)
}

// episodeOf compares a series with its reference (bins before refEnd) and
// returns its latest episode of deviation in the incident window, or nil
// when it has no usable reference or never deviates there.
func (g *grid) episodeOf(s *Series, refEnd int) *episode {
	vals := g.bin(s.Points)
	var ref []float64
	for _, v := range vals[:refEnd] {
		if !math.IsNaN(v) {
			ref = append(ref, v)
		}
	}
	if len(ref) < 3 {
		return nil
	}
	med := analysis.Median(ref)
	scale := math.Max(1.4826*analysis.MAD(ref), floor(s.Unit, med))
	z := make([]float64, len(vals))
	for i, v := range vals {
		z[i] = (v - med) / scale // NaN stays NaN
	}
	first := g.index(g.w.Start)
	dev := func(i, sign int) bool {
		if math.IsNaN(z[i]) {
			return false
		}
		d := z[i] * float64(sign)
		switch s.Bad {
		case Up:
			d = z[i]
		case Down:
			d = -z[i]
		}
		return d >= zThreshold
	}
	// The last deviated bin in the incident window.
	last, sign := -1, 0
	for i := len(z) - 1; i >= first && last < 0; i-- {
		for _, sg := range []int{1, -1} {
			if dev(i, sg) {
				last, sign = i, sg
				break
			}
		}
	}
	if last < 0 {
		return nil
	}
	if s.Bad == Up {
		sign = 1
	} else if s.Bad == Down {
		sign = -1
	}
	after := 0
	for i := last + 1; i < len(z); i++ {
		if !math.IsNaN(z[i]) {
			after++
		}
	}
	on := last
	for i := last - 1; i >= 0; i-- {
		if math.IsNaN(z[i]) {
			continue
		}
		if !dev(i, sign) {
			break
		}
		on = i
	}
	ep := &episode{s: s, onset: g.at(on), lastAt: g.at(last), ref: med, active: after <= 1, dir: sign, signal: s.Signal}
	for i := on; i <= last; i++ {
		if math.IsNaN(z[i]) {
			continue
		}
		if d := z[i] * float64(sign); d > ep.peak {
			ep.peak, ep.peakVal = d, vals[i]
		}
	}
	if s.Signal.holds() {
		// A level must hold: a percentile that jumps for one bin and is
		// back the next is one slow request, not a slower service; a
		// CPU, throughput or call mix that does so is a blip, not a
		// changed state. The peak is the largest deviation held over two
		// consecutive observed bins; an episode in the last observed bin
		// alone cannot be judged yet and keeps its value.
		prev, prevVal, held, heldVal, pairs := math.NaN(), 0.0, 0.0, 0.0, 0
		for i := on; i < len(z); i++ {
			if math.IsNaN(z[i]) {
				continue
			}
			d := z[i] * float64(sign)
			if !math.IsNaN(prev) {
				pairs++
				m, mv := prev, prevVal
				if d < prev {
					m, mv = d, vals[i]
				}
				if m > held {
					held, heldVal = m, mv
				}
			}
			prev, prevVal = d, vals[i]
		}
		if pairs > 0 && held < ep.peak {
			ep.peak, ep.peakVal = held, heldVal
		}
	}
	if g.entry == "" || !strings.EqualFold(s.Service, g.entry) {
		// The asked service's own signals are the symptom asked about,
		// whatever it did before.
		recurring(ep, vals, z, min(refEnd, on), sign, s.Unit, dev)
	}
	for i := len(vals) - 1; i >= 0; i-- {
		if !math.IsNaN(vals[i]) {
			ep.last = vals[i]
			break
		}
	}
	return ep
}

// minExcursions is how many separate short excursions the reference must
// hold for a series to count as one that makes them routinely: more than
// the one or two an earlier incident leaves. maxExcursionBins is the
// longest run of deviating bins that counts as a short excursion (a spike
// that held no more than two bins); longer runs are episodes of their
// own, an earlier incident's, and do not make a series routinely noisy.
const (
	minExcursions    = 3
	maxExcursionBins = 2
)

// recurring judges an episode of a series that already made separate
// excursions the same way in its reference (a periodic job's CPU, an
// edge whose latency jumps whenever a batch runs) against those
// excursions rather than against the quiet bins between them: its peak is
// the robust z of its peak value among the earlier excursions' peaks
// (median and MAD, with the unit's floors). A series that routinely jumps
// to 30 ms is not newly slow at 35 ms, however quiet it is in between.
func recurring(ep *episode, vals, z []float64, refEnd, sign int, unit string, dev func(i, sign int) bool) {
	var peaks []float64
	run, peak := 0, 0.0
	for i := 0; i <= refEnd; i++ {
		if i < refEnd && math.IsNaN(z[i]) {
			continue
		}
		if i < refEnd && dev(i, sign) {
			v := vals[i] * float64(sign)
			if run == 0 || v > peak {
				peak = v
			}
			run++
			continue
		}
		if run > 0 && run <= maxExcursionBins {
			peaks = append(peaks, peak)
		}
		run = 0
	}
	if len(peaks) < minExcursions {
		return
	}
	med := analysis.Median(peaks)
	scale := math.Max(1.4826*analysis.MAD(peaks), floor(unit, med))
	if zr := (ep.peakVal*float64(sign) - med) / scale; zr < ep.peak {
		ep.peak = math.Max(0, zr)
		ep.note = joinNote(ep.note, fmt.Sprintf("judged against %d earlier excursions like it", len(peaks)))
	}
}

// holds reports whether a deviation of this signal must hold for two
// observed bins to count at its size: a level (latency, CPU, memory,
// throughput, load, call mix) that is back to normal the bin after is a
// blip, not a changed state. Errors are sporadic and count as they come.
func (s Signal) holds() bool {
	switch s {
	case SignalLatency, SignalTraceLat, SignalCPU, SignalMemory, SignalNetwork, SignalTraffic, SignalTraceOps:
		return true
	}
	return false
}

// logEpisodes turns per-service template counts into episodes: a template
// whose count since the symptom departs from what its share of the
// service's own earlier lines predicts. The expectation is the template's
// share of the service's lines before, applied to the service's lines
// since: a service whose traffic (and so its logging) rose or fell as a
// whole is not a change of what it does, while a code path it stopped
// taking or newly takes is. Error templates count when they rise (new ones
// above all); a routine template counts, at half weight, when it falls
// away (a code path no longer taken) or when it is new (a path never taken
// before); a routine template merely rising says more about load or fresh
// pods than about a fault.
//
// Logs are often kept only around an incident, so the symptom's onset,
// known to a bin or two from other signals, leaves few or no earlier bins
// of log to compare with. The split between before and since is therefore
// searched per template among the bins within tol of the symptom's bin
// (from to the last candidate split), and only bins in which the service
// logged at all count, so a log that covers a few minutes is compared
// over the time it covers.
func (g *grid) logEpisodes(ts []LogTemplate, symptom, tol int) []*episode {
	type cover struct {
		perBin map[int]int // the service's lines per bin
	}
	covered := map[string]*cover{}
	for _, t := range ts {
		c := covered[t.Service]
		if c == nil {
			c = &cover{perBin: map[int]int{}}
			covered[t.Service] = c
		}
		for m, n := range t.Counts {
			if n <= 0 {
				continue
			}
			if i, ok := g.minuteIndex(m); ok {
				c.perBin[i] += n
			}
		}
	}
	lo, hi := max(symptom-tol, 1), g.n-1
	var out []*episode
	for i := range ts {
		t := &ts[i]
		if t.Service == "" {
			continue
		}
		c := covered[t.Service]
		perBin := map[int]int{}
		for m, n := range t.Counts {
			if b, ok := g.minuteIndex(m); ok && n > 0 {
				perBin[b] += n
			}
		}
		// A split that leaves the service no earlier line to compare with
		// is used only when no split does: with a reference, "new" means
		// new.
		var best, blind *episode
		referenced := false
		for split := lo; split <= hi; split++ {
			if hasLinesBefore(c.perBin, split) {
				referenced = true
			}
			ep := logSplit(t, c.perBin, perBin, split, g)
			if ep == nil {
				continue
			}
			if !hasLinesBefore(c.perBin, split) {
				if blind == nil || ep.peak > blind.peak {
					blind = ep
				}
			} else if best == nil || ep.peak > best.peak {
				best = ep
			}
		}
		if !referenced {
			best = blind
		}
		if best != nil {
			out = append(out, best)
		}
	}
	return out
}

// hasLinesBefore reports whether the service logged in a bin before split.
func hasLinesBefore(perBin map[int]int, split int) bool {
	for b := range perBin {
		if b < split {
			return true
		}
	}
	return false
}

// logSplit tests one template against its service's lines with the bins
// before split as the reference.
func logSplit(t *LogTemplate, svcBins, tBins map[int]int, split int, g *grid) *episode {
	refBins, refN, incN := 0, 0, 0
	for b, n := range svcBins {
		if b < split {
			refBins++
			refN += n
		} else {
			incN += n
		}
	}
	if incN == 0 {
		return nil
	}
	refCount, incCount, firstInc := 0, 0, -1
	for b, n := range tBins {
		if b < split {
			refCount += n
		} else {
			incCount += n
			if firstInc < 0 || b < firstInc {
				firstInc = b
			}
		}
	}
	expected := 0.0
	if refN > 0 {
		expected = float64(refCount) / float64(refN) * float64(incN)
	}
	z := (float64(incCount) - expected) / math.Sqrt(expected+1)
	// A fall is judged by the exact Poisson lower tail, as an operation's
	// steps are: a line that all but stopped is rarer than the normal
	// approximation says.
	fall := 0.0
	if z < 0 {
		fall = poissonLowZ(incCount, expected)
	}
	weight := 1.0
	if !t.Error {
		weight = 0.5
	}
	if refBins == 0 {
		weight *= 0.75 // the log covers no earlier time to compare with
	}
	ep := &episode{fromLogs: true, subject: t.Service, level: LevelService, signal: SignalLogs, active: true,
		template: t.Template, lines: incCount, ref: expected, isNew: refCount == 0 && refBins > 0, errTmpl: t.Error}
	switch {
	case z >= zThreshold && firstInc >= 0 && (t.Error || ep.isNew):
		ep.dir, ep.peak, ep.onset = 1, z*weight, g.at(firstInc)
	case !t.Error && refBins > 0 && fall >= zThreshold:
		ep.dir, ep.peak, ep.onset = -1, fall*weight, g.at(split)
	default:
		return nil
	}
	ep.s = &Series{Service: t.Service, Metric: "log template", Signal: SignalLogs, Outbound: t.Outbound}
	if ep.template == "" {
		ep.template = t.Example
	}
	return ep
}

// newErrorOnsets returns the first minute, in the incident window (bins
// from start), of each error template with at least three lines there and
// none before it.
func (g *grid) newErrorOnsets(ts []LogTemplate, start int) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Error {
			continue
		}
		before, inc, first := 0, 0, -1
		for m, n := range t.Counts {
			b, ok := g.minuteIndex(m)
			if !ok || n <= 0 {
				continue
			}
			if b < start {
				before += n
			} else {
				inc += n
				if first < 0 || b < first {
					first = b
				}
			}
		}
		if before == 0 && inc >= 3 {
			out = append(out, g.at(first))
		}
	}
	return out
}

func (g *grid) minuteIndex(minute int64) (int, bool) {
	t := time.Unix(minute*60, 0)
	if t.Before(g.start) || t.After(g.w.End) {
		return 0, false
	}
	return g.index(t), true
}

// describe writes one direction-correct line about an episode.
func describe(ep *episode) string {
	if ep.signal == SignalOpEvents {
		return describeOp(ep)
	}
	if ep.fromLogs {
		tmpl := ep.template
		if len(tmpl) > 160 {
			tmpl = tmpl[:160] + "…"
		}
		switch {
		case ep.dir < 0:
			return fmt.Sprintf("%s logged a template %d times since %s where ~%.0f were expected from its earlier share of the service's lines (fell): %q", ep.subject, ep.lines, hm(ep.onset), ep.ref, tmpl)
		case ep.isNew:
			return fmt.Sprintf("%s logged %s of a template new since %s (none before): %q", ep.subject, plural(ep.lines, "line"), hm(ep.onset), tmpl)
		}
		return fmt.Sprintf("%s logged %s of a template since %s where ~%.0f were expected from its earlier share of the service's lines: %q", ep.subject, plural(ep.lines, "line"), hm(ep.onset), ep.ref, tmpl)
	}
	s := ep.s
	verb := "rose"
	if ep.dir < 0 {
		verb = "fell"
	}
	what := s.Metric
	switch {
	case s.Caller != "":
		what = fmt.Sprintf("%s of calls from %s to %s", s.Metric, s.Caller, s.Service)
	case s.Pod != "":
		what = fmt.Sprintf("%s of pod %s", s.Metric, s.Pod)
	case s.Service == "" && s.Node != "":
		what = fmt.Sprintf("%s of node %s", s.Metric, s.Node)
	case s.Service != "":
		what = fmt.Sprintf("%s of %s", s.Metric, s.Service)
	}
	return fmt.Sprintf("%s %s from %s to %s at %s", what, verb, value(ep.ref, s.Unit), value(ep.peakVal, s.Unit), hm(ep.onset))
}

// value formats a number in its unit.
func value(v float64, unit string) string {
	switch unit {
	case "s":
		if math.Abs(v) < 1 {
			return trimNum(v*1000, 1) + " ms"
		}
		return trimNum(v, 2) + " s"
	case "%":
		return trimNum(v, 1) + "%"
	case "cores":
		return trimNum(v, 3) + " cores"
	case "bytes":
		return trimNum(v/(1<<20), 1) + " MiB"
	case "bytes/s":
		return trimNum(v/1024, 1) + " KiB/s"
	case "/s":
		return trimNum(v, 2) + "/s"
	case "ratio":
		return trimNum(100*v, 1) + "%"
	}
	return trimNum(v, 3)
}

func trimNum(v float64, prec int) string {
	s := fmt.Sprintf("%.*f", prec, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WilsonLower is the lower bound of the 95% Wilson score interval of a
// proportion k/n (0 for n ≤ 0): the smallest rate consistent with k events
// in n trials, so that 1 failure in 1 request does not read as a service
// failing every request.
func WilsonLower(k, n int) float64 {
	if n <= 0 || k <= 0 {
		return 0
	}
	const z = 1.96
	p, nf := float64(min(k, n))/float64(n), float64(n)
	c := p + z*z/(2*nf)
	d := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return math.Max(0, (c-d)/(1+z*z/nf))
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
