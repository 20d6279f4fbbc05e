package analyst

import (
	"strconv"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCacheKeyChurn: a hit ratio that collapses right after a change of
// the cache's client, while the cache has room, is the client's keys, not
// the cache's capacity; the per-request segment is read from the client's
// cache-miss lines (pino JSON, logfmt, a Java logger) or a key listing. A
// cache already full, or a collapse nothing explains, is not this.
func TestCacheKeyChurn(t *testing.T) {
	w := testWindow()
	onset := w.Start.Add(12 * time.Minute)
	deploy := evidence.Change{Timestamp: onset.Add(-6 * time.Minute), Service: "catalog-api", Kind: "deploy", Description: "catalog-api 5.3.0: product cache keys carry the price-list version"}
	other := evidence.Change{Timestamp: onset.Add(-20 * time.Minute), Service: "search-indexer", Kind: "deploy", Description: "search-indexer 2.1.0"}
	inst := evidence.Labels{"instance": "redis-cache-0", "namespace": "catalog"}
	step := stepAt(onset)
	metrics := func(evictBefore float64) []MetricSet {
		return []MetricSet{
			{Name: "redis_keyspace_hits_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(900, 40))}},
			{Name: "redis_keyspace_misses_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(90, 620))}},
			{Name: "redis_evicted_keys_total", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(evictBefore, evictBefore))}},
			{Name: "redis_memory_used_bytes", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(550e6, 1.4e9))}},
			{Name: "redis_memory_max_bytes", Class: MetricCache, Series: []evidence.Series{wseries(w, inst, step(1.93e9, 1.93e9))}},
			{Name: "redis_db_keys", Class: MetricCache, Series: []evidence.Series{wseries(w, evidence.Labels{"instance": "redis-cache-0", "namespace": "catalog", "db": "db0"},
				func(at time.Time) float64 { return 412000 + max(0, at.Sub(onset).Seconds())*100 })}},
		}
	}
	epochMs := func(at time.Time) string { return itoa(at.UnixMilli()) }
	logSet := func(first, last string) LogSet {
		return LogSet{Source: "catalog-api-58b7f9d6c4-7hx2d", Subject: "catalog-api", Origin: SrcLogs, Templates: []analysis.LogTemplate{
			tmplLast(first, last, 1300, onset.Add(-5*time.Minute), w.End.Add(-time.Minute))}}
	}
	pinoAt := func(at time.Time, id string) string {
		return `{"level":20,"time":` + itoa(at.UnixMilli()) + `,"pid":1,"hostname":"catalog-api-58b7f9d6c4-7hx2d","msg":"cache miss","key":"catalog:product:` + id + `:en-AU:pl` + epochMs(at) + `","loadMs":323}`
	}
	a, b := onset.Add(-4*time.Minute), w.End.Add(-time.Minute)
	pino := logSet(pinoAt(a, "91644"), pinoAt(b, "42643"))
	logfmt := logSet(a.Format(time.RFC3339)+` level=debug msg="cache miss" key=sess:user:4411:0f8fad5b-d9cb-469f-a165-70867728950e`,
		b.Format(time.RFC3339)+` level=debug msg="cache miss" key=sess:user:981:7c9e6679-7425-40de-944b-e07fc1f90ae7`)
	java := logSet(a.Format("2006-01-02 15:04:05.000")+` DEBUG [http-nio-8080-exec-3] c.s.c.ProductCache : Cache miss for key 'product:91644:v`+itoa(a.Unix())+`'`,
		b.Format("2006-01-02 15:04:05.000")+` DEBUG [http-nio-8080-exec-7] c.s.c.ProductCache : Cache miss for key 'product:102:v`+itoa(b.Unix())+`'`)
	stable := logSet(a.Format(time.RFC3339)+` level=debug msg="cache miss" key=product:91644:en-AU`, b.Format(time.RFC3339)+` level=debug msg="cache miss" key=product:102:en-AU`)
	scan := evidence.CommandOutput{Command: "kubectl exec -n catalog redis-cache-0 -- redis-cli --scan --pattern 'catalog:product:48213:*'", Run: "redis-cli --scan --pattern 'catalog:product:48213:*'",
		Lines: []string{"catalog:product:48213:en-AU", "catalog:product:48213:en-AU:pl" + itoa(w.End.Add(-50*time.Minute).UnixMilli()),
			"catalog:product:48213:en-AU:pl" + itoa(w.End.Add(-40*time.Minute).UnixMilli()), "catalog:product:48213:en-AU:pl" + itoa(w.End.Add(-3*time.Minute).UnixMilli())}}
	// memcached_exporter: the gets that hit and missed under one name,
	// told apart by their labels; the cache's client named by its own
	// log's configuration line, the question asked at its caller.
	mc := evidence.Labels{"instance": "redis-cache-0", "namespace": "catalog"}
	withLabels := func(l evidence.Labels, kv ...string) evidence.Labels {
		out := evidence.Labels{}
		for k, v := range l {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	memcached := []MetricSet{
		{Name: "memcached_commands_total", Class: MetricCache, Series: []evidence.Series{
			wseries(w, withLabels(mc, "command", "get", "status", "hit"), step(900, 40)),
			wseries(w, withLabels(mc, "command", "get", "status", "miss"), step(90, 620)),
			wseries(w, withLabels(mc, "command", "set", "status", "hit"), step(90, 620))}},
		{Name: "memcached_current_bytes", Class: MetricCache, Series: []evidence.Series{wseries(w, mc, step(400e6, 900e6))}},
		{Name: "memcached_limit_bytes", Class: MetricCache, Series: []evidence.Series{wseries(w, mc, step(2e9, 2e9))}},
	}
	configured := LogSet{Source: "catalog-api", Subject: "catalog-api", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmplLast(`{"time":"`+a.Format(time.RFC3339)+`","level":"INFO","msg":"product cache configured","backend":"memcached","servers":"redis-cache.catalog.svc.cluster.local:11211","key_fields":"id,locale,segment"}`, "", 3, onset.Add(-4*time.Minute), onset.Add(-3*time.Minute))}}
	front := LogSet{Source: "storefront", Subject: "storefront", Origin: SrcLogs, Host: true, Templates: []analysis.LogTemplate{
		tmplLast(`{"level":30,"msg":"product page rendered","ms":212}`, "", 300, w.Start, w.End)}}
	cases := []struct {
		name    string
		scope   string
		metrics []MetricSet
		logs    []LogSet
		cmds    []evidence.CommandOutput
		changes []evidence.Change
		want    []string // in the description; nil for no finding
		direct  bool     // the keys' per-request segment was read
	}{
		{name: "pino JSON miss lines carry the request's epoch ms", metrics: metrics(0), logs: []LogSet{pino}, changes: []evidence.Change{other, deploy},
			want: []string{"catalog-api", "never reused", "91% to 6%", "deploy of catalog-api", "not its capacity", "request's own time", "memory at 28% of maxmemory"}, direct: true},
		{name: "logfmt miss lines carry a UUID", metrics: metrics(0), logs: []LogSet{logfmt}, changes: []evidence.Change{deploy},
			want: []string{"per-request UUID"}, direct: true},
		{name: "Java logger's quoted key carries epoch seconds", metrics: metrics(0), logs: []LogSet{java}, changes: []evidence.Change{deploy},
			want: []string{"request's own time"}, direct: true},
		{name: "a key listing shows one entry stored again and again", metrics: metrics(0), logs: []LogSet{stable}, cmds: []evidence.CommandOutput{scan}, changes: []evidence.Change{deploy},
			want: []string{"a timestamp", "differ only in it"}, direct: true},
		{name: "stable keys: the change alone, not direct", metrics: metrics(0), logs: []LogSet{stable}, changes: []evidence.Change{deploy},
			want: []string{"compare a key stored before and after"}},
		{name: "evicting before the fall: capacity, not keys", metrics: metrics(80), logs: []LogSet{pino}, changes: []evidence.Change{deploy}},
		{name: "no change of the client and no key evidence", metrics: metrics(0), logs: []LogSet{stable}, changes: []evidence.Change{other}},
		{name: "memcached exporter's labelled gets, the client named by its log", scope: "storefront", metrics: memcached, logs: []LogSet{configured, front}, changes: []evidence.Change{other, deploy},
			want: []string{"catalog-api", "91% to 6%", "deploy of catalog-api", "memory at 20% of maxmemory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Metrics: c.metrics, Logs: c.logs, Commands: c.cmds, Changes: c.changes, Window: w, Scope: Scope{Service: orWord(c.scope, "catalog-api")}}
			fs := detectCacheKeyChurn(ev, nil)
			if (len(fs) == 1) != (c.want != nil) {
				t.Fatalf("findings %+v, want one: %v", fs, c.want != nil)
			}
			if c.want == nil {
				return
			}
			f := fs[0]
			if f.Subject != "catalog-api" || f.fact("cache") != "redis-cache" {
				t.Errorf("subject %q cache %q", f.Subject, f.fact("cache"))
			}
			if (f.Weight > 0.9) != c.direct {
				t.Errorf("weight %v, direct %v", f.Weight, c.direct)
			}
			h := &Hypothesis{Kind: KindCacheKeyChurn, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
