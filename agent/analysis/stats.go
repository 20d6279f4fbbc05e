package analysis

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// madScale makes the MAD a consistent estimator of the standard deviation
// for normal data.
const madScale = 1.4826

// Median returns the median of xs (NaN when empty). xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MAD returns the median absolute deviation from the median (unscaled).
func MAD(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	m := Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return Median(dev)
}

// RobustScale is a noise scale for robust z-scores: the scaled MAD of the
// baseline, floored so that a flat baseline does not make every wiggle
// infinitely significant. The floor is 5% of the baseline median's size or
// 1% of the largest magnitude seen, whichever is larger.
func RobustScale(baseline []float64, maxAbs float64) float64 {
	s := madScale * MAD(baseline)
	floor := math.Max(0.05*math.Abs(Median(baseline)), 0.01*maxAbs)
	if floor == 0 {
		floor = 1e-9
	}
	if math.IsNaN(s) || s < floor {
		return floor
	}
	return s
}

// Direction of an anomaly or change.
const (
	Up   = "up"
	Down = "down"
)

// Anomaly is a series that left its baseline band in the incident window.
type Anomaly struct {
	Labels         evidence.Labels `json:"labels"`
	Start          time.Time       `json:"start"`     // first point beyond the band
	PeakTime       time.Time       `json:"peak_time"` // point furthest from the baseline
	PeakValue      float64         `json:"peak_value"`
	BaselineMedian float64         `json:"baseline_median"`
	Score          float64         `json:"score"`  // robust z-score of the peak
	Points         int             `json:"points"` // incident points beyond the band
	Direction      string          `json:"direction"`
}

// AnomalyOptions tunes DetectAnomalies. Zero values take the defaults.
type AnomalyOptions struct {
	Threshold   float64 // robust z-score of the band; default 4
	MinBaseline int     // baseline points needed; default 5
	MinPoints   int     // incident points beyond the band; default 2 (1 when the window has fewer than 4)
}

// DetectAnomalies compares, for each series, the points in the incident
// window [incStart, incEnd] with the robust band (median ± threshold·scale)
// of the points in the baseline window [baseStart, baseEnd). Series with too
// little baseline are skipped. Results are ordered by score, largest first.
func DetectAnomalies(series []evidence.Series, baseStart, baseEnd, incStart, incEnd time.Time, o AnomalyOptions) []Anomaly {
	if o.Threshold <= 0 {
		o.Threshold = 4
	}
	if o.MinBaseline <= 0 {
		o.MinBaseline = 5
	}
	var out []Anomaly
	for _, s := range series {
		var base, inc []evidence.Point
		maxAbs := 0.0
		for _, p := range s.Points {
			if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			maxAbs = math.Max(maxAbs, math.Abs(p.V))
			switch {
			case !p.T.Before(baseStart) && p.T.Before(baseEnd):
				base = append(base, p)
			case !p.T.Before(incStart) && !p.T.After(incEnd):
				inc = append(inc, p)
			}
		}
		if len(base) < o.MinBaseline || len(inc) == 0 {
			continue
		}
		if a, ok := bandAnomaly(s.Labels, values(base), inc, maxAbs, o); ok {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return math.Abs(out[i].Score) > math.Abs(out[j].Score) })
	return out
}

func bandAnomaly(labels evidence.Labels, base []float64, inc []evidence.Point, maxAbs float64, o AnomalyOptions) (Anomaly, bool) {
	med := Median(base)
	scale := RobustScale(base, maxAbs)
	minPoints := o.MinPoints
	if minPoints <= 0 {
		minPoints = 2
		if len(inc) < 4 {
			minPoints = 1
		}
	}
	a := Anomaly{Labels: labels, BaselineMedian: med}
	for _, p := range inc {
		z := (p.V - med) / scale
		if math.Abs(z) < o.Threshold {
			continue
		}
		a.Points++
		if a.Start.IsZero() {
			a.Start = p.T
		}
		if math.Abs(z) > math.Abs(a.Score) {
			a.Score, a.PeakTime, a.PeakValue = z, p.T, p.V
		}
	}
	if a.Points < minPoints {
		return Anomaly{}, false
	}
	a.Direction = Up
	if a.Score < 0 {
		a.Direction = Down
	}
	return a, true
}

func values(ps []evidence.Point) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.V
	}
	return out
}

// ChangePoint is the time a series shifted from one level to another.
type ChangePoint struct {
	Labels    evidence.Labels `json:"labels"`
	Time      time.Time       `json:"time"`   // first point of the new level
	Before    float64         `json:"before"` // median before
	After     float64         `json:"after"`  // median after
	Score     float64         `json:"score"`  // shift in robust scale units
	Direction string          `json:"direction"`
}

// FindChangePoint finds the most significant level shift of one series: the
// split maximising the difference of the medians on each side, in units of
// the larger of the two sides' robust scales. minSegment points are needed
// on each side (default 3); shifts scoring under threshold (default 4) are
// not reported.
func FindChangePoint(s evidence.Series, minSegment int, threshold float64) (ChangePoint, bool) {
	if minSegment <= 0 {
		minSegment = 3
	}
	if threshold <= 0 {
		threshold = 4
	}
	var pts []evidence.Point
	maxAbs := 0.0
	for _, p := range s.Points {
		if math.IsNaN(p.V) || math.IsInf(p.V, 0) {
			continue
		}
		pts = append(pts, p)
		maxAbs = math.Max(maxAbs, math.Abs(p.V))
	}
	n := len(pts)
	if n < 2*minSegment {
		return ChangePoint{}, false
	}
	vs := values(pts)
	// The split is the one of least L1 cost (the sum of absolute deviations
	// from each side's median), the robust segmentation objective; its
	// significance is the shift of the medians in robust scale units.
	bestK, bestCost := -1, math.Inf(1)
	try := func(k int) {
		c := l1Cost(vs[:k]) + l1Cost(vs[k:])
		if c < bestCost-1e-12 {
			bestK, bestCost = k, c
		}
	}
	// Coarse pass over at most 64 candidate splits, then every split near
	// the best one: O(n log n) per candidate keeps long series cheap.
	stride := max(1, (n-2*minSegment)/64)
	for k := minSegment; k <= n-minSegment; k += stride {
		try(k)
	}
	if stride > 1 && bestK >= 0 {
		c := bestK
		for k := max(minSegment, c-stride); k <= min(n-minSegment, c+stride); k++ {
			try(k)
		}
	}
	if bestK < 0 {
		return ChangePoint{}, false
	}
	best := ChangePoint{Labels: s.Labels}
	left, right := vs[:bestK], vs[bestK:]
	best.Before, best.After = Median(left), Median(right)
	scale := math.Max(RobustScale(left, maxAbs), RobustScale(right, maxAbs))
	best.Score = (best.After - best.Before) / scale
	if math.Abs(best.Score) < threshold {
		return ChangePoint{}, false
	}
	// The shift starts at the first point of the right side that already
	// sits nearer the new level than the old one (the split can land a
	// little late when the right side opens with a ramp).
	k := bestK
	for k > minSegment && math.Abs(vs[k-1]-best.After) < math.Abs(vs[k-1]-best.Before) {
		k--
	}
	best.Time = pts[k].T
	best.Direction = Up
	if best.Score < 0 {
		best.Direction = Down
	}
	return best, true
}

// FindChangePoints runs FindChangePoint on each series, ordered by time.
func FindChangePoints(series []evidence.Series, minSegment int, threshold float64) []ChangePoint {
	var out []ChangePoint
	for _, s := range series {
		if cp, ok := FindChangePoint(s, minSegment, threshold); ok {
			out = append(out, cp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Correlation of two aligned series.
type Correlation struct {
	Pearson  float64 `json:"pearson"`
	Spearman float64 `json:"spearman"`
	N        int     `json:"n"` // aligned points
}

// Align pairs the points of a and b whose timestamps are within tolerance
// of each other, in time order.
func Align(a, b []evidence.Point, tolerance time.Duration) (xs, ys []float64) {
	j := 0
	for _, p := range a {
		for j < len(b) && b[j].T.Before(p.T.Add(-tolerance)) {
			j++
		}
		if j < len(b) && !b[j].T.After(p.T.Add(tolerance)) {
			if math.IsNaN(p.V) || math.IsNaN(b[j].V) {
				continue
			}
			xs = append(xs, p.V)
			ys = append(ys, b[j].V)
			j++
		}
	}
	return xs, ys
}

// Correlate aligns two series and returns their Pearson and Spearman
// coefficients (0 when fewer than 3 points align or a side is constant).
func Correlate(a, b evidence.Series, tolerance time.Duration) Correlation {
	xs, ys := Align(a.Points, b.Points, tolerance)
	return Correlation{Pearson: Pearson(xs, ys), Spearman: Spearman(xs, ys), N: len(xs)}
}

// Pearson returns the Pearson correlation coefficient of xs and ys.
func Pearson(xs, ys []float64) float64 {
	n := min(len(xs), len(ys))
	if n < 3 {
		return 0
	}
	var mx, my float64
	for i := 0; i < n; i++ {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx, syy float64
	for i := 0; i < n; i++ {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// Spearman returns Spearman's rank correlation (Pearson on ranks, ties
// ranked by their average).
func Spearman(xs, ys []float64) float64 {
	n := min(len(xs), len(ys))
	if n < 3 {
		return 0
	}
	return Pearson(ranks(xs[:n]), ranks(ys[:n]))
}

func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// Rate turns the samples of a counter into per-second rates between
// consecutive samples. A drop is a counter reset: the increase is then the
// new value itself (as Prometheus' rate does). The result has one point
// fewer than the input, stamped at the later sample.
func Rate(ps []evidence.Point) []evidence.Point {
	if len(ps) < 2 {
		return nil
	}
	out := make([]evidence.Point, 0, len(ps)-1)
	for i := 1; i < len(ps); i++ {
		dt := ps[i].T.Sub(ps[i-1].T).Seconds()
		if dt <= 0 {
			continue
		}
		inc := ps[i].V - ps[i-1].V
		if inc < 0 {
			inc = ps[i].V
		}
		out = append(out, evidence.Point{T: ps[i].T, V: inc / dt})
	}
	return out
}

// Increase is the total increase of a counter over the samples, resets
// accounted for.
func Increase(ps []evidence.Point) float64 {
	total := 0.0
	for i := 1; i < len(ps); i++ {
		inc := ps[i].V - ps[i-1].V
		if inc < 0 {
			inc = ps[i].V
		}
		total += inc
	}
	return total
}

// IsCounterName reports whether a metric name follows the Prometheus
// conventions of a counter (_total, _count, _sum, _bucket), except the
// well-known gauges whose names end like one (postgres_exporter's
// sessions and locks counted now, not since start).
func IsCounterName(name string) bool {
	if counterNamedGauges[name] {
		return false
	}
	for _, suf := range []string{"_total", "_count", "_sum", "_bucket"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// counterNamedGauges are gauges named like counters.
var counterNamedGauges = map[string]bool{"pg_stat_activity_count": true, "pg_locks_count": true}

// RateSeries turns every counter series into per-second rates over a
// window of at least four sample intervals (WindowRate with RateWindow), as
// Prometheus' rate() over a range of 4× the scrape interval: a counter
// sampled faster than it is scraped (repeated values) or one that moves in
// rare steps does not alternate between zero and twice its rate.
func RateSeries(ss []evidence.Series) []evidence.Series {
	out := make([]evidence.Series, 0, len(ss))
	for _, s := range ss {
		out = append(out, evidence.Series{Labels: s.Labels, Points: WindowRate(s.Points, RateWindow(s.Points))})
	}
	return out
}

// SampleInterval estimates the scrape interval of a counter: the median
// time between samples whose value changed (a series queried at a finer
// step than it was scraped repeats values), else the median spacing.
func SampleInterval(ps []evidence.Point) time.Duration {
	var changes, spacing []float64
	lastChange := -1
	for i := 1; i < len(ps); i++ {
		spacing = append(spacing, ps[i].T.Sub(ps[i-1].T).Seconds())
		if ps[i].V != ps[i-1].V {
			if lastChange >= 0 {
				changes = append(changes, ps[i].T.Sub(ps[lastChange].T).Seconds())
			}
			lastChange = i
		}
	}
	if len(spacing) == 0 {
		return 0
	}
	base := Median(spacing)
	if len(changes) >= 3 {
		if c := Median(changes); c > base {
			base = c
		}
	}
	return time.Duration(base * float64(time.Second))
}

// RateWindow is the window WindowRate uses for a series: four sample
// intervals, at most ten minutes.
func RateWindow(ps []evidence.Point) time.Duration {
	return min(4*SampleInterval(ps), 10*time.Minute)
}

// WindowRate is the per-second rate of a counter at each sample over the
// preceding window (resets accounted for); samples before the first full
// window are skipped. A window no longer than the sample spacing is Rate.
func WindowRate(ps []evidence.Point, window time.Duration) []evidence.Point {
	if len(ps) < 2 {
		return nil
	}
	if window <= 0 || ps[len(ps)-1].T.Sub(ps[0].T) < window {
		return Rate(ps)
	}
	// cum[i] is the increase from ps[0] to ps[i].
	cum := make([]float64, len(ps))
	for i := 1; i < len(ps); i++ {
		inc := ps[i].V - ps[i-1].V
		if inc < 0 {
			inc = ps[i].V
		}
		cum[i] = cum[i-1] + inc
	}
	out := make([]evidence.Point, 0, len(ps)-1)
	j := 0
	for i := 1; i < len(ps); i++ {
		for j+1 < i && ps[i].T.Sub(ps[j+1].T) >= window {
			j++
		}
		if ps[i].T.Sub(ps[j].T) < window {
			continue // no full window yet
		}
		dt := ps[i].T.Sub(ps[j].T).Seconds()
		if dt <= 0 {
			continue
		}
		out = append(out, evidence.Point{T: ps[i].T, V: (cum[i] - cum[j]) / dt})
	}
	return out
}

func l1Cost(xs []float64) float64 {
	m := Median(xs)
	c := 0.0
	for _, x := range xs {
		c += math.Abs(x - m)
	}
	return c
}
