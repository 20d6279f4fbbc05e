package evidencetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TraceT0 is when the first trace of TraceFixture starts.
var TraceT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Trace ids of TraceFixture.
const (
	TraceCheckoutFailed = "4bf92f3577b34da6a3ce929d0e0e4736" // t0: checkout, payment fails
	TraceCart           = "5cf92f3577b34da6a3ce929d0e0e4737" // t0+1m: cart
	TraceCheckoutOK     = "6df92f3577b34da6a3ce929d0e0e4738" // t0+2m: checkout succeeds
)

// TraceFixture is a small shop: three traces through frontend, checkout,
// payment and cart, one of them failing in payment. Load it into a backend
// and run RunTraces against it.
func TraceFixture() []evidence.Span {
	at := func(base time.Duration, ms int) time.Time {
		return TraceT0.Add(base + time.Duration(ms)*time.Millisecond)
	}
	mk := func(trace string, base time.Duration, id, parent, svc, name string, kind, from, to int) evidence.Span {
		return evidence.Span{
			TraceID: trace, SpanID: id, ParentSpanID: parent, Name: name, Service: svc,
			Pod: svc + "-7d9f8c6b5-x2x4z", Namespace: "shop", Node: "node-1", Kind: kind,
			Start: at(base, from), End: at(base, to),
		}
	}
	a := []evidence.Span{
		mk(TraceCheckoutFailed, 0, "a000000000000001", "", "frontend", "GET /checkout", evidence.SpanKindServer, 0, 300),
		mk(TraceCheckoutFailed, 0, "a000000000000002", "a000000000000001", "frontend", "checkout.PlaceOrder", evidence.SpanKindClient, 10, 290),
		mk(TraceCheckoutFailed, 0, "a000000000000003", "a000000000000002", "checkout", "PlaceOrder", evidence.SpanKindServer, 20, 280),
		mk(TraceCheckoutFailed, 0, "a000000000000004", "a000000000000003", "checkout", "payment.Charge", evidence.SpanKindClient, 30, 250),
		mk(TraceCheckoutFailed, 0, "a000000000000005", "a000000000000004", "payment", "Charge", evidence.SpanKindServer, 40, 240),
	}
	a[0].Attributes = map[string]string{"http.request.method": "GET", "http.response.status_code": "500"}
	a[0].Error = true
	a[1].Error = true
	a[2].Error = true
	a[3].Error = true
	a[4].Error, a[4].StatusMessage = true, "card declined"
	a[4].Attributes = map[string]string{"payment.provider": "acme"}
	b := []evidence.Span{
		mk(TraceCart, time.Minute, "b000000000000001", "", "frontend", "GET /cart", evidence.SpanKindServer, 0, 50),
		mk(TraceCart, time.Minute, "b000000000000002", "b000000000000001", "frontend", "cart.Get", evidence.SpanKindClient, 5, 45),
		mk(TraceCart, time.Minute, "b000000000000003", "b000000000000002", "cart", "Get", evidence.SpanKindServer, 10, 40),
	}
	c := []evidence.Span{
		mk(TraceCheckoutOK, 2*time.Minute, "c000000000000001", "", "frontend", "GET /checkout", evidence.SpanKindServer, 0, 120),
		mk(TraceCheckoutOK, 2*time.Minute, "c000000000000002", "c000000000000001", "frontend", "checkout.PlaceOrder", evidence.SpanKindClient, 10, 110),
		mk(TraceCheckoutOK, 2*time.Minute, "c000000000000003", "c000000000000002", "checkout", "PlaceOrder", evidence.SpanKindServer, 15, 105),
		mk(TraceCheckoutOK, 2*time.Minute, "c000000000000004", "c000000000000003", "checkout", "payment.Charge", evidence.SpanKindClient, 20, 100),
		mk(TraceCheckoutOK, 2*time.Minute, "c000000000000005", "c000000000000004", "payment", "Charge", evidence.SpanKindServer, 25, 95),
	}
	return slices.Concat(a, b, c)
}

// RunTraces checks that tr, loaded with TraceFixture, answers as it should.
func RunTraces(t *testing.T, tr evidence.Traces) {
	t.Helper()
	ctx := context.Background()
	fix := TraceFixture()
	t1 := TraceT0.Add(time.Hour)

	svcs, err := tr.Services(ctx, TraceT0.Add(-time.Minute), t1)
	must(t, "Services", err)
	eq(t, "Services", []string{"cart", "checkout", "frontend", "payment"}, svcs)
	svcs, err = tr.Services(ctx, TraceT0.Add(50*time.Second), TraceT0.Add(70*time.Second))
	must(t, "Services in a window", err)
	eq(t, "Services in a window", []string{"cart", "frontend"}, svcs)

	ids := func(q evidence.TraceQuery) []string {
		t.Helper()
		if q.Start.IsZero() {
			q.Start, q.End = TraceT0.Add(-time.Minute), t1
		}
		got, err := tr.FindTraces(ctx, q)
		must(t, fmt.Sprintf("FindTraces %+v", q), err)
		out := []string{}
		for _, s := range got {
			out = append(out, s.TraceID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		q    evidence.TraceQuery
		want []string
	}{
		{"by service, newest first", evidence.TraceQuery{Service: "frontend"}, []string{TraceCheckoutOK, TraceCart, TraceCheckoutFailed}},
		{"limit", evidence.TraceQuery{Service: "frontend", Limit: 1}, []string{TraceCheckoutOK}},
		{"errors", evidence.TraceQuery{ErrorOnly: true}, []string{TraceCheckoutFailed}},
		{"errors of a service", evidence.TraceQuery{Service: "cart", ErrorOnly: true}, []string{}},
		{"one span matches all", evidence.TraceQuery{Service: "checkout", MinDuration: 200 * time.Millisecond}, []string{TraceCheckoutFailed}},
		{"operation", evidence.TraceQuery{Service: "cart", Operation: "Get"}, []string{TraceCart}},
		{"operation of another service", evidence.TraceQuery{Service: "frontend", Operation: "Get"}, []string{}},
		{"unknown service", evidence.TraceQuery{Service: "nope"}, []string{}},
		{"time bounds the trace start", evidence.TraceQuery{Start: TraceT0.Add(30 * time.Second), End: TraceT0.Add(150 * time.Second)}, []string{TraceCheckoutOK, TraceCart}},
	} {
		eq(t, "FindTraces "+c.name, c.want, ids(c.q))
	}

	got, err := tr.FindTraces(ctx, evidence.TraceQuery{Start: TraceT0.Add(-time.Minute), End: t1, ErrorOnly: true})
	must(t, "FindTraces errors", err)
	if len(got) == 1 {
		eq(t, "summary", evidence.TraceSummary{
			TraceID: TraceCheckoutFailed, Root: "frontend: GET /checkout", Start: TraceT0,
			Duration: 300 * time.Millisecond, Spans: 5, Errors: 5,
			Services: []string{"checkout", "frontend", "payment"},
		}, got[0])
	}
	if _, err := tr.FindTraces(ctx, evidence.TraceQuery{Limit: -1}); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("FindTraces limit -1: %v, want an invalid error", err)
	}

	spans, err := tr.Trace(ctx, TraceCheckoutFailed)
	must(t, "Trace", err)
	want := fix[:5]
	if len(spans) != len(want) {
		t.Fatalf("Trace: %d spans, want %d", len(spans), len(want))
	}
	for i := range want {
		w, g := want[i], spans[i]
		// Backends may add attributes of their own; the fixture's must be there.
		attrs := map[string]string{}
		for k := range w.Attributes {
			attrs[k] = g.Attributes[k]
		}
		g.Attributes = attrs
		if len(w.Attributes) == 0 {
			w.Attributes, g.Attributes = nil, nil
		}
		eq(t, "Trace span "+w.SpanID, w, g)
	}
	_, err = tr.Trace(ctx, "0123456789abcdef0123456789abcdef")
	if evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("Trace of an unknown id: %v, want not_found", err)
	}
	_, err = tr.Trace(ctx, "not-a-trace-id")
	if evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("Trace of a bad id: %v, want invalid", err)
	}

	var scanned []string
	must(t, "ScanSpans", tr.ScanSpans(ctx, TraceT0, TraceT0.Add(90*time.Second), func(s *evidence.Span) error {
		scanned = append(scanned, s.SpanID)
		return nil
	}))
	slices.Sort(scanned)
	eq(t, "ScanSpans", []string{
		"a000000000000001", "a000000000000002", "a000000000000003", "a000000000000004", "a000000000000005",
		"b000000000000001", "b000000000000002", "b000000000000003",
	}, scanned)
	n := 0
	must(t, "ScanSpans stopped", tr.ScanSpans(ctx, TraceT0.Add(-time.Minute), t1, func(*evidence.Span) error {
		n++
		return evidence.ErrStop
	}))
	if n != 1 {
		t.Errorf("ScanSpans went on after ErrStop: %d calls", n)
	}
	boom := errors.New("boom")
	if err := tr.ScanSpans(ctx, time.Time{}, time.Time{}, func(*evidence.Span) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("ScanSpans callback error: %v", err)
	}

	gs, err := tracegraph.Build(ctx, tr, tracegraph.Window{Start: TraceT0.Add(-time.Minute), End: t1})
	must(t, "tracegraph.Build", err)
	var edges []string
	for _, e := range gs[0].Edges {
		edges = append(edges, fmt.Sprintf("%s→%s calls=%d errors=%d gaps=%d", e.Caller, e.Callee, e.Calls, e.Errors, e.Gap.Count))
	}
	eq(t, "service graph", []string{
		"checkout→payment calls=2 errors=1 gaps=2",
		"frontend→cart calls=1 errors=0 gaps=1",
		"frontend→checkout calls=2 errors=1 gaps=2",
	}, edges)
}
