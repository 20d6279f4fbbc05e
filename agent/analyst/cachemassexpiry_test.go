package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCacheMassExpiry: keys written together with one fixed TTL expire
// together one TTL later: the hit ratio collapses as the expired keys
// jump and the key count falls, and the write is read from its writer's
// log (a warmer's SET EX, a logfmt ttl=, a Python job's expire=) or from
// a change. A collapse without expiries (a client's keys), or with
// evictions (a full cache), is not this.
func TestCacheMassExpiry(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(20 * time.Minute)
	step := stepAt(onset)
	inst := evidence.Labels{"instance": "redis-catalog-0", "namespace": "catalog"}
	spike := func(base, peak float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if d := at.Sub(onset); d >= 0 && d < 3*time.Minute {
				return peak
			}
			return base
		}
	}
	redis := func(expired func(time.Time) float64, keys func(time.Time) float64, evict float64) []MetricSet {
		return []MetricSet{
			{Name: "redis_keyspace_hits_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(1500, 300))}},
			{Name: "redis_keyspace_misses_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(10, 1000))}},
			{Name: "redis_expired_keys_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, expired)}},
			{Name: "redis_evicted_keys_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(evict, evict))}},
			{Name: "redis_db_keys", Class: MetricCache, Series: []evidence.Series{wseries(w, evidence.Labels{"instance": "redis-catalog-0", "namespace": "catalog", "db": "db0"}, keys)}},
		}
	}
	burst := redis(spike(0.2, 2300), step(420000, 9000), 0)
	keysOnly := redis(step(0.2, 0.2), step(420000, 9000), 0)
	noExpiry := redis(step(0.2, 0.2), step(420000, 520000), 0)
	evicting := redis(spike(0.2, 2300), step(420000, 9000), 50)
	// ElastiCache's CloudWatch metrics: hits, misses, keys reclaimed
	// (expired) and items per period.
	cw := evidence.Labels{"CacheClusterId": "prices-cache-001"}
	cloudwatch := []MetricSet{
		{Name: "AWS/ElastiCache/CacheHits", Class: MetricCache, Series: []evidence.Series{wseries(w, cw, step(90000, 8000))}},
		{Name: "AWS/ElastiCache/CacheMisses", Class: MetricCache, Series: []evidence.Series{wseries(w, cw, step(600, 70000))}},
		{Name: "AWS/ElastiCache/Reclaimed", Class: MetricCache, Series: []evidence.Series{wseries(w, cw, spike(3, 150000))}},
		{Name: "AWS/ElastiCache/CurrItems", Class: MetricCache, Series: []evidence.Series{wseries(w, cw, step(300000, 20000))}},
	}
	set := func(src string, line string, at time.Time) LogSet {
		return LogSet{Source: src, Subject: src, Origin: SrcLogs, Templates: []analysis.LogTemplate{tmplLast(line, "", 1, at, at)}}
	}
	hourBefore := onset.Add(-time.Hour)
	warmer := set("cache-warmer", hourBefore.Format("2006-01-02T15:04:05.000Z")+` INFO  cache-warmer wrote 420517 keys with SET EX 3600 (ttl_jitter=0) in 118.4s`, hourBefore)
	logfmt := set("catalog-sync", hourBefore.Format(time.RFC3339)+` level=info msg="bulk load done" prefix=product: keys=88120 ttl=60m`, hourBefore)
	python := set("price-loader", onset.Add(-2*time.Hour).Format("2006-01-02 15:04:05,000")+` INFO price_loader: loaded 51,200 entries into redis expire=7200 jitter=none`, onset.Add(-2*time.Hour))
	unrelated := set("cache-warmer", onset.Add(-3*time.Hour).Format(time.RFC3339)+` level=info msg="warm done" keys=1200 ttl=600`, onset.Add(-3*time.Hour))
	change := evidence.Change{Timestamp: onset.Add(-6 * time.Hour), Service: "price-import", Kind: "config", Description: "nightly import writes every price:* key with a TTL of 6h (was 24h)"}
	cases := []struct {
		name    string
		metrics []MetricSet
		logs    []LogSet
		changes []evidence.Change
		writer  string
		want    []string // nil: no finding
		direct  bool
	}{
		{name: "a warmer's SET EX without jitter, expiries jump and keys fall", metrics: burst, logs: []LogSet{warmer},
			writer: "cache-warmer", want: []string{"cache stampede on redis-catalog", "cache-warmer wrote 420517 keys", "3600 s", "without jitter", "expired at the same time", "99% to 23%", "not a fault of the database"}, direct: true},
		{name: "logfmt ttl in minutes, the key count alone", metrics: keysOnly, logs: []LogSet{logfmt},
			writer: "catalog-sync", want: []string{"catalog-sync wrote 88120 keys", "60 m"}, direct: true},
		{name: "a Python loader's expire= two hours before", metrics: burst, logs: []LogSet{python},
			writer: "price-loader", want: []string{"price-loader wrote 51,200 keys", "7200 s", "without jitter"}, direct: true},
		{name: "a change setting one TTL for every key", metrics: burst, changes: []evidence.Change{change},
			writer: "price-import", want: []string{"price-import", "6 h"}, direct: true},
		{name: "ElastiCache's Reclaimed and CurrItems in CloudWatch", metrics: cloudwatch, logs: []LogSet{warmer},
			writer: "cache-warmer", want: []string{"cache stampede on prices-cache", "3600 s"}, direct: true},
		{name: "expiries with no write one TTL before: said so, not direct", metrics: burst, logs: []LogSet{unrelated},
			want: []string{"cache stampede on redis-catalog", "was not read"}},
		{name: "a collapse while the keys grow: the client's keys, not expiry", metrics: noExpiry, logs: []LogSet{warmer}},
		{name: "evictions at the collapse: a full cache", metrics: evicting, logs: []LogSet{warmer}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Logs: c.logs, Changes: c.changes, Window: w, Scope: Scope{Service: "catalog-api"}}
			fs := detectCacheMassExpiry(ev, nil)
			if (len(fs) == 1) != (c.want != nil) {
				t.Fatalf("findings %+v, want one: %v", fs, c.want != nil)
			}
			if c.want == nil {
				return
			}
			f := fs[0]
			if f.fact("writer") != c.writer {
				t.Errorf("writer %q, want %q", f.fact("writer"), c.writer)
			}
			if (f.Weight > 0.9) != c.direct {
				t.Errorf("weight %v, direct %v", f.Weight, c.direct)
			}
			h := &Hypothesis{Kind: KindCacheMassExpiry, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

func TestTTLOf(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"SET product:1 {...} EX 3600":        time.Hour,
		"SETEX sess:9 1800 v":                30 * time.Minute,
		`{"msg":"stored","ttl_seconds":900}`: 15 * time.Minute,
		"cache put key=a ttl=2h":             2 * time.Hour,
		"EXPIRE price:all 7200":              2 * time.Hour,
		"max-age=600":                        10 * time.Minute,
		"set with PX 120000":                 2 * time.Minute,
		"ttl_jitter=0 written":               0,
		"took 3600 ms to write":              0,
	} {
		got, _, ok := ttlOf(in)
		if !ok {
			got = 0
		}
		if got != want {
			t.Errorf("ttlOf(%q) = %v, want %v", in, got, want)
		}
	}
}
