package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestCacheSaturation(t *testing.T) {
	cases := []struct {
		facts map[string]string
		want  []string
	}{
		{map[string]string{"used_pct": "99%", "evictions": "4200 keys/s", "hit_ratio": "94% → 41%"},
			[]string{"the cache redis-sessions is at maxmemory and in an eviction storm (used memory at 99% of maxmemory, evicting ~4200 keys/s, hit ratio 94% → 41%)", "misses fall through to the backing store"}},
		{map[string]string{"evictions": "800 keys/s"}, []string{"(evicting ~800 keys/s)"}},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindCacheFull, Subject: "redis-sessions", Primary: []*Finding{{Kind: KindCacheFull, Subject: "redis-sessions", Facts: c.facts}}}
		wantDescribed(t, h, Scope{}, c.want...)
		if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "raise its maxmemory") {
			t.Errorf("recommendations %v", recs)
		}
	}
	h := &Hypothesis{Kind: KindCacheFull, Subject: "redis-sessions"}
	for _, c := range []struct {
		c    Finding
		fits bool
	}{
		{Finding{Kind: KindConfigChange, Summary: "ConfigMap redis-config changed: maxmemory 2gb → 512mb"}, true},
		{Finding{Kind: KindDeploy, Summary: "deployment catalog image catalog:3.1.0", Facts: map[string]string{"description": "cache full product payloads (TTL 24h)"}}, true},
		{Finding{Kind: KindDeploy, Summary: "deployment checkout image checkout:2.4.0"}, false},
	} {
		if got := cacheFull.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%q) = %v", c.c.Summary, got)
		}
	}
}

// The start of the climb that took a cache to maxmemory: a new writer's
// keys filling it for hours before it evicts (redis_exporter bytes, and
// memcached's bytes against limit_maxbytes), and none when it sat near
// its max all along or never reached it.
func TestCacheFillStart(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	series := func(vs ...float64) []evidence.Point {
		var ps []evidence.Point
		for i, v := range vs {
			ps = append(ps, evidence.Point{T: t0.Add(time.Duration(i) * 30 * time.Minute), V: v})
		}
		return ps
	}
	gib := float64(1 << 30)
	cases := []struct {
		name string
		used []evidence.Point
		max  float64
		want time.Time
	}{
		{"redis flat then climbing to 2GiB", series(0.6*gib, 0.61*gib, 0.6*gib, 0.9*gib, 1.3*gib, 1.7*gib, 2*gib, 2*gib), 2 * gib, t0.Add(60 * time.Minute)},
		{"memcached limit_maxbytes 64MiB", series(10<<20, 10<<20, 30<<20, 50<<20, 63<<20), 64 << 20, t0.Add(30 * time.Minute)},
		{"near max all along", series(1.96*gib, 1.97*gib, 2*gib), 2 * gib, time.Time{}},
		{"never reached max", series(0.5*gib, 1*gib, 1.5*gib), 2 * gib, time.Time{}},
		{"small bump only", series(1.7*gib, 1.8*gib, 1.95*gib), 2 * gib, time.Time{}},
	}
	for _, c := range cases {
		if got := cacheFillStart(c.used, c.max); !got.Equal(c.want) {
			t.Errorf("%s: fill start %s, want %s", c.name, got, c.want)
		}
	}
}
