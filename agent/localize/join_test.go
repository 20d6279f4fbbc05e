package localize

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
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

// TestSpanJoinTokensGiven: lines joined with tokens handed over (a
// miner's stored tokens of a form, or one scratch slice reused for every
// line) count the same events as lines tokenised by the join itself.
func TestSpanJoinTokensGiven(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	// The first two are different statements of as many tokens.
	lines := []string{
		"ERROR query failed: timeout span_id=00000000000000a2",
		"WARN slow query rows=40 span_id=00000000000000a2",
		"INFO handled GET /items/12 in 4 ms span_id=00000000000000a1",
		"INFO handled GET /items/13 in 5 ms span_id=00000000000000a1",
		"WARN slow query rows=41 span_id=00000000000000a1",
		"INFO handled GET /items/14 in 6 ms span_id=00000000000000a2",
		"INFO no span here",
	}
	newJoin := func() *SpanJoin {
		j := NewSpanJoin()
		j.Add(&evidence.Span{SpanID: "00000000000000a1", Service: "api", Name: "GET /items", Start: t0})
		j.Add(&evidence.Span{SpanID: "00000000000000a2", Service: "api", Name: "query", Start: t0.Add(time.Minute)})
		return j
	}
	want, scratch, mined := newJoin(), newJoin(), newJoin()
	m := analysis.NewMiner(time.Time{}, t0, t0.Add(time.Hour))
	var buf []string
	for round := 0; round < 3; round++ {
		for _, l := range lines {
			want.AddLine(l)
			buf = append(buf[:0], analysis.Tokens(l)...)
			scratch.AddLineTokens(l, buf)
			if !m.Add(t0, "api", l) {
				t.Fatalf("line %q not mined", l)
			}
			mined.AddLineTokens(l, m.Tokens())
		}
	}
	w := fmt.Sprint(want.OpEvents())
	if len(want.OpEvents()) != 5 {
		t.Fatalf("want 5 events (3 statements, 2 spans), got %s", w)
	}
	for name, j := range map[string]*SpanJoin{"reused scratch slice": scratch, "miner's tokens": mined} {
		if got := fmt.Sprint(j.OpEvents()); got != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
}

// BenchmarkSpanJoinAddLine joins lines of the localization benchmark's
// shapes (half of them carrying the id of an indexed span) with the
// miner's tokens, as the analyst does: the per-line cost of the join.
//
//	go test ./agent/localize -run '^$' -bench SpanJoinAddLine -count 3
func BenchmarkSpanJoinAddLine(b *testing.B) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	j := NewSpanJoin()
	for i := range 10000 {
		j.Add(&evidence.Span{SpanID: fmt.Sprintf("%016x", i+1), Service: fmt.Sprintf("svc-%02d", i%50), Name: "GetItem",
			Start: t0.Add(time.Duration(i) * 240 * time.Millisecond)})
	}
	lines := make([]string, 6000)
	for i := range lines {
		ids := fmt.Sprintf(" trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=%016x", 1+i%10000)
		switch i % 6 {
		case 0:
			lines[i] = fmt.Sprintf("INFO handled request GET /api/v1/items/%d status=200 duration=%dms user=%x%s", i%9973, i%250, i*7919, ids)
		case 1:
			lines[i] = fmt.Sprintf("INFO cache hit key=item:%d ratio=0.%02d", i%5003, i%100)
		case 2:
			lines[i] = fmt.Sprintf("DEBUG db query took %d ms rows=%d table=items_%d%s", i%40, i%17, i%50, ids)
		case 3:
			lines[i] = fmt.Sprintf("INFO published event order-%d to topic orders partition %d offset %d", i, i%12, i*3)
		case 4:
			lines[i] = fmt.Sprintf("WARN slow call to downstream svc-%02d took %d ms (budget 200 ms)%s", i%50, 200+i%300, ids)
		default:
			lines[i] = fmt.Sprintf("INFO session %x refreshed for client 10.0.%d.%d:%d", i*31337, i%250, i%200, 1024+i%5000)
		}
		lines[i] = t0.Add(time.Duration(i)*400*time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00") + " " + lines[i]
	}
	m := analysis.NewMiner(t0, t0.Add(30*time.Minute), t0.Add(40*time.Minute))
	toks := make([][]string, len(lines))
	for i, l := range lines {
		m.Add(t0.Add(time.Duration(i)*400*time.Millisecond), "svc", l)
		toks[i] = m.Tokens()
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, l := range lines {
			j.AddLineTokens(l, toks[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// TestSpanJoinDeferred: lines added from several goroutines while the
// spans are still being added (Defer, then SpansDone) count as when the
// spans came first, also when the kept lines reach their bound and the
// goroutines wait for the spans.
func TestSpanJoinDeferred(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var spans []evidence.Span
	for i := range 40 {
		parent := ""
		if i%4 != 0 {
			parent = fmt.Sprintf("%016x", i-i%4+1)
		}
		spans = append(spans, evidence.Span{SpanID: fmt.Sprintf("%016x", i+1), ParentSpanID: parent, Service: fmt.Sprintf("svc-%d", i%3),
			Name: fmt.Sprintf("op-%d", i%4), Start: t0.Add(time.Duration(i) * 20 * time.Second)})
	}
	var lines []string
	for i := range 300 {
		lines = append(lines, fmt.Sprintf("INFO step %d of job %d took %d ms span_id=%016x", i%3, i, i%70, 1+i%50)) // ids past 40: no span
		if i%5 == 0 {
			lines = append(lines, fmt.Sprintf("ERROR job %d failed: timeout SpanId: %016X", i, 1+i%40))
		}
	}
	want := NewSpanJoin()
	for i := range spans {
		want.Add(&spans[i])
	}
	for _, l := range lines {
		want.AddLine(l)
	}
	// The order of events made by several goroutines varies: compared
	// as sets.
	set := func(es []OpEvent) string {
		var out []string
		for _, e := range es {
			out = append(out, fmt.Sprint(e))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	w := set(want.OpEvents())
	for _, bound := range []int{4_000_000, 7} {
		old := maxDeferredLines
		maxDeferredLines = bound
		j := NewSpanJoin()
		j.Defer()
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Go(func() {
				m := analysis.NewMiner(time.Time{}, t0, t0.Add(time.Hour))
				for k := g; k < len(lines); k += 3 {
					if m.Add(t0, "svc", lines[k]) {
						j.AddLineTokens(lines[k], m.Tokens())
					}
				}
			})
		}
		if bound == 7 {
			// The goroutines wait once 7 lines are kept.
			for full := false; !full; time.Sleep(time.Millisecond) {
				j.mu.Lock()
				full = j.nPending == bound
				j.mu.Unlock()
			}
		} else {
			wg.Wait() // every line kept
			if j.nPending == 0 {
				t.Fatal("no line kept")
			}
		}
		for i := range spans {
			j.Add(&spans[i])
		}
		j.SpansDone()
		wg.Wait()
		maxDeferredLines = old
		if got := set(j.OpEvents()); got != w {
			t.Errorf("bound %d: deferred join\n got %s\nwant %s", bound, got, w)
		}
	}
}

// TestSpanTable: the span index keeps every key through its growth, finds
// none it was not given and refuses a key twice.
func TestSpanTable(t *testing.T) {
	var tb spanTable
	if _, ok := tb.get(7); ok {
		t.Fatal("empty table found a key")
	}
	keys := map[uint64]int32{}
	for i := range 5000 {
		k := uint64(i+1) << 32 // sequential ids in the high half, as "%08x%08x" makes them
		if i%2 == 1 {
			k = uint64(i)*0x9E3779B97F4A7C15 | 1
		}
		if !tb.add(k, int32(i)) {
			t.Fatalf("key %x refused", k)
		}
		keys[k] = int32(i)
	}
	for k, v := range keys {
		if got, ok := tb.get(k); !ok || got != v {
			t.Fatalf("get(%x) = %d, %v, want %d", k, got, ok, v)
		}
		if tb.add(k, -1) {
			t.Fatalf("key %x added twice", k)
		}
	}
	for i := range 5000 {
		if _, ok := tb.get(uint64(i+1)<<32 + 1); ok {
			t.Fatalf("found a key never added")
		}
	}
}
