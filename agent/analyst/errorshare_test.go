package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An error series' rise is a finding only when it matters against the
// series' own history: recording-rule ratios, percentages and per-second
// rates (Prometheus forms), a flicker or a handful of errors like the ones
// before is none; a real step is.
func TestErrorRiseMatters(t *testing.T) {
	end := time.Date(2026, 11, 24, 9, 40, 0, 0, time.UTC)
	w := Window{BaselineStart: end.Add(-2 * time.Hour), Start: end.Add(-time.Hour), End: end}
	// series of one point a minute over baseline and window; base gives
	// the baseline's value at minute i, inc the incident's.
	series := func(name string, base, inc func(i int) float64) evidence.Series {
		s := evidence.Series{Labels: evidence.Labels{"__name__": name, "service": "search-api", "namespace": "search"}}
		for i := 0; i < 60; i++ {
			s.Points = append(s.Points, evidence.Point{T: w.BaselineStart.Add(time.Duration(i) * time.Minute), V: base(i)})
		}
		for i := 0; i < 60; i++ {
			s.Points = append(s.Points, evidence.Point{T: w.Start.Add(time.Duration(i) * time.Minute), V: inc(i)})
		}
		return s
	}
	flicker := func(scale float64) func(int) float64 {
		return func(i int) float64 { return scale * float64((i*7)%4) } // 0, 3, 2, 1 × scale
	}
	zero := func(int) float64 { return 0 }
	step := func(from int, v float64, else_ func(int) float64) func(int) float64 {
		return func(i int) float64 {
			if i >= from {
				return v
			}
			return else_(i)
		}
	}
	blip := func(i int) float64 {
		if i == 30 {
			return 0.02
		}
		return 0
	}
	for _, tc := range []struct {
		name string
		s    evidence.Series
		want bool
	}{
		{"ratio flickering 0 to 0.03% all along", series("search_api:error_ratio:5m", flicker(0.0001), flicker(0.0001)), false},
		{"ratio from 0 to 0.03% (under the share that matters)", series("search_api:error_ratio:5m", zero, step(20, 0.0003, zero)), false},
		{"ratio from 0 to 8%", series("search_api:error_ratio:5m", zero, step(20, 0.08, zero)), true},
		{"ratio up from a flicker to 6%", series("job:http_errors:ratio_rate5m", flicker(0.0001), step(10, 0.06, flicker(0.0001))), true},
		{"percentage 0.04% against 0.03% before", series("checkout_error_percentage", flicker(0.01), step(10, 0.04, flicker(0.01))), false},
		{"percentage 0 to 12%", series("checkout_error_percentage", zero, step(10, 12, zero)), true},
		{"errors per second like before", series("http_server_errors_total", flicker(0.01), step(40, 0.05, flicker(0.01))), false},
		{"errors per second up 60-fold", series("http_server_errors_total", flicker(0.01), step(10, 2, flicker(0.01))), true},
		{"one error in an hour, none before", series("grpc_server_errors_total", zero, blip), false},
		{"errors held from none before", series("grpc_server_errors_total", zero, step(30, 0.02, zero)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, ok := seriesShift(tc.s, w)
			if !ok {
				if tc.want {
					t.Fatalf("no shift found")
				}
				return
			}
			if got := errorRiseMatters(tc.s.Labels["__name__"], tc.s, sh, w); got != tc.want {
				t.Errorf("errorRiseMatters = %v, want %v (shift %+v)", got, tc.want, sh)
			}
			// and DetectMetrics agrees
			class, unit := ClassifyMetric(tc.s.Labels["__name__"])
			fs := DetectMetrics([]MetricSet{{Name: tc.s.Labels["__name__"], Class: class, Unit: unit, Origin: SrcMetrics, Series: []evidence.Series{tc.s}}}, w)
			found := false
			for _, f := range fs {
				found = found || f.Kind == KindErrorRate
			}
			if found && !tc.want {
				t.Errorf("DetectMetrics reports an error rate rise: %+v", fs)
			}
		})
	}
	// a short series has no history to judge against
	short := evidence.Series{Labels: evidence.Labels{"__name__": "http_server_errors_total"}, Points: []evidence.Point{{T: w.Start, V: 0}, {T: w.Start.Add(time.Minute), V: 3}}}
	if !errorRiseMatters("http_server_errors_total", short, shift{peak: 3}, w) {
		t.Errorf("a series with no baseline is judged against none")
	}
}
