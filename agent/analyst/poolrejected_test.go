package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPoolRejected: a search cluster whose thread pool queue is full
// rejects work; the rejections its callers quote (Python and Java
// clients), its own log (OpenSearch) or its rejected counter show it, on
// the cluster, with the pool, the queue capacity and the callers; the
// client whose searches fill the slow log is the load's source. A 429
// from a rate limiter, or rejections of the baseline only, are not it.
func TestPoolRejected(t *testing.T) {
	w := testWindow()
	on := w.Start.Add(10 * time.Minute)
	py := `{"time":"2026-05-01T11:10:02.676Z","level":"ERROR","logger":"search_api.es","msg":"search failed","status":429,"error":"TransportError(429, 'search_phase_execution_exception', 'rejected execution of org.elasticsearch.common.util.concurrent.TimedRunnable@4e1f0b2a on QueueResizingEsThreadPoolExecutor[name = search-es-data-1/search, queue capacity = 1000, min queue capacity = 1000, max queue capacity = 1000, frame size = 2000, targeted response rate = 1s]')"}`
	java := `2026-05-01 11:10:04.221 ERROR 1 --- [nio-8080-exec-7] c.s.catalog.SearchService : search failed: ElasticsearchStatusException[Elasticsearch exception [type=es_rejected_execution_exception, reason=rejected execution of org.elasticsearch.common.util.concurrent.TimedRunnable@5b6d3c8 on QueueResizingEsThreadPoolExecutor[name = catalog-es-2/search, queue capacity = 1000, min queue capacity = 1000, max queue capacity = 1000]]]`
	os := `[2026-05-01T11:10:05,112][DEBUG][o.o.a.s.TransportSearchAction] [logs-os-1] [7781] Failed to execute fetch phase OpenSearchRejectedExecutionException[rejected execution of org.opensearch.common.util.concurrent.TimedRunnable@1f2 on QueueResizingOpenSearchThreadPoolExecutor[name = logs-os-1/search, queue capacity = 1000, min queue capacity = 1000]]`
	slowText := `[2026-05-01T11:11:49,161][WARN ][i.s.s.query              ] [search-es-data-1] [products-v41][1] took[9.1s], took_millis[9100], total_hits[1843221 hits], stats[], search_type[QUERY_THEN_FETCH], total_shards[6], source[{"size":0,"aggregations":{"by_category":{"terms":{"field":"category_path","size":5000}}}}], id[merch-insights],`
	slowJSON := `{"@timestamp":"2026-05-01T11:12:00.000Z","log.level":"WARN","elasticsearch.slowlog.took":"7.2s","elasticsearch.slowlog.source":"{\"size\":0,\"aggs\":{}}","elasticsearch.slowlog.id":"bi-exporter","elasticsearch.node.name":"es-hot-0","log.logger":"index.search.slowlog.query"}`
	limiter := `2026-05-01T11:10:02Z level=warn msg="rate limited" status=429 client=batch-7`
	rejected := func(node string) evidence.Series {
		return wseries(w, evidence.Labels{"cluster": "search-es", "name": node, "type": "search"}, func(at time.Time) float64 {
			if at.Before(on) {
				return 0
			}
			return 4.8
		})
	}
	logs := func(source, subject string, lines ...string) LogSet {
		set := LogSet{Source: source, Subject: subject, Origin: SrcLogs, HasBaseline: true}
		for _, l := range lines {
			set.Templates = append(set.Templates, tmpl(l, 120, on, w.End))
		}
		return set
	}
	cases := []struct {
		name                            string
		logs                            []LogSet
		metrics                         []MetricSet
		subject, pool, capacity, caller string
		load                            string
	}{
		{"python client, exporter counter and text slow log",
			[]LogSet{logs("search-api.log", "search-api", py), logs("search-es.log", "search-es", slowText)},
			[]MetricSet{{Name: "elasticsearch_thread_pool_rejected_count", Class: MetricErrors, Series: []evidence.Series{rejected("search-es-data-0"), rejected("search-es-data-1")}}},
			"search-es", "search", "1000", "search-api", "merch-insights"},
		{"java client alone", []LogSet{logs("catalog-api.log", "catalog-api", java)}, nil, "catalog-es", "search", "1000", "catalog-api", ""},
		{"the server's own log (OpenSearch) and a JSON slow log", []LogSet{logs("logs-os.log", "logs-os", os, slowJSON)}, nil, "logs-os", "search", "1000", "", "bi-exporter"},
		{"a rate limiter's 429", []LogSet{logs("gateway.log", "gateway", limiter)}, nil, "", "", "", "", ""},
		{"rejections of the baseline only", []LogSet{{Source: "search-api.log", Subject: "search-api", Templates: []analysis.LogTemplate{{Example: py, Count: 5, Baseline: 5, FirstSeen: w.BaselineStart}}}}, nil, "", "", "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectPoolRejected(&Gathered{Logs: c.logs, Metrics: c.metrics, Window: w}, nil)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("pool") != c.pool || f.fact("queue_capacity") != c.capacity || f.fact("callers") != c.caller || f.fact("load_source") != c.load {
				t.Errorf("%s: subject %q pool %q capacity %q callers %q load %q", c.name, f.Subject, f.fact("pool"), f.fact("queue_capacity"), f.fact("callers"), f.fact("load_source"))
			}
			h := &Hypothesis{Kind: KindPoolRejected, Subject: f.Subject, Primary: []*Finding{&f}, Onset: f.Time}
			d := poolRejected.describe(h, Scope{})
			for _, want := range []string{"thread pool of " + c.subject, "queue capacity " + c.capacity, "rejected execution"} {
				if !strings.Contains(d, want) {
					t.Errorf("%s: description lacks %q: %s", c.name, want, d)
				}
			}
			if c.load != "" && !strings.Contains(d, "comes from "+c.load) {
				t.Errorf("%s: description names no load source: %s", c.name, d)
			}
		})
	}
}
