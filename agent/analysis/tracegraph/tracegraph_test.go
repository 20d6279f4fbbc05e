package tracegraph

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// sp builds a span of trace "t" starting and ending at the given
// milliseconds after t0.
func sp(id, parent, svc string, kind int, startMs, endMs int, opts ...func(*evidence.Span)) evidence.Span {
	s := evidence.Span{
		TraceID: "0000000000000000000000000000000t", SpanID: fmt.Sprintf("%016s", id), Name: svc + "-op",
		Service: svc, Kind: kind,
		Start: t0.Add(time.Duration(startMs) * time.Millisecond),
		End:   t0.Add(time.Duration(endMs) * time.Millisecond),
	}
	if parent != "" {
		s.ParentSpanID = fmt.Sprintf("%016s", parent)
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func failed(s *evidence.Span) { s.Error = true }
func attr(k, v string) func(*evidence.Span) {
	return func(s *evidence.Span) { s.Attributes = map[string]string{k: v} }
}
func trace(id string) func(*evidence.Span) { return func(s *evidence.Span) { s.TraceID = id } }

const (
	server   = evidence.SpanKindServer
	client   = evidence.SpanKindClient
	internal = evidence.SpanKindInternal
	producer = evidence.SpanKindProducer
	consumer = evidence.SpanKindConsumer
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// near reports whether got is within the histogram's 1% of want.
func near(got, want time.Duration) bool {
	return math.Abs(float64(got-want)) <= 0.011*float64(want)+1
}

func build(spans []evidence.Span, windows ...Window) []*Graph {
	b := NewBuilder(windows...)
	for i := range spans {
		b.Add(&spans[i])
	}
	return b.Graphs()
}

func svc(g *Graph, name string) ServiceStats {
	for _, s := range g.Services {
		if s.Service == name {
			return s
		}
	}
	return ServiceStats{}
}

func edge(g *Graph, a, b string) EdgeStats {
	for _, e := range g.Edges {
		if e.Caller == a && e.Callee == b {
			return e
		}
	}
	return EdgeStats{}
}

func TestSelfTimeAndEdges(t *testing.T) {
	cases := []struct {
		name  string
		spans []evidence.Span
		self  map[string]float64 // service → self time of its one visit, ms
		edges map[[2]string][3]float64
		// edge → {calls, latency ms, gap ms (-1: no gap samples)}
	}{{
		name: "client spans, a peer and an internal span",
		spans: []evidence.Span{
			sp("1", "", "frontend", server, 0, 100),
			sp("2", "1", "frontend", client, 10, 60),
			sp("3", "2", "cart", server, 15, 55),
			sp("4", "3", "cart", internal, 20, 50),
			sp("5", "1", "frontend", client, 60, 90, attr("server.address", "redis")),
			sp("6", "1", "frontend", internal, 90, 95),
		},
		self: map[string]float64{"frontend": 20, "cart": 40},
		edges: map[[2]string][3]float64{
			{"frontend", "cart"}:  {1, 50, 10},
			{"frontend", "redis"}: {1, 30, -1},
		},
	}, {
		name: "concurrent calls count once",
		spans: []evidence.Span{
			sp("1", "", "frontend", server, 0, 100),
			sp("2", "1", "frontend", client, 10, 60),
			sp("3", "2", "cart", server, 12, 58),
			sp("4", "1", "frontend", client, 30, 80),
			sp("5", "4", "ads", server, 31, 79),
		},
		self: map[string]float64{"frontend": 30, "cart": 46, "ads": 48},
		edges: map[[2]string][3]float64{
			{"frontend", "cart"}: {1, 50, 4},
			{"frontend", "ads"}:  {1, 50, 2},
		},
	}, {
		name: "a callee without a client span is charged by its own span",
		spans: []evidence.Span{
			sp("1", "", "frontend", server, 0, 100),
			sp("2", "1", "cart", server, 20, 50),
		},
		self:  map[string]float64{"frontend": 70, "cart": 30},
		edges: map[[2]string][3]float64{{"frontend", "cart"}: {1, 30, -1}},
	}, {
		name: "asynchronous work is not waited for",
		spans: []evidence.Span{
			sp("1", "", "orders", server, 0, 100),
			sp("2", "1", "orders", producer, 10, 12),
			sp("3", "2", "mailer", consumer, 50, 300),
		},
		self:  map[string]float64{"orders": 98, "mailer": 250},
		edges: map[[2]string][3]float64{{"orders", "mailer"}: {1, 2, -1}},
	}, {
		name: "a client span without a known peer is the caller's time",
		spans: []evidence.Span{
			sp("1", "", "frontend", server, 0, 100),
			sp("2", "1", "frontend", client, 10, 60),
		},
		self:  map[string]float64{"frontend": 100},
		edges: map[[2]string][3]float64{},
	}, {
		name: "A calls B calls A: two visits of A",
		spans: []evidence.Span{
			sp("1", "", "a", server, 0, 100),
			sp("2", "1", "a", client, 10, 90),
			sp("3", "2", "b", server, 10, 90),
			sp("4", "3", "b", client, 20, 40),
			sp("5", "4", "a", server, 20, 40),
		},
		self: map[string]float64{"b": 60},
		edges: map[[2]string][3]float64{
			{"a", "b"}: {1, 80, 0},
			{"b", "a"}: {1, 20, 0},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := build(c.spans)[0]
			for name, want := range c.self {
				s := svc(g, name)
				if s.Requests != 1 || !near(s.SelfTime.P50, ms(want)) {
					t.Errorf("%s: requests %d self %v, want 1 and %vms", name, s.Requests, s.SelfTime.P50, want)
				}
			}
			if len(g.Edges) != len(c.edges) {
				t.Errorf("edges %+v, want %d", g.Edges, len(c.edges))
			}
			for k, want := range c.edges {
				e := edge(g, k[0], k[1])
				if e.Calls != int(want[0]) || !near(e.Latency.P50, ms(want[1])) {
					t.Errorf("%s→%s: calls %d latency %v, want %v", k[0], k[1], e.Calls, e.Latency.P50, want)
				}
				if want[2] < 0 && e.Gap.Count != 0 || want[2] >= 0 && (e.Gap.Count != 1 || !near(e.Gap.P50, ms(want[2]))) {
					t.Errorf("%s→%s: gap %+v, want %vms", k[0], k[1], e.Gap, want[2])
				}
			}
		})
	}
	// The A→B→A case: a has two visits (100 − 80 = 20 and 20).
	g := build(cases[5].spans)[0]
	if a := svc(g, "a"); a.Requests != 2 || !near(a.SelfTime.Max, ms(20)) {
		t.Errorf("a: %+v", a)
	}
}

func TestErrors(t *testing.T) {
	g := build([]evidence.Span{
		sp("1", "", "frontend", server, 0, 100, failed),
		sp("2", "1", "frontend", client, 10, 60, failed),
		sp("3", "2", "cart", server, 15, 55),
		sp("4", "3", "cart", client, 20, 50),
		sp("5", "4", "db", server, 21, 49, failed),
	})[0]
	for _, c := range []struct {
		name                           string
		spans, errSpans, errors, owned int
	}{
		{"frontend", 2, 2, 1, 0}, // failed because its call failed
		{"cart", 2, 0, 0, 0},     // cart swallowed the db error
		{"db", 1, 1, 1, 1},       // the error started here
	} {
		s := svc(g, c.name)
		if s.Spans != c.spans || s.ErrorSpans != c.errSpans || s.Errors != c.errors || s.OwnErrors != c.owned {
			t.Errorf("%s: %+v, want spans %d error spans %d errors %d own %d", c.name, s, c.spans, c.errSpans, c.errors, c.owned)
		}
	}
	if e := edge(g, "frontend", "cart"); e.Errors != 1 {
		t.Errorf("frontend→cart errors %d, want 1 (the client span failed)", e.Errors)
	}
	if e := edge(g, "cart", "db"); e.Errors != 1 {
		t.Errorf("cart→db errors %d, want 1", e.Errors)
	}
}

func TestWindowsAndDiff(t *testing.T) {
	var spans []evidence.Span
	// 10 traces a second apart; from the 5th on, cart's own work takes 4x.
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("%032x", i+1)
		base := i * 1000
		work := 10
		if i >= 5 {
			work = 40
		}
		spans = append(spans,
			sp("1", "", "frontend", server, base, base+work+20, trace(id)),
			sp("2", "1", "frontend", client, base+5, base+work+15, trace(id)),
			sp("3", "2", "cart", server, base+6, base+work+14, trace(id)),
		)
	}
	bw := Window{Start: t0, End: t0.Add(5 * time.Second)}
	cw := Window{Start: t0.Add(5 * time.Second), End: t0.Add(10 * time.Second)}
	gs := build(spans, bw, cw)
	if gs[0].Traces != 5 || gs[1].Traces != 5 || gs[0].Spans != 15 {
		t.Fatalf("traces %d/%d spans %d", gs[0].Traces, gs[1].Traces, gs[0].Spans)
	}
	d := Diff(gs[0], gs[1])
	var cart, front ServiceDelta
	for _, s := range d.Services {
		switch s.Service {
		case "cart":
			cart = s
		case "frontend":
			front = s
		}
	}
	if math.Abs(cart.SelfP50Ratio-48.0/18) > 0.05 {
		t.Errorf("cart self ratio %v, want %v", cart.SelfP50Ratio, 48.0/18)
	}
	if math.Abs(front.SelfP50Ratio-1) > 0.03 {
		t.Errorf("frontend self ratio %v, want 1 (its own time did not change)", front.SelfP50Ratio)
	}
	if len(d.Edges) != 1 || d.Edges[0].Rate != 1 || d.Edges[0].BaseRate != 1 || d.Edges[0].GapP50Change != 0 {
		t.Errorf("edges %+v", d.Edges)
	}

	// Build scans the union of the windows once through evidence.Traces.
	gs2, err := Build(context.Background(), sliceTraces(spans), bw, cw)
	if err != nil {
		t.Fatal(err)
	}
	if gs2[1].Spans != 15 || svc(gs2[1], "cart").Requests != 5 {
		t.Errorf("Build: %+v", gs2[1])
	}
}

func TestOrphansAndDuplicates(t *testing.T) {
	g := build([]evidence.Span{
		sp("2", "9", "cart", server, 0, 10),  // parent never seen
		sp("3", "3", "cart", internal, 1, 2), // its own parent
	})[0]
	if s := svc(g, "cart"); s.Requests != 2 || len(g.Edges) != 0 {
		t.Errorf("%+v %+v", s, g.Edges)
	}
}

func TestHistogram(t *testing.T) {
	var h hist
	for i := 1; i <= 10000; i++ {
		h.add(int64(i) * int64(time.Microsecond))
	}
	h.add(0)
	p := h.percentiles()
	for _, c := range []struct {
		got, want time.Duration
	}{{p.P50, 5 * time.Millisecond}, {p.P90, 9 * time.Millisecond}, {p.P99, 9900 * time.Microsecond}, {p.Max, 10 * time.Millisecond}} {
		if !near(c.got, c.want) {
			t.Errorf("got %v want %v (%+v)", c.got, c.want, p)
		}
	}
	if p.Count != 10001 {
		t.Errorf("count %d", p.Count)
	}
	var empty hist
	if empty.percentiles() != (Percentiles{}) {
		t.Error("empty histogram")
	}
}

// sliceTraces serves spans through evidence.Traces (ScanSpans only).
type sliceTraces []evidence.Span

func (s sliceTraces) Services(context.Context, time.Time, time.Time) ([]string, error) {
	return nil, nil
}
func (s sliceTraces) FindTraces(context.Context, evidence.TraceQuery) ([]evidence.TraceSummary, error) {
	return nil, nil
}
func (s sliceTraces) Trace(context.Context, string) ([]evidence.Span, error) { return nil, nil }
func (s sliceTraces) ScanSpans(_ context.Context, start, end time.Time, fn func(*evidence.Span) error) error {
	for i := range s {
		if !s[i].Start.Before(start) && s[i].Start.Before(end) {
			if err := fn(&s[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
