package tracegraph

import (
	"math"
	"sort"
	"time"
)

// Delta compares the graph of a window with that of a baseline window.
type Delta struct {
	Baseline Window         `json:"baseline"`
	Current  Window         `json:"current"`
	Services []ServiceDelta `json:"services"` // by name
	Edges    []EdgeDelta    `json:"edges"`    // by caller, then callee
}

// ServiceDelta is one service in both windows. Base or Current is nil when
// the service has no span in that window. Ratios are Current/Base and 0 when
// either side is missing or zero.
type ServiceDelta struct {
	Service       string        `json:"service"`
	Base          *ServiceStats `json:"base,omitempty"`
	Current       *ServiceStats `json:"current,omitempty"`
	SelfP50Ratio  float64       `json:"self_p50_ratio,omitempty"`
	SelfP90Ratio  float64       `json:"self_p90_ratio,omitempty"`
	ErrorRate     float64       `json:"error_rate"` // Errors / Requests
	BaseErrorRate float64       `json:"base_error_rate"`
}

// EdgeDelta is one edge in both windows; rates are calls per second.
type EdgeDelta struct {
	Caller          string        `json:"caller"`
	Callee          string        `json:"callee"`
	Base            *EdgeStats    `json:"base,omitempty"`
	Current         *EdgeStats    `json:"current,omitempty"`
	Rate            float64       `json:"rate"`
	BaseRate        float64       `json:"base_rate"`
	LatencyP50Ratio float64       `json:"latency_p50_ratio,omitempty"`
	LatencyP90Ratio float64       `json:"latency_p90_ratio,omitempty"`
	GapP50Change    time.Duration `json:"gap_p50_change_ns"`
	ErrorRate       float64       `json:"error_rate"` // Errors / Calls
	BaseErrorRate   float64       `json:"base_error_rate"`
}

// Diff compares cur with base.
func Diff(base, cur *Graph) *Delta {
	d := &Delta{Baseline: base.Window, Current: cur.Window, Services: []ServiceDelta{}, Edges: []EdgeDelta{}}
	svcs := map[string]*ServiceDelta{}
	sd := func(name string) *ServiceDelta {
		if x := svcs[name]; x != nil {
			return x
		}
		x := &ServiceDelta{Service: name}
		svcs[name] = x
		return x
	}
	for i := range base.Services {
		sd(base.Services[i].Service).Base = &base.Services[i]
	}
	for i := range cur.Services {
		sd(cur.Services[i].Service).Current = &cur.Services[i]
	}
	for _, x := range svcs {
		if x.Base != nil {
			x.BaseErrorRate = frac(x.Base.Errors, x.Base.Requests)
		}
		if x.Current != nil {
			x.ErrorRate = frac(x.Current.Errors, x.Current.Requests)
		}
		if x.Base != nil && x.Current != nil {
			x.SelfP50Ratio = ratio(x.Current.SelfTime.P50, x.Base.SelfTime.P50)
			x.SelfP90Ratio = ratio(x.Current.SelfTime.P90, x.Base.SelfTime.P90)
		}
		d.Services = append(d.Services, *x)
	}
	sort.Slice(d.Services, func(i, j int) bool { return d.Services[i].Service < d.Services[j].Service })

	type ek struct{ a, b string }
	edges := map[ek]*EdgeDelta{}
	ed := func(a, b string) *EdgeDelta {
		if x := edges[ek{a, b}]; x != nil {
			return x
		}
		x := &EdgeDelta{Caller: a, Callee: b}
		edges[ek{a, b}] = x
		return x
	}
	for i := range base.Edges {
		e := &base.Edges[i]
		ed(e.Caller, e.Callee).Base = e
	}
	for i := range cur.Edges {
		e := &cur.Edges[i]
		ed(e.Caller, e.Callee).Current = e
	}
	for _, x := range edges {
		if x.Base != nil {
			x.BaseRate = rate(x.Base.Calls, base.Window)
			x.BaseErrorRate = frac(x.Base.Errors, x.Base.Calls)
		}
		if x.Current != nil {
			x.Rate = rate(x.Current.Calls, cur.Window)
			x.ErrorRate = frac(x.Current.Errors, x.Current.Calls)
		}
		if x.Base != nil && x.Current != nil {
			x.LatencyP50Ratio = ratio(x.Current.Latency.P50, x.Base.Latency.P50)
			x.LatencyP90Ratio = ratio(x.Current.Latency.P90, x.Base.Latency.P90)
			if x.Base.Gap.Count > 0 && x.Current.Gap.Count > 0 {
				x.GapP50Change = x.Current.Gap.P50 - x.Base.Gap.P50
			}
		}
		d.Edges = append(d.Edges, *x)
	}
	sort.Slice(d.Edges, func(i, j int) bool {
		x, y := d.Edges[i], d.Edges[j]
		return x.Caller < y.Caller || x.Caller == y.Caller && x.Callee < y.Callee
	})
	return d
}

// Rate is calls per second over the window, 0 for an unbounded window.
func Rate(calls int, w Window) float64 { return rate(calls, w) }

func rate(n int, w Window) float64 {
	s := w.Seconds()
	if s <= 0 {
		return 0
	}
	return round3(float64(n) / s)
}

func frac(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return round3(float64(a) / float64(b))
}

func ratio(a, b time.Duration) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return round3(float64(a) / float64(b))
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
