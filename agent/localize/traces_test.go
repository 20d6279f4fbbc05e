package localize

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTraceSeries: per bin, a service visited often enough gets its self
// time p90, every visited service its error share, the entry its request
// duration, and each caller its calls per trace to each callee; the edges
// are listed once.
func TestTraceSeries(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	bins := []tracegraph.Window{{Start: t0, End: t0.Add(time.Minute)}, {Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)}}
	b := tracegraph.NewBuilder(bins...)
	for i := 0; i < 11; i++ { // 7 traces in the first minute, 4 in the second
		start := t0.Add(time.Duration(i) * 9 * time.Second)
		id := fmt.Sprintf("t%02d", i)
		b.Add(&evidence.Span{TraceID: id, SpanID: id + "a", Name: "GET /checkout", Service: "Frontend", Kind: 2, Start: start, End: start.Add(50 * time.Millisecond)})
		b.Add(&evidence.Span{TraceID: id, SpanID: id + "b", ParentSpanID: id + "a", Name: "Charge", Service: "payment", Kind: 2, Start: start.Add(time.Millisecond), End: start.Add(30 * time.Millisecond), Error: i == 0})
	}
	series, edges := TraceSeries(b.Graphs(), "frontend")
	if len(edges) != 1 || edges[0] != (Edge{Caller: "Frontend", Callee: "payment"}) {
		t.Errorf("edges %v, want Frontend → payment once", edges)
	}
	got := map[string]Series{}
	for _, s := range series {
		got[s.Service+"|"+s.Metric] = s
	}
	for _, want := range []struct {
		key    string
		signal Signal
		points int
	}{
		{"Frontend|span self time p90", SignalTraceLat, 1}, // 4 visits in the second bin: too few
		{"payment|span self time p90", SignalTraceLat, 1},
		{"payment|error spans per request (lower bound)", SignalTraceErr, 2},
		{"Frontend|request duration p90 (traces)", SignalLatency, 2}, // the entry, in any case
		{"Frontend|calls to payment per trace", SignalTraceOps, 2},
	} {
		s, ok := got[want.key]
		if !ok || s.Signal != want.signal || len(s.Points) != want.points {
			t.Errorf("%s: %+v (found %v), want signal %s with %d points", want.key, s, ok, want.signal, want.points)
		}
	}
	if p := got["payment|span self time p90"].PerBin; p != 7 {
		t.Errorf("payment's self time p90 is over %v visits a bin, want 7", p)
	}
	if _, ok := got["payment|request duration p90 (traces)"]; ok {
		t.Error("a service other than the entry has a request duration series")
	}
	for _, c := range []struct {
		name string
		want bool
	}{{"BasicErrorController.error", true}, {"GET /error", true}, {"GlobalExceptionHandler.handle", true}, {"GET /errors/recent", false}, {"Charge", false}} {
		if got := ErrorHandlerSpan(c.name); got != c.want {
			t.Errorf("ErrorHandlerSpan(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSpanTimeVolume: a span self-time p90 over a handful of sampled
// visits a bin is its slowest one or two and weighs less than the same
// rise over hundreds.
func TestSpanTimeVolume(t *testing.T) {
	self := func(svc string, perBin float64) Series {
		return Series{Service: svc, Metric: "span self time p90", Signal: SignalTraceLat, Unit: "s", Bad: Up, PerBin: perBin,
			Points: wave(0.010, 0.001, from(37, 40, 0.080))}
	}
	res := Rank(Input{Window: win, Entry: "ui", Metrics: []Series{entryLatency("ui"), self("route", 12), self("order", 300)}})
	var order, route *Candidate
	for i := range res.Candidates {
		switch c := &res.Candidates[i]; c.Subject {
		case "order":
			order = c
		case "route":
			route = c
		}
	}
	if order == nil || route == nil || route.Score >= order.Score {
		t.Fatalf("route %+v should rank below order %+v", route, order)
	}
	if !strings.Contains(route.Explanation, "a p90 over ~12 requests a bin") {
		t.Errorf("route: %q, want the visits behind its p90", route.Explanation)
	}
}
