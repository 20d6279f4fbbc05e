package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestUnboundedCache reads an in-process cache's size gauge climbing on a
// workload that is OOMKilled, with the diff that removed its cap or keyed
// it by the request URL, and leaves a bounded cache and a cache server's
// metrics alone.
func TestUnboundedCache(t *testing.T) {
	at := time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC)
	gauge := func(name string, from, to float64) MetricSet {
		var pts []evidence.Point
		for i := 0; i < 12; i++ {
			pts = append(pts, evidence.Point{T: at.Add(time.Duration(i) * 15 * time.Minute), V: from + (to-from)*float64(i)/11})
		}
		return MetricSet{Name: name, Series: []evidence.Series{{Labels: evidence.Labels{"pod": "pdp-render-7c9d8b6f5-k2x4m", "job": "pdp-render"}, Points: pts}}}
	}
	oom := Finding{Kind: KindOOMKilled, Subject: "pdp-render", Time: at, Weight: 0.85}
	cases := []struct {
		name     string
		metrics  []MetricSet
		commands []evidence.CommandOutput
		found    []Finding
		want     []string // nil: no finding
	}{
		{"lru-cache cap removed and keyed by req.originalUrl (Node)",
			[]MetricSet{gauge("render_cache_entries", 300, 80000)},
			[]evidence.CommandOutput{{Run: "git diff v3.1.0 v3.2.0 -- src/cache.ts", Lines: []string{"--- a/src/cache.ts", "+++ b/src/cache.ts", "-  max: 10000,", "   ttl: 86_400_000,", "-const cacheKey = (req) => req.path;", "+const cacheKey = (req) => req.originalUrl;"}}},
			[]Finding{oom}, []string{"render_cache_entries", "300 to 80000", "max: 10000", "req.originalUrl", "3.2.0"}},
		{"Caffeine's estimated size, maximumSize removed (Java)",
			[]MetricSet{gauge("cache_size", 1000, 250000)},
			[]evidence.CommandOutput{{Run: "git show 5f2e1a9 -- PriceCache.java", Lines: []string{"-        .maximumSize(50_000)", "         .expireAfterWrite(Duration.ofHours(12))"}}},
			[]Finding{oom}, []string{"cache_size", "maximumSize"}},
		{"gauge alone, no diff",
			[]MetricSet{gauge("page_cache_items", 2000, 30000)}, nil,
			[]Finding{oom}, []string{"page_cache_items"}},
		{"a bounded cache stays flat",
			[]MetricSet{gauge("render_cache_entries", 9500, 10000)}, nil,
			[]Finding{oom}, nil},
		{"a cache server's keys are not the process's",
			[]MetricSet{gauge("redis_db_keys", 1000, 90000)}, nil,
			[]Finding{oom}, nil},
		{"no memory trouble",
			[]MetricSet{gauge("render_cache_entries", 300, 80000)}, nil,
			nil, nil},
	}
	for _, c := range cases {
		ev := &Gathered{Metrics: c.metrics, Commands: c.commands,
			Changes: []evidence.Change{
				{Timestamp: at.Add(-72 * time.Hour), Service: "pdp-render", Kind: "deploy", Revision: "3.1.0", Description: "pdp-render 3.1.0: fonts"},
				{Timestamp: at.Add(-30 * time.Hour), Service: "pdp-render", Kind: "deploy", Revision: "3.2.0", Description: "pdp-render 3.2.0: cache per URL"},
			}}
		fs := detectUnboundedCache(ev, c.found)
		if c.want == nil {
			if len(fs) > 0 {
				t.Errorf("%s: found %q, want nothing", c.name, fs[0].fact("growth"))
			}
			continue
		}
		if len(fs) != 1 {
			t.Errorf("%s: %d findings, want 1", c.name, len(fs))
			continue
		}
		f := fs[0]
		h := &Hypothesis{Kind: KindUnboundedCache, Subject: "pdp-render", Onset: at, Primary: []*Finding{&f}}
		wantDescribed(t, h, Scope{}, c.want...)
	}
}
