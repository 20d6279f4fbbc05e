package bundle

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// traces returns the bundle's Traces source (traces/*.jsonl, contract 6.1),
// or nil when the bundle has none. Nothing is read until it is used.
func (b *Bundle) traces() evidence.Traces {
	files := traceFiles(b.FS)
	if len(files) == 0 {
		return nil
	}
	return &bundleTraces{fsys: b.FS, files: files}
}

// bundleTraces reads traces/*.jsonl. ScanSpans streams the files every time
// (bounded memory); Services, FindTraces and Trace use a compact index built
// by one scan on first use: per trace its spans' service, operation, start,
// duration and error flag, and the offsets of the lines that hold its
// spans, so that Trace reads only those lines.
type bundleTraces struct {
	fsys  fs.FS
	files []string

	mu  sync.Mutex
	idx *traceIndex
}

var _ evidence.Traces = (*bundleTraces)(nil)

type traceIndex struct {
	services []string // interned names; index = id
	ops      []string
	traces   []*traceEntry
	byID     map[string]*traceEntry
}

type traceEntry struct {
	id     string
	start  int64 // unix nanos, earliest span start
	end    int64 // latest span end
	spans  []spanRef
	errors int
	lines  []lineRef
}

type spanRef struct {
	start, dur int64
	svc, op    int32
	err        bool
	root       bool
}

type lineRef struct {
	file int32
	off  int64
}

// ScanSpans implements evidence.Traces.
func (t *bundleTraces) ScanSpans(ctx context.Context, start, end time.Time, fn func(*evidence.Span) error) error {
	err := t.decodeLines(ctx, func(tl *traceLine) error {
		for _, s := range tl.spans {
			if !inWindow(s.Start, start, end) {
				continue
			}
			if err := fn(s); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, evidence.ErrStop) {
		return nil
	}
	return err
}

func inWindow(t, start, end time.Time) bool {
	return (start.IsZero() || !t.Before(start)) && (end.IsZero() || t.Before(end))
}

// index builds the index on first use. A failed or cancelled build is not
// kept, so the next call tries again.
func (t *bundleTraces) index(ctx context.Context) (*traceIndex, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idx != nil {
		return t.idx, nil
	}
	ix := &traceIndex{byID: map[string]*traceEntry{}}
	svcIDs := map[string]int32{}
	opIDs := map[string]int32{}
	intern := func(m map[string]int32, list *[]string, s string) int32 {
		if id, ok := m[s]; ok {
			return id
		}
		id := int32(len(*list))
		m[s] = id
		*list = append(*list, s)
		return id
	}
	err := t.decodeLines(ctx, func(tl *traceLine) error {
		for _, s := range tl.spans {
			e := ix.byID[s.TraceID]
			if e == nil {
				e = &traceEntry{id: s.TraceID, start: s.Start.UnixNano(), end: s.End.UnixNano()}
				ix.byID[s.TraceID] = e
				ix.traces = append(ix.traces, e)
			}
			st, en := s.Start.UnixNano(), s.End.UnixNano()
			e.start, e.end = min(e.start, st), max(e.end, en)
			e.spans = append(e.spans, spanRef{
				start: st, dur: en - st,
				svc:  intern(svcIDs, &ix.services, s.Service),
				op:   intern(opIDs, &ix.ops, s.Name),
				err:  s.Error,
				root: s.ParentSpanID == "",
			})
			if s.Error {
				e.errors++
			}
			ref := lineRef{file: int32(tl.file), off: tl.off}
			if !slices.Contains(e.lines, ref) {
				e.lines = append(e.lines, ref)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range ix.traces {
		e.spans = slices.Clip(e.spans)
		sort.Slice(e.lines, func(i, j int) bool {
			a, b := e.lines[i], e.lines[j]
			return a.file < b.file || a.file == b.file && a.off < b.off
		})
	}
	// Newest first.
	sort.Slice(ix.traces, func(i, j int) bool {
		a, b := ix.traces[i], ix.traces[j]
		return a.start > b.start || a.start == b.start && a.id < b.id
	})
	t.idx = ix
	return ix, nil
}

// Services implements evidence.Traces.
func (t *bundleTraces) Services(ctx context.Context, start, end time.Time) ([]string, error) {
	ix, err := t.index(ctx)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, len(ix.services))
	for _, e := range ix.traces {
		for _, s := range e.spans {
			if inWindow(time.Unix(0, s.start), start, end) {
				seen[s.svc] = true
			}
		}
	}
	var out []string
	for i, ok := range seen {
		if ok && ix.services[i] != "" {
			out = append(out, ix.services[i])
		}
	}
	sort.Strings(out)
	return out, nil
}

// FindTraces implements evidence.Traces.
func (t *bundleTraces) FindTraces(ctx context.Context, q evidence.TraceQuery) ([]evidence.TraceSummary, error) {
	if err := q.Check("traces"); err != nil {
		return nil, err
	}
	ix, err := t.index(ctx)
	if err != nil {
		return nil, err
	}
	svc, op := int32(-1), int32(-1)
	if q.Service != "" {
		if svc = int32(slices.Index(ix.services, q.Service)); svc < 0 {
			return []evidence.TraceSummary{}, nil
		}
	}
	if q.Operation != "" {
		if op = int32(slices.Index(ix.ops, q.Operation)); op < 0 {
			return []evidence.TraceSummary{}, nil
		}
	}
	out := []evidence.TraceSummary{}
	for _, e := range ix.traces {
		if !inWindow(time.Unix(0, e.start), q.Start, q.End) {
			continue
		}
		if !slices.ContainsFunc(e.spans, func(s spanRef) bool {
			return (svc < 0 || s.svc == svc) && (op < 0 || s.op == op) &&
				s.dur >= int64(q.MinDuration) && (!q.ErrorOnly || s.err)
		}) {
			continue
		}
		out = append(out, ix.summary(e))
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func (ix *traceIndex) summary(e *traceEntry) evidence.TraceSummary {
	sum := evidence.TraceSummary{
		TraceID:  e.id,
		Start:    time.Unix(0, e.start).UTC(),
		Duration: time.Duration(e.end - e.start),
		Spans:    len(e.spans),
		Errors:   e.errors,
	}
	var root *spanRef
	seen := map[int32]bool{}
	for i := range e.spans {
		s := &e.spans[i]
		if s.root && (root == nil || s.start < root.start) {
			root = s
		}
		if !seen[s.svc] && ix.services[s.svc] != "" {
			seen[s.svc] = true
			sum.Services = append(sum.Services, ix.services[s.svc])
		}
	}
	sort.Strings(sum.Services)
	if root == nil {
		// No root span: the trace's start was not captured.
		sum.Truncated = true
		for i := range e.spans {
			if root == nil || e.spans[i].start < root.start {
				root = &e.spans[i]
			}
		}
	}
	sum.Root = ix.services[root.svc] + ": " + ix.ops[root.op]
	return sum
}

// Trace implements evidence.Traces.
func (t *bundleTraces) Trace(ctx context.Context, traceID string) ([]evidence.Span, error) {
	id, ok := otlpjson.ID(strings.TrimSpace(traceID), 16)
	if !ok {
		return nil, evidence.Errorf("traces", evidence.CodeInvalid, "trace id %q is not 32 hex digits", traceID)
	}
	ix, err := t.index(ctx)
	if err != nil {
		return nil, err
	}
	e := ix.byID[id]
	if e == nil {
		return nil, evidence.Errorf("traces", evidence.CodeNotFound, "no trace %s in the bundle", id)
	}
	var out []evidence.Span
	for _, l := range e.lines {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := t.readLineAt(int(l.file), l.off, func(s *evidence.Span) error {
			if s.TraceID == id {
				out = append(out, *s)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	evidence.SortSpans(out)
	return out, nil
}
