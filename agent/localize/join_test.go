package localize

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestSpanOfLine(t *testing.T) {
	tests := []struct{ line, want string }{
		{"16:42:09.543 INFO  p.c.PriceController#46 TraceID: 6f3cbf058c2765548a39ad724905d6a1 SpanID: E2B724F0125A1B98 [query]", "e2b724f0125a1b98"},
		{"level=info msg=\"charged\" trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7", "00f067aa0ba902b7"},
		{`{"level":"info","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","msg":"ok"}`, "00f067aa0ba902b7"},
		{`{"span_id": "00f067aa0ba902b7"}`, "00f067aa0ba902b7"},
		{"2024-01-01 INFO [payments,4bf92f3577b34da6a3ce929d0e0e4736,00f067aa0ba902b7,true] 1 --- [nio-8080-exec-1] c.e.Pay : charged", "00f067aa0ba902b7"},
		{"2024-01-01 INFO [payments,4bf92f3577b34da6,00f067aa0ba902b7] charged", "00f067aa0ba902b7"},
		{"INFO span id too short span_id=00f0", ""},
		{"INFO SPAN-ID : '00F067AA0BA902B7' done", "00f067aa0ba902b7"},
		{"INFO subspan_id=00f067aa0ba902b7 is not a span id", ""},
		{"INFO span_id=00f067aa0ba902b7a too long, span_id=00f067aa0ba902b8", "00f067aa0ba902b8"},
		{"INFO [a,b,c] list without ids, spanning nothing", ""},
		{"plain line", ""},
	}
	for _, tt := range tests {
		if got := spanOfLine(tt.line); got != tt.want {
			t.Errorf("spanOfLine(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestLineEvent(t *testing.T) {
	// One statement is one event whatever its values, even glued to a
	// word by a separator the masking does not split at; its words stay.
	a := lineEvent("18:14:02.28 INFO t.s.TravelServiceImpl#366 [getTickets][Calculate distance][calculate time：175 time: Sat May 04]")
	b := lineEvent("18:14:09.71 INFO t.s.TravelServiceImpl#366 [getTickets][Calculate distance][calculate time：0 time: Sat May 04]")
	if a != b {
		t.Errorf("one statement, two events:\n%s\n%s", a, b)
	}
	if c := lineEvent("18:14:09.71 INFO t.s.TravelServiceImpl#366 [getTickets][before get basic]"); c == a || !strings.Contains(c, "basic]") {
		t.Errorf("another statement: %q", c)
	}
}

func TestSpanJoin(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	j := NewSpanJoin()
	add := func(id, parent, svc, name string, m int) {
		j.Add(&evidence.Span{TraceID: "t" + id, SpanID: id, ParentSpanID: parent, Service: svc, Name: name, Start: t0.Add(time.Duration(m)*time.Minute + time.Second)})
	}
	// Minute 0: two calls of price's handler, each querying the db;
	// minute 1: one call that logs nothing and queries nothing, and a
	// minute-1 call of a service that logged nothing at all.
	add("00000000000000a1", "", "price", "PriceController.query", 0)
	add("00000000000000b1", "00000000000000a1", "price", "SELECT price", 0)
	add("00000000000000a2", "", "price", "PriceController.query", 0)
	add("00000000000000b2", "00000000000000a2", "price", "SELECT price", 0)
	add("00000000000000a3", "", "price", "PriceController.query", 1)
	add("00000000000000a4", "", "price", "PriceController.query", 2)
	add("00000000000000c1", "", "quiet", "GET /quiet", 1)
	j.Add(&evidence.Span{SpanID: "00000000000000a1", Service: "price", Name: "dup", Start: t0}) // duplicate id: ignored
	for _, l := range []string{
		"INFO PriceController#46 TraceID: x SpanID: 00000000000000a1 [query][Query price][route 17]",
		"INFO PriceController#46 TraceID: x SpanID: 00000000000000a2 [query][Query price][route 18]",
		"ERROR PriceController#50 TraceID: x SpanID: 00000000000000a3 [query][failed]",
		"INFO PriceController#46 TraceID: x SpanID: ffffffffffffffff [query][Query price][route 19]", // span not traced
		"INFO no span here",
	} {
		j.AddLine(l)
	}
	got := map[string]OpEvent{}
	for _, e := range j.OpEvents() {
		got[e.Service+"|"+e.Operation+"|"+e.Event] = e
	}
	m0, m1, m2 := t0.Unix()/60, t0.Unix()/60+1, t0.Unix()/60+2
	db, ok := got["price|PriceController.query|SELECT price"]
	if !ok || db.Log || db.Counts[m0] != 2 || db.Calls[m0] != 2 || db.Calls[m1] != 1 || db.Calls[m2] != 1 {
		t.Errorf("child event = %+v (found %v), want 2 queries in 2 calls at minute 0, calls 1 and 1 after", db, ok)
	}
	var logEv OpEvent
	for k, e := range got {
		if e.Log && strings.Contains(k, "Query price") {
			logEv = e
		}
	}
	if logEv.Counts[m0] != 2 || len(logEv.Counts) != 1 || logEv.Error {
		t.Errorf("log event = %+v, want 2 lines at minute 0 (one template for both routes)", logEv)
	}
	// Log events count calls only in minutes the service's log covers:
	// minute 2 had a call but no line of price at all.
	if logEv.Calls[m0] != 2 || logEv.Calls[m1] != 1 || logEv.Calls[m2] != 0 {
		t.Errorf("log event calls = %v, want minute 0: 2, minute 1: 1, minute 2 not covered", logEv.Calls)
	}
	for k, e := range got {
		if e.Log && strings.Contains(k, "failed") && !e.Error {
			t.Errorf("error line %q not marked as an error path", k)
		}
		if e.Service == "quiet" {
			t.Errorf("unexpected event of a service without children or lines: %+v", e)
		}
	}
	var none *SpanJoin // no traces: joining is a no-op
	none.Add(&evidence.Span{SpanID: "00000000000000a1", Service: "a", Name: "b"})
	none.AddLine("SpanID: 00000000000000a1")
	if none.Spans() != 0 || none.OpEvents() != nil {
		t.Error("nil join indexed something")
	}
}
