package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestMedianMAD(t *testing.T) {
	tests := []struct {
		xs       []float64
		med, mad float64
	}{
		{[]float64{1}, 1, 0},
		{[]float64{3, 1, 2}, 2, 1},
		{[]float64{1, 2, 3, 4}, 2.5, 1},
		{[]float64{1, 1, 1, 100}, 1, 0},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); got != tt.med {
			t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.med)
		}
		if got := MAD(tt.xs); got != tt.mad {
			t.Errorf("MAD(%v) = %v, want %v", tt.xs, got, tt.mad)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// series builds a series sampled each minute from t0 with values vs.
func series(name string, vs ...float64) evidence.Series {
	s := evidence.Series{Labels: evidence.Labels{"__name__": name}}
	for i, v := range vs {
		s.Points = append(s.Points, evidence.Point{T: t0.Add(time.Duration(i) * time.Minute), V: v})
	}
	return s
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v + float64(i%3)*0.01*v // small deterministic noise
	}
	return out
}

func TestDetectAnomalies(t *testing.T) {
	baseEnd := t0.Add(10 * time.Minute)
	incEnd := t0.Add(20 * time.Minute)
	tests := []struct {
		name      string
		s         evidence.Series
		want      bool
		direction string
		start     time.Time
	}{
		{"flat", series("flat", repeat(10, 20)...), false, "", time.Time{}},
		{"spike up", series("up", append(repeat(10, 13), 50, 55, 60, 58, 57, 56, 55)...), true, Up, t0.Add(13 * time.Minute)},
		{"drop", series("down", append(repeat(100, 12), 5, 4, 3, 3, 3, 3, 3, 3)...), true, Down, t0.Add(12 * time.Minute)},
		{"zero baseline then errors", series("err", append(repeat(0, 15), 2, 3, 4, 4, 5)...), true, Up, t0.Add(15 * time.Minute)},
		{"single blip", series("blip", append(repeat(10, 15), 40, 10, 10, 10, 10)...), false, "", time.Time{}},
		{"short baseline", series("short", 1, 1, 50, 50, 50), false, "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectAnomalies([]evidence.Series{tt.s}, t0, baseEnd, baseEnd, incEnd, AnomalyOptions{})
			if (len(got) > 0) != tt.want {
				t.Fatalf("anomalies = %+v, want found=%v", got, tt.want)
			}
			if !tt.want {
				return
			}
			if got[0].Direction != tt.direction || !got[0].Start.Equal(tt.start) {
				t.Errorf("direction %s start %v, want %s %v", got[0].Direction, got[0].Start, tt.direction, tt.start)
			}
		})
	}
}

func TestFindChangePoint(t *testing.T) {
	ramp := append(repeat(1, 30), 1, 3, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9)
	tests := []struct {
		name  string
		s     evidence.Series
		want  bool
		at    time.Time
		after float64
	}{
		{"step up", series("a", append(repeat(10, 20), repeat(40, 20)...)...), true, t0.Add(20 * time.Minute), 40},
		{"step down", series("b", append(repeat(40, 25), repeat(10, 5)...)...), true, t0.Add(25 * time.Minute), 10},
		{"ramp", series("c", ramp...), true, t0.Add(32 * time.Minute), 9},
		{"noise only", series("d", 10, 11, 9, 10, 12, 10, 9, 11, 10, 10, 11, 9), false, time.Time{}, 0},
		{"too short", series("e", 1, 9), false, time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp, ok := FindChangePoint(tt.s, 3, 4)
			if ok != tt.want {
				t.Fatalf("found %v (%+v), want %v", ok, cp, tt.want)
			}
			if !ok {
				return
			}
			if !cp.Time.Equal(tt.at) {
				t.Errorf("time %v, want %v", cp.Time, tt.at)
			}
			if math.Abs(cp.After-tt.after) > 0.5 {
				t.Errorf("after %v, want about %v", cp.After, tt.after)
			}
		})
	}
}

func TestFindChangePointsOrder(t *testing.T) {
	a := series("late", append(repeat(1, 30), repeat(20, 10)...)...)
	b := series("early", append(repeat(1, 10), repeat(20, 30)...)...)
	cps := FindChangePoints([]evidence.Series{a, b}, 3, 4)
	if len(cps) != 2 || cps[0].Labels["__name__"] != "early" {
		t.Fatalf("change points = %+v, want early first", cps)
	}
}

func TestCorrelation(t *testing.T) {
	tests := []struct {
		name              string
		a, b              evidence.Series
		pearson, spearman float64
	}{
		{"identical", series("a", 1, 2, 3, 4, 5), series("b", 1, 2, 3, 4, 5), 1, 1},
		{"inverse", series("a", 1, 2, 3, 4, 5), series("b", 10, 8, 6, 4, 2), -1, -1},
		{"monotone nonlinear", series("a", 1, 2, 3, 4, 5), series("b", 1, 4, 9, 16, 100), 0.795, 1},
		{"constant", series("a", 1, 2, 3, 4, 5), series("b", 7, 7, 7, 7, 7), 0, 0},
	}
	for _, tt := range tests {
		c := Correlate(tt.a, tt.b, 30*time.Second)
		if math.Abs(c.Pearson-tt.pearson) > 0.01 || math.Abs(c.Spearman-tt.spearman) > 0.01 || c.N != 5 {
			t.Errorf("%s: %+v, want pearson %.2f spearman %.2f n 5", tt.name, c, tt.pearson, tt.spearman)
		}
	}
}

func TestAlignTolerance(t *testing.T) {
	a := series("a", 1, 2, 3).Points
	b := []evidence.Point{{T: t0.Add(10 * time.Second), V: 5}, {T: t0.Add(2*time.Minute + 10*time.Second), V: 6}}
	xs, ys := Align(a, b, 15*time.Second)
	if len(xs) != 2 || xs[0] != 1 || ys[0] != 5 || xs[1] != 3 || ys[1] != 6 {
		t.Fatalf("Align = %v %v", xs, ys)
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want []float64
		inc  float64
	}{
		{"steady", []float64{0, 60, 120}, []float64{1, 1}, 120},
		{"reset", []float64{100, 160, 30, 90}, []float64{1, 0.5, 1}, 150},
		{"single", []float64{5}, nil, 0},
	}
	for _, tt := range tests {
		s := series("x_total", tt.in...)
		got := Rate(s.Points)
		if len(got) != len(tt.want) {
			t.Fatalf("%s: Rate = %v, want %v", tt.name, got, tt.want)
		}
		for i := range got {
			if math.Abs(got[i].V-tt.want[i]) > 1e-9 {
				t.Errorf("%s: Rate[%d] = %v, want %v", tt.name, i, got[i].V, tt.want[i])
			}
		}
		if got := Increase(s.Points); got != tt.inc {
			t.Errorf("%s: Increase = %v, want %v", tt.name, got, tt.inc)
		}
	}
}

func TestIsCounterName(t *testing.T) {
	for name, want := range map[string]bool{
		"http_requests_total": true, "rpc_duration_seconds_bucket": true, "rpc_duration_seconds_sum": true,
		"process_resident_memory_bytes": false, "up": false,
		"pg_stat_activity_count": false, "pg_stat_database_xact_commit_total": true,
	} {
		if IsCounterName(name) != want {
			t.Errorf("IsCounterName(%q) != %v", name, want)
		}
	}
}

func TestWindowRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// A counter scraped every 60 s (+6/scrape, 0.1/s) queried at a 30 s
	// step repeats every value: consecutive-sample rates alternate 0 and
	// 0.2/s; over four scrape intervals it is 0.1/s throughout.
	var ps []evidence.Point
	for i := 0; i < 40; i++ {
		ps = append(ps, evidence.Point{T: t0.Add(time.Duration(i) * 30 * time.Second), V: float64(6 * (i / 2))})
	}
	tests := []struct {
		name   string
		points []evidence.Point
		window time.Duration
		want   float64
	}{
		{"repeated samples", ps, RateWindow(ps), 0.1},
		{"window shorter than spacing is Rate", ps[:3], 10 * time.Second, -1},
	}
	if w := SampleInterval(ps); w != time.Minute {
		t.Fatalf("SampleInterval = %v, want 1m", w)
	}
	for _, tc := range tests {
		got := WindowRate(tc.points, tc.window)
		if tc.want < 0 {
			if len(got) != len(Rate(tc.points)) {
				t.Errorf("%s: %v", tc.name, got)
			}
			continue
		}
		if len(got) == 0 {
			t.Fatalf("%s: no points", tc.name)
		}
		for _, p := range got {
			if math.Abs(p.V-tc.want) > 0.02 {
				t.Errorf("%s: rate %v at %v, want %v", tc.name, p.V, p.T, tc.want)
			}
		}
	}
}
