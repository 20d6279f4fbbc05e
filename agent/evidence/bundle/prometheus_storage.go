package bundle

import (
	"context"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/rootcause/rootcause/agent/evidence"
)

// This file serves the bundle's in-memory series to the PromQL engine as a
// storage.Queryable: the engine asks for the series that match label
// matchers over a time range and reads their samples through iterators.
// Nothing is copied: a selected series is a window (two sub-slices) of the
// loaded samples, which stay read-only after loading, so any number of
// queries run at once.

// promSeries is one series of the bundle.
type promSeries struct {
	labels evidence.Labels
	lset   labels.Labels
	idx    int       // position in promDB.series
	ts     []int64   // milliseconds, ascending, unique
	vs     []float64 // the sample values, aligned with ts
}

// promDB is every series of a bundle, indexed by metric name.
type promDB struct {
	series []*promSeries            // in labels.Compare order
	byName map[string][]*promSeries // in labels.Compare order
	names  []string                 // sorted metric names
}

var _ storage.Queryable = (*promDB)(nil)

func newPromDB(byKey map[string]*promSeries) *promDB {
	db := &promDB{byName: map[string][]*promSeries{}}
	for _, s := range byKey {
		s.sortDedupe()
		s.lset = labels.FromMap(s.labels)
		db.series = append(db.series, s)
	}
	slices.SortFunc(db.series, func(a, b *promSeries) int { return labels.Compare(a.lset, b.lset) })
	for i, s := range db.series {
		s.idx = i
		n := s.labels["__name__"]
		if _, ok := db.byName[n]; !ok {
			db.names = append(db.names, n)
		}
		db.byName[n] = append(db.byName[n], s)
	}
	slices.Sort(db.names)
	return db
}

// sortDedupe orders the samples by time; of samples with the same
// timestamp the last one read wins.
func (s *promSeries) sortDedupe() {
	if !sort.SliceIsSorted(s.ts, func(i, j int) bool { return s.ts[i] < s.ts[j] }) {
		idx := make([]int, len(s.ts))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return s.ts[idx[a]] < s.ts[idx[b]] })
		ts, vs := make([]int64, len(idx)), make([]float64, len(idx))
		for i, j := range idx {
			ts[i], vs[i] = s.ts[j], s.vs[j]
		}
		s.ts, s.vs = ts, vs
	}
	w := 0
	for i := range s.ts {
		if w > 0 && s.ts[w-1] == s.ts[i] {
			s.vs[w-1] = s.vs[i]
			continue
		}
		s.ts[w], s.vs[w] = s.ts[i], s.vs[i]
		w++
	}
	s.ts, s.vs = slices.Clip(s.ts[:w]), slices.Clip(s.vs[:w])
}

// window returns the samples with mint <= t <= maxt.
func (s *promSeries) window(mint, maxt int64) ([]int64, []float64) {
	i, _ := slices.BinarySearch(s.ts, mint)
	j, found := slices.BinarySearch(s.ts, maxt)
	if found {
		j++
	}
	if i >= j {
		return nil, nil
	}
	return s.ts[i:j], s.vs[i:j]
}

// selectSeries returns the series matching every matcher, in db order.
func (db *promDB) selectSeries(ms []*labels.Matcher) []*promSeries {
	var nameMs, other []*labels.Matcher
	for _, m := range ms {
		if m.Name == labels.MetricName {
			nameMs = append(nameMs, m)
		} else {
			other = append(other, m)
		}
	}
	var cands []*promSeries
	switch {
	case len(nameMs) == 0:
		cands = db.series
	case nameMs[0].Type == labels.MatchEqual:
		cands = db.byName[nameMs[0].Value]
	default:
		groups := 0
		for _, n := range db.names {
			if matchesAll(nameMs, n) {
				cands = append(cands, db.byName[n]...)
				groups++
			}
		}
		if groups > 1 {
			slices.SortFunc(cands, func(a, b *promSeries) int { return a.idx - b.idx })
		}
	}
	var out []*promSeries
	for _, s := range cands {
		if !matchesAll(nameMs, s.labels[labels.MetricName]) {
			continue
		}
		ok := true
		for _, m := range other {
			if !m.Matches(s.labels[m.Name]) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func matchesAll(ms []*labels.Matcher, v string) bool {
	for _, m := range ms {
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// Querier returns a querier of the samples in [mint, maxt].
func (db *promDB) Querier(mint, maxt int64) (storage.Querier, error) {
	return &promQuerier{db: db, mint: mint, maxt: maxt}, nil
}

type promQuerier struct {
	db         *promDB
	mint, maxt int64
}

// Select returns the matching series that have samples in the hinted
// range (the querier's range without hints), in labels order.
func (q *promQuerier) Select(ctx context.Context, _ bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	if err := ctx.Err(); err != nil {
		return storage.ErrSeriesSet(err)
	}
	mint, maxt := q.mint, q.maxt
	if hints != nil {
		mint, maxt = hints.Start, hints.End
	}
	var out []storage.Series
	for _, s := range q.db.selectSeries(ms) {
		if ts, vs := s.window(mint, maxt); len(ts) > 0 {
			out = append(out, &promSeriesWindow{lset: s.lset, ts: ts, vs: vs})
		}
	}
	return &promSeriesSet{series: out, i: -1}
}

// LabelValues returns the sorted values of label name among the series
// that match.
func (q *promQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, s := range q.db.selectSeries(ms) {
		if v := s.labels[name]; v != "" {
			seen[v] = true
		}
	}
	vals := make([]string, 0, len(seen))
	for v := range seen {
		vals = append(vals, v)
	}
	slices.Sort(vals)
	vals, _ = hints.ApplyLimit(vals)
	return vals, nil, ctx.Err()
}

// LabelNames returns the sorted label names of the series that match.
func (q *promQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	seen := map[string]bool{}
	for _, s := range q.db.selectSeries(ms) {
		for k := range s.labels {
			seen[k] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	names, _ = hints.ApplyLimit(names)
	return names, nil, ctx.Err()
}

func (*promQuerier) Close() error { return nil }

type promSeriesSet struct {
	series []storage.Series
	i      int
}

func (s *promSeriesSet) Next() bool {
	s.i++
	return s.i < len(s.series)
}

func (s *promSeriesSet) At() storage.Series              { return s.series[s.i] }
func (*promSeriesSet) Err() error                        { return nil }
func (*promSeriesSet) Warnings() annotations.Annotations { return nil }
func (w *promSeriesWindow) Labels() labels.Labels        { return w.lset }
func (it *sampleIterator) At() (int64, float64)          { return it.ts[it.i], it.vs[it.i] }
func (it *sampleIterator) AtT() int64                    { return it.ts[it.i] }
func (*sampleIterator) AtST() int64                      { return 0 }
func (*sampleIterator) Err() error                       { return nil }

// promSeriesWindow is a series' samples within a query's range.
type promSeriesWindow struct {
	lset labels.Labels
	ts   []int64
	vs   []float64
}

func (w *promSeriesWindow) Iterator(it chunkenc.Iterator) chunkenc.Iterator {
	if si, ok := it.(*sampleIterator); ok {
		si.ts, si.vs, si.i = w.ts, w.vs, -1
		return si
	}
	return &sampleIterator{ts: w.ts, vs: w.vs, i: -1}
}

// sampleIterator is a chunkenc.Iterator over float samples.
type sampleIterator struct {
	ts []int64
	vs []float64
	i  int // current sample; -1 before the first Next or Seek
}

var _ chunkenc.Iterator = (*sampleIterator)(nil)

func (it *sampleIterator) Next() chunkenc.ValueType {
	if it.i+1 >= len(it.ts) {
		it.i = len(it.ts)
		return chunkenc.ValNone
	}
	it.i++
	return chunkenc.ValFloat
}

// millis is a Prometheus timestamp in milliseconds. Seek takes one, as
// chunkenc.Iterator requires; naming it keeps vet from taking Seek for
// io.Seeker's.
type millis = int64

func (it *sampleIterator) Seek(t millis) chunkenc.ValueType {
	if it.i < 0 {
		it.i = 0
	}
	if it.i >= len(it.ts) {
		return chunkenc.ValNone
	}
	if it.ts[it.i] < t {
		j, _ := slices.BinarySearch(it.ts[it.i:], t)
		it.i += j
		if it.i >= len(it.ts) {
			return chunkenc.ValNone
		}
	}
	return chunkenc.ValFloat
}

func (*sampleIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	panic("bundle series hold float samples only")
}

func (*sampleIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	panic("bundle series hold float samples only")
}
