// Package tracegraph builds the service call graph of distributed traces:
// per service its requests, errors, latency and exclusive (self) time, and
// per caller→callee edge its calls, errors, latency and the gap between the
// caller's CLIENT span and the callee's SERVER span (network and queueing).
// Graphs of two windows (a baseline and an incident) are compared with Diff.
//
// A visit is one entry into a service: a span whose parent is absent or
// belongs to another service, with its descendants in the same service. Its
// self time is the entry span's duration minus the union of the intervals
// of its synchronous outgoing calls (the caller's CLIENT span when there is
// one, else the callee's span), so a slow callee or a slow network is not
// charged to the caller. Only whole traces give exact figures; spans whose
// parent is missing start a visit of their own.
package tracegraph

import (
	"context"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"sort"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Window is a half-open time range [Start, End).
type Window struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// nsSpan is a window in Unix nanoseconds (a zero bound: unbounded).
type nsSpan struct {
	lo, hi     int64
	noLo, noHi bool
}

func (w Window) span() nsSpan {
	s := nsSpan{noLo: w.Start.IsZero(), noHi: w.End.IsZero()}
	if !s.noLo {
		s.lo = w.Start.UnixNano()
	}
	if !s.noHi {
		s.hi = w.End.UnixNano()
	}
	return s
}

func (s nsSpan) contains(ns int64) bool { return (s.noLo || ns >= s.lo) && (s.noHi || ns < s.hi) }

// Seconds is the window's length in seconds (0 when unbounded).
func (w Window) Seconds() float64 {
	if w.Start.IsZero() || w.End.IsZero() {
		return 0
	}
	return w.End.Sub(w.Start).Seconds()
}

// Graph is the service graph of one window.
type Graph struct {
	Window   Window         `json:"window"`
	Spans    int            `json:"spans"`
	Traces   int            `json:"traces"`
	Services []ServiceStats `json:"services"` // by name
	Edges    []EdgeStats    `json:"edges"`    // by caller, then callee
}

// ServiceStats describes one service in a window. Visits are counted in
// the window where their entry span starts, spans where they start.
type ServiceStats struct {
	Service    string `json:"service"`
	Spans      int    `json:"spans"`
	ErrorSpans int    `json:"error_spans"`
	// Requests counts visits (entries into the service); Rate is requests
	// per second (0 for an unbounded window).
	Requests int     `json:"requests"`
	Rate     float64 `json:"rate_per_s"`
	// Errors counts visits with a span in error.
	Errors int `json:"errors"`
	// OwnErrors counts visits in error none of whose outgoing calls failed:
	// errors that started here rather than passed up from a callee.
	OwnErrors int `json:"own_errors"`
	// Duration is the visits' entry span duration; SelfTime their exclusive
	// time (see the package comment).
	Duration Percentiles `json:"duration"`
	SelfTime Percentiles `json:"self_time"`
}

// EdgeStats describes the calls from one service to another in a window.
type EdgeStats struct {
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	// Peer is true when the callee sent no spans: it is named by the
	// caller's CLIENT span (peer.service, server.address, net.peer.name or
	// db.system).
	Peer   bool `json:"peer,omitempty"`
	Calls  int  `json:"calls"`
	Errors int  `json:"errors"`
	// Rate is calls per second (0 for an unbounded window).
	Rate float64 `json:"rate_per_s"`
	// Latency is the call as the caller saw it: its CLIENT span, or the
	// callee's entry span when the caller has no CLIENT span.
	Latency Percentiles `json:"latency"`
	// Gap is the CLIENT span's duration minus the callee's entry span's,
	// for calls where both exist: time on the network and in queues.
	Gap Percentiles `json:"gap"`
}

// Build scans the spans of the union of windows once and returns one graph
// per window, in the order given. No window means one unbounded window.
func Build(ctx context.Context, tr evidence.Traces, windows ...Window) ([]*Graph, error) {
	if len(windows) == 0 {
		windows = []Window{{}}
	}
	b := NewBuilder(windows...)
	lo, hi := windows[0].Start, windows[0].End
	for _, w := range windows[1:] {
		if lo.IsZero() || w.Start.IsZero() || w.Start.Before(lo) {
			lo = w.Start
			if w.Start.IsZero() {
				lo = time.Time{}
			}
		}
		if hi.IsZero() || w.End.IsZero() || w.End.After(hi) {
			hi = w.End
			if w.End.IsZero() {
				hi = time.Time{}
			}
		}
	}
	if err := tr.ScanSpans(ctx, lo, hi, func(s *evidence.Span) error { b.Add(s); return nil }); err != nil {
		return nil, err
	}
	return b.Graphs(), nil
}

// Builder accumulates spans; it keeps a compact record (48 bytes) per
// span until Graphs is called.
type Builder struct {
	windows []Window
	spans   []nsSpan // the windows in nanoseconds, computed once
	svcID   map[string]int32
	svcs    []string
	// The records, in chunks (no copy as they grow), each linked to the
	// previous record of its trace; last holds each trace's latest record.
	recs    [][]rec
	traceID map[string]int32
	last    []int32
}

type rec struct {
	id, parent uint64
	start, end int64
	svc, peer  int32
	prev       int32 // the trace's previous record, -1 none
	kind       int8
	err        bool
	hasParent  bool
}

const chunkBits = 16 // records per chunk: 1<<chunkBits

func (b *Builder) rec(i int32) *rec { return &b.recs[i>>chunkBits][i&(1<<chunkBits-1)] }

// NewBuilder returns a builder for the windows (none: one unbounded).
func NewBuilder(windows ...Window) *Builder {
	if len(windows) == 0 {
		windows = []Window{{}}
	}
	spans := make([]nsSpan, len(windows))
	for i, w := range windows {
		spans[i] = w.span()
	}
	return &Builder{windows: windows, spans: spans, svcID: map[string]int32{}, traceID: map[string]int32{}}
}

func (b *Builder) intern(s string) int32 {
	if id, ok := b.svcID[s]; ok {
		return id
	}
	id := int32(len(b.svcs))
	b.svcID[s] = id
	b.svcs = append(b.svcs, s)
	return id
}

// peerKeys name the callee of a CLIENT span that has no child span.
var peerKeys = []string{"peer.service", "server.address", "net.peer.name", "db.system"}

// Add records one span. The span is not retained.
func (b *Builder) Add(s *evidence.Span) {
	r := rec{
		id:    spanKey(s.SpanID),
		start: s.Start.UnixNano(),
		end:   s.End.UnixNano(),
		svc:   b.intern(s.Service),
		peer:  -1,
		kind:  int8(s.Kind),
		err:   s.Error,
	}
	if s.ParentSpanID != "" {
		r.parent, r.hasParent = spanKey(s.ParentSpanID), true
	}
	if s.Kind == evidence.SpanKindClient {
		for _, k := range peerKeys {
			if v := s.Attributes[k]; v != "" {
				r.peer = b.intern(v)
				break
			}
		}
	}
	t, ok := b.traceID[s.TraceID]
	if !ok {
		t = int32(len(b.last))
		b.traceID[s.TraceID] = t
		b.last = append(b.last, -1)
	}
	r.prev = b.last[t]
	n := len(b.recs)
	if n == 0 || len(b.recs[n-1]) == cap(b.recs[n-1]) {
		b.recs = append(b.recs, make([]rec, 0, 1<<chunkBits))
		n++
	}
	b.last[t] = int32((n-1)<<chunkBits + len(b.recs[n-1]))
	b.recs[n-1] = append(b.recs[n-1], r)
}

func spanKey(id string) uint64 {
	if len(id) == 16 {
		var buf [8]byte
		if _, err := hex.Decode(buf[:], []byte(id)); err == nil {
			var v uint64
			for _, c := range buf {
				v = v<<8 | uint64(c)
			}
			return v
		}
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

type edgeKey struct{ caller, callee int32 }

type svcAcc struct {
	spans, errSpans, requests, errors, ownErrors int
	dur, self                                    hist
}

type edgeAcc struct {
	calls, errors int
	peer          bool
	lat, gap      hist
}

type winAcc struct {
	spans, traces int
	svcs          map[int32]*svcAcc
	edges         map[edgeKey]*edgeAcc
}

func (w *winAcc) svc(id int32) *svcAcc {
	a := w.svcs[id]
	if a == nil {
		a = &svcAcc{}
		w.svcs[id] = a
	}
	return a
}

func (w *winAcc) edge(k edgeKey) *edgeAcc {
	a := w.edges[k]
	if a == nil {
		a = &edgeAcc{}
		w.edges[k] = a
	}
	return a
}

// Graphs computes one graph per window from the spans added so far.
func (b *Builder) Graphs() []*Graph {
	acc := make([]*winAcc, len(b.windows))
	for i := range acc {
		acc[i] = &winAcc{svcs: map[int32]*svcAcc{}, edges: map[edgeKey]*edgeAcc{}}
	}
	var w walker
	var spans []rec
	for _, i := range b.last {
		// The trace's records in the order they were added.
		spans = spans[:0]
		for ; i >= 0; i = b.rec(i).prev {
			spans = append(spans, *b.rec(i))
		}
		slices.Reverse(spans)
		w.trace(b, spans, acc)
	}
	out := make([]*Graph, len(b.windows))
	for i, a := range acc {
		g := &Graph{Window: b.windows[i], Spans: a.spans, Traces: a.traces, Services: []ServiceStats{}, Edges: []EdgeStats{}}
		for id, s := range a.svcs {
			g.Services = append(g.Services, ServiceStats{
				Service: b.svcs[id], Spans: s.spans, ErrorSpans: s.errSpans,
				Requests: s.requests, Rate: rate(s.requests, b.windows[i]), Errors: s.errors, OwnErrors: s.ownErrors,
				Duration: s.dur.percentiles(), SelfTime: s.self.percentiles(),
			})
		}
		for k, e := range a.edges {
			g.Edges = append(g.Edges, EdgeStats{
				Caller: b.svcs[k.caller], Callee: b.svcs[k.callee], Peer: e.peer,
				Calls: e.calls, Errors: e.errors, Rate: rate(e.calls, b.windows[i]),
				Latency: e.lat.percentiles(), Gap: e.gap.percentiles(),
			})
		}
		sort.Slice(g.Services, func(i, j int) bool { return g.Services[i].Service < g.Services[j].Service })
		sort.Slice(g.Edges, func(i, j int) bool {
			x, y := g.Edges[i], g.Edges[j]
			return x.Caller < y.Caller || x.Caller == y.Caller && x.Callee < y.Callee
		})
		out[i] = g
	}
	return out
}

// walker holds buffers reused across traces.
type walker struct {
	parent   []int32 // index of the parent span, -1 none
	first    []int32 // children of i: kids[first[i]:first[i+1]]
	kids     []int32
	visitErr []bool // for entries: the visit has a span in error
	order    []int32
	ivs      [][2]int64
	stack    []int32
}

func (w *walker) trace(b *Builder, spans []rec, acc []*winAcc) {
	n := len(spans)
	w.parent = resize(w.parent, n)
	w.first = resize(w.first, n+1)
	w.kids = resize(w.kids, n)
	w.visitErr = resizeBool(w.visitErr, n)
	// Parents: sort indices by span id and binary-search.
	w.order = resize(w.order, n)
	for i := range w.order {
		w.order[i] = int32(i)
	}
	sort.Slice(w.order, func(i, j int) bool { return spans[w.order[i]].id < spans[w.order[j]].id })
	for i := range spans {
		w.parent[i] = -1
		if !spans[i].hasParent {
			continue
		}
		pid := spans[i].parent
		k := sort.Search(n, func(j int) bool { return spans[w.order[j]].id >= pid })
		if k < n && spans[w.order[k]].id == pid && int(w.order[k]) != i {
			w.parent[i] = w.order[k]
		}
	}
	// Children in CSR form.
	clear(w.first)
	for i := range spans {
		if p := w.parent[i]; p >= 0 {
			w.first[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		w.first[i] += w.first[i-1]
	}
	fill := append(w.order[:0], w.first[:n]...) // reuse order as cursor
	for i := range spans {
		if p := w.parent[i]; p >= 0 {
			w.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}

	// Per-span counts and the windows the trace touches.
	for wi, win := range b.spans {
		touched := false
		for i := range spans {
			if win.contains(spans[i].start) {
				touched = true
				a := acc[wi]
				a.spans++
				s := a.svc(spans[i].svc)
				s.spans++
				if spans[i].err {
					s.errSpans++
				}
			}
		}
		if touched {
			acc[wi].traces++
		}
	}

	isEntry := func(i int) bool {
		p := w.parent[i]
		return p < 0 || spans[p].svc != spans[i].svc
	}
	// Pass 1: which visits have a span in error.
	for i := range spans {
		if isEntry(i) {
			w.visitErr[i] = false
			w.visit(spans, int32(i), func(v int32) {
				if spans[v].err {
					w.visitErr[i] = true
				}
			})
		}
	}
	// Pass 2: self time, edges, own errors.
	for i := range spans {
		if !isEntry(i) {
			continue
		}
		e := &spans[i]
		w.ivs = w.ivs[:0]
		calleeFailed := false
		type call struct {
			callee      int32
			start, lat  int64
			gap         int64
			hasGap, err bool
			peer        bool
		}
		var calls []call
		w.visit(spans, int32(i), func(v int32) {
			sv := &spans[v]
			remote := false
			for _, c := range w.kids[w.first[v]:w.first[v+1]] {
				sc := &spans[c]
				if sc.svc == sv.svc {
					continue
				}
				remote = true
				failed := w.visitErr[c]
				if sv.kind == evidence.SpanKindClient || sv.kind == evidence.SpanKindProducer {
					cl := call{callee: sc.svc, start: sv.start, lat: sv.end - sv.start, err: failed || sv.err}
					if sv.kind == evidence.SpanKindClient {
						cl.gap, cl.hasGap = max(0, (sv.end-sv.start)-(sc.end-sc.start)), true
					}
					calls = append(calls, cl)
				} else {
					calls = append(calls, call{callee: sc.svc, start: sc.start, lat: sc.end - sc.start, err: failed})
					if sc.kind != evidence.SpanKindConsumer {
						w.ivs = append(w.ivs, [2]int64{sc.start, sc.end})
					}
				}
			}
			switch {
			case remote && (sv.kind == evidence.SpanKindClient || sv.kind == evidence.SpanKindProducer):
				w.ivs = append(w.ivs, [2]int64{sv.start, sv.end})
			case !remote && sv.kind == evidence.SpanKindClient && sv.peer >= 0:
				calls = append(calls, call{callee: sv.peer, start: sv.start, lat: sv.end - sv.start, err: sv.err, peer: true})
				w.ivs = append(w.ivs, [2]int64{sv.start, sv.end})
			}
		})
		for _, c := range calls {
			if c.err {
				calleeFailed = true
			}
		}
		self := (e.end - e.start) - Covered(w.ivs, e.start, e.end)
		for wi, win := range b.spans {
			a := acc[wi]
			if win.contains(e.start) {
				s := a.svc(e.svc)
				s.requests++
				s.dur.add(e.end - e.start)
				s.self.add(self)
				if w.visitErr[i] {
					s.errors++
					if !calleeFailed {
						s.ownErrors++
					}
				}
			}
			for _, c := range calls {
				if !win.contains(c.start) {
					continue
				}
				ed := a.edge(edgeKey{e.svc, c.callee})
				ed.calls++
				ed.peer = c.peer
				if c.err {
					ed.errors++
				}
				ed.lat.add(c.lat)
				if c.hasGap {
					ed.gap.add(c.gap)
				}
			}
		}
	}
}

// visit calls fn with the entry span and every descendant in its service.
func (w *walker) visit(spans []rec, entry int32, fn func(int32)) {
	w.stack = append(w.stack[:0], entry)
	for len(w.stack) > 0 {
		v := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		fn(v)
		for _, c := range w.kids[w.first[v]:w.first[v+1]] {
			if spans[c].svc == spans[v].svc {
				w.stack = append(w.stack, c)
			}
		}
	}
}

// Covered is the total length of the union of the intervals ivs (start,
// end in nanoseconds) clipped to [lo, hi]: the time a span spent waiting on
// its children. It sorts ivs in place.
func Covered(ivs [][2]int64, lo, hi int64) int64 {
	if len(ivs) == 0 {
		return 0
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i][0] < ivs[j][0] })
	var total int64
	cs, ce := int64(0), int64(0)
	open := false
	for _, iv := range ivs {
		s, e := max(iv[0], lo), min(iv[1], hi)
		if e <= s {
			continue
		}
		if open && s <= ce {
			ce = max(ce, e)
			continue
		}
		if open {
			total += ce - cs
		}
		cs, ce, open = s, e, true
	}
	if open {
		total += ce - cs
	}
	return total
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func resizeBool(s []bool, n int) []bool {
	if cap(s) < n {
		return make([]bool, n)
	}
	return s[:n]
}
