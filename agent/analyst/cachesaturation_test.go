package analyst

import (
	"strings"
	"testing"
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
