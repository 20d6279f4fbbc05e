package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindPoolRejected: a search or data server (Elasticsearch, OpenSearch)
// runs each kind of work in a fixed thread pool with a bounded queue;
// when the pool is busy and the queue is full it rejects new work at once
// (es_rejected_execution_exception, HTTP 429), and its callers turn the
// rejections into their own errors (a 500 from the API, a 5xx at the
// edge). The root is the pool's saturation — and whoever sends the heavy
// work that fills it (the slow log's X-Opaque-Id names the client) — not
// the callers that report it, nor a throttling limit of theirs.
const KindPoolRejected Kind = "pool_rejected"

var poolRejected = &mechanism{
	kind:   KindPoolRejected,
	class:  classCause,
	label:  "a server's thread pool queue is full and rejects work",
	detect: detectPoolRejected,
	// The callers' rejected calls (throttling, errors) and the server's own
	// saturation (its CPU, its queue) are this cause's consequences.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		if slices.Contains(h.top().Related, f.Subject) && f.Kind != KindPoolRejected {
			return true
		}
		text := strings.ToLower(f.Summary + " " + strings.Join(f.Evidence, " ") + " " + f.fact("line"))
		return strings.Contains(text, strings.ToLower(h.Subject)) || matchLine(poolRejectedRE, text)
	}),
	// The client that sends the heavy work, changed near the onset.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		src := h.fact("load_source")
		return src != "" && strings.EqualFold(c.Subject, src)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		pool := orWord(h.fact("pool"), "search")
		d := fmt.Sprintf("the %s thread pool of %s (%s) is saturated: every thread busy and its queue full (queue capacity %s), so it rejects new requests at once (rejected execution, es_rejected_execution_exception, HTTP 429)",
			pool, h.Subject, orWord(h.fact("engine"), "the search cluster"), orWord(h.fact("queue_capacity"), "reached"))
		d += h.clause(" on ", "nodes") + h.clause("; ", "metric")
		if c := h.fact("callers"); c != "" {
			verb := "turns"
			if strings.Contains(c, ",") {
				verb = "turn"
			}
			d += fmt.Sprintf("; %s %s the rejections into errors: %s", c, verb, quote(ReadableLine(h.fact("line")), 200))
		}
		if src := h.fact("load_source"); src != "" {
			d += fmt.Sprintf("; the heavy work that fills the pool comes from %s (%s of the %s slow searches in the window, X-Opaque-Id %s): %s", src, h.fact("load_share"), h.fact("slow_total"), src, quote(ReadableLine(h.fact("slow_line")), 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		pool := orWord(h.fact("pool"), "search")
		if src := h.fact("load_source"); src != "" {
			r.rollback()
			r.high("Stop or throttle %s's heavy queries on %s (roll back or slow its refresh, cache its aggregations, or point it at a replica cluster) so the %s pool drains", src, h.Subject, pool)
		} else {
			r.high("Find what fills the %s pool of %s (the slow log and _tasks show the heavy queries and their X-Opaque-Id) and stop or throttle it", pool, h.Subject)
		}
		r.med("Give the callers of %s a bounded retry with backoff on 429 rejections, and add data nodes or replicas if the normal load alone fills the pool; do not just raise the queue size (it only adds latency)", h.Subject)
		r.low("Alert on the %s pool's rejected count and queue of %s, and tag every client's searches with X-Opaque-Id", pool, h.Subject)
	},
}

var (
	// A rejection as the server logs it or a client quotes it.
	poolRejectedRE = regexp.MustCompile(`(?i)es_rejected_execution_exception|(?:OpenSearch|Es)RejectedExecutionException|rejected execution of \S+ on \w*(?:Es|OpenSearch)\w*ThreadPoolExecutor`)
	// "…ThreadPoolExecutor[name = search-es-data-1/search, queue capacity = 1000".
	poolNameRE     = regexp.MustCompile(`ThreadPoolExecutor\[name = ([\w.-]+)/([\w.\[\]-]+)`)
	poolCapacityRE = regexp.MustCompile(`queue capacity = (\d+)`)
	// A thread pool's rejected-work counter: elasticsearch_exporter's
	// elasticsearch_thread_pool_rejected_count, and the OpenSearch
	// exporters' thread pool series with a "rejected" type.
	poolRejectedMetricRE = regexp.MustCompile(`(?i)^(elasticsearch|opensearch|es)_thread_?pool_rejected|^(elasticsearch|opensearch)_thread_?pool_(threads|tasks)`)
	// A search slow log line (Elasticsearch/OpenSearch, text or JSON) and
	// the client it names (X-Opaque-Id).
	searchSlowRE = regexp.MustCompile(`(?i)took\[[^\]]+\].*source\[|slowlog\.(?:search|query)|index\.search\.slowlog|"elasticsearch\.slowlog\.took"`)
	opaqueIDRE   = regexp.MustCompile(`(?i)\bid\[([^\],]+)\]|"(?:elasticsearch\.slowlog\.id|x[_-]opaque[_-]id|opaque_id)"\s*:\s*"([^"]+)"`)
)

// detectPoolRejected finds a thread pool rejecting work: the rejections
// the server or its callers log, its rejected counter rising, and the
// client whose slow searches fill it.
func detectPoolRejected(ev *Gathered, found []Finding) []Finding {
	w := ev.Window
	type hit struct {
		cluster, pool, capacity, line, engine string
		nodes                                 []string
		callers                               []string
		onset                                 time.Time
		metric                                string
		count                                 int
	}
	var h *hit
	get := func() *hit {
		if h == nil {
			h = &hit{}
		}
		return h
	}
	// The rejections in the logs: the server's own and its callers'.
	for set, t := range incidentTemplates(ev) {
		if !matchLine(poolRejectedRE, t.Example) {
			continue
		}
		x := get()
		x.count += t.Incident
		if x.line == "" {
			x.line = t.Example
		}
		if m := findSubmatch(poolNameRE, t.Example); m != nil {
			if !slices.Contains(x.nodes, m[1]) {
				x.nodes = append(x.nodes, m[1])
			}
			x.pool = orWord(x.pool, m[2])
		}
		if m := findSubmatch(poolCapacityRE, t.Example); m != nil {
			x.capacity = orWord(x.capacity, m[1])
		}
		if strings.Contains(strings.ToLower(t.Example), "opensearch") {
			x.engine = "OpenSearch"
		}
		at := firstOf(t.FirstIncident, t.FirstSeen)
		if t.Baseline == 0 || !t.Onset.IsZero() {
			at = firstOf(t.Onset, at)
		}
		if x.onset.IsZero() || at.Before(x.onset) {
			x.onset = at
		}
		// A caller quotes the rejection; the server's own log is the
		// server's.
		if !searchServerSource(set) {
			c := orWord(set.Subject, subjectOfSource(set.Source))
			if c != "" && !slices.Contains(x.callers, c) {
				x.callers = append(x.callers, c)
			}
		}
	}
	// The rejected counter of the pool, per node.
	for _, ms := range ev.Metrics {
		if !matchLine(poolRejectedMetricRE, ms.Name) {
			continue
		}
		for _, s := range ms.Series {
			if strings.Contains(ms.Name, "_threads") || strings.Contains(ms.Name, "_tasks") {
				if !strings.EqualFold(s.Labels["type"], "rejected") {
					continue
				}
			}
			var before []float64
			peak, peakAt := 0.0, time.Time{}
			for _, p := range s.Points {
				switch {
				case p.T.Before(w.Start):
					before = append(before, p.V)
				case !p.T.After(w.End) && p.V > peak:
					peak, peakAt = p.V, p.T
				}
			}
			base := medianOf(before)
			if peak < 0.1 || peak < 5*base+0.05 {
				continue
			}
			x := get()
			x.cluster = orWord(x.cluster, orWord(s.Labels["cluster"], s.Labels["cluster_name"]))
			pool := orWord(s.Labels["type"], orWord(s.Labels["name"], s.Labels["threadpool"]))
			if strings.EqualFold(pool, "rejected") {
				pool = orWord(s.Labels["name"], s.Labels["threadpool"])
			}
			if x.pool == "" && pool != "" {
				x.pool = pool
			}
			if node := orWord(s.Labels["node"], s.Labels["name"]); node != "" && node != pool && !slices.Contains(x.nodes, node) {
				x.nodes = append(x.nodes, node)
			}
			for _, p := range s.Points {
				if !p.T.Before(w.BaselineStart) && p.V >= max(0.05, 3*base) {
					if x.onset.IsZero() || p.T.Before(x.onset) {
						x.onset = p.T
					}
					break
				}
			}
			if x.metric == "" || !strings.Contains(x.metric, "rejected") {
				x.metric = fmt.Sprintf("%s of %s rose from %s to %s (peak at %s)", ms.Name, orWord(s.Labels["name"], x.cluster), formatValue(base, "/s"), formatValue(peak, "/s"), ts(peakAt))
			}
		}
	}
	if h == nil || h.onset.IsZero() || h.onset.Before(w.BaselineStart) || h.count == 0 && h.metric == "" {
		return nil
	}
	cluster := h.cluster
	if cluster == "" {
		// The server's own log source, else the nodes' workload.
		for i := range ev.Logs {
			if searchServerSource(&ev.Logs[i]) {
				cluster = orWord(ev.Logs[i].Subject, subjectOfSource(ev.Logs[i].Source))
				break
			}
		}
	}
	if cluster == "" && len(h.nodes) > 0 {
		cluster = workloadOfName(h.nodes[0])
	}
	if cluster == "" {
		return nil
	}
	f := Finding{Kind: KindPoolRejected, Subject: cluster, Object: "cluster " + cluster, Time: h.onset, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
	if h.metric != "" && h.count > 0 {
		f.Weight = 0.9
	}
	f.setFact("engine", orWord(h.engine, "Elasticsearch"))
	f.setFact("pool", h.pool)
	f.setFact("queue_capacity", h.capacity)
	f.setFact("line", h.line)
	f.setFact("metric", h.metric)
	slices.Sort(h.nodes)
	f.setFact("nodes", strings.Join(h.nodes, ", "))
	f.setFact("callers", strings.Join(h.callers, ", "))
	if h.metric != "" {
		f.Evidence = append(f.Evidence, h.metric)
	}
	if h.line != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d rejections logged in the window from %s: %s", h.count, ts(h.onset), quote(ReadableLine(h.line), 240)))
	}
	f.Related = append(f.Related, h.callers...)
	// Who sends the heavy work: the client most slow searches name.
	src, n, total, line := slowSearchClient(ev)
	if src != "" && 2*n > total {
		f.setFact("load_source", src)
		f.setFact("load_share", strconv.Itoa(n))
		f.setFact("slow_total", strconv.Itoa(total))
		f.setFact("slow_line", line)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d of the %d slow searches in %s's slow log come from %s (X-Opaque-Id): %s", n, total, cluster, src, quote(ReadableLine(line), 240)))
		f.Related = append(f.Related, src)
	}
	f.Summary = fmt.Sprintf("%s pool of %s rejects work (queue full%s)", orWord(h.pool, "a thread"), cluster, capacityWord(h.capacity))
	return []Finding{f}
}

func capacityWord(c string) string {
	if c == "" {
		return ""
	}
	return ", capacity " + c
}

// searchServerSource reports whether a log set is a search server's own
// log (its lines carry the server's [node] and logger).
func searchServerSource(set *LogSet) bool {
	for _, t := range set.Templates {
		if matchLine(esServerLineRE, t.Example) {
			return true
		}
	}
	return false
}

var esServerLineRE = regexp.MustCompile(`^\[\d{4}-\d\d-\d\dT[\d:,.]+\]\[(?:INFO|WARN|DEBUG|ERROR|TRACE) ?\]\[[\w.]+ *\]|"type"\s*:\s*"(?:server|index_search_slowlog)"|"elasticsearch\.node\.name"`)

// slowSearchClient counts the slow searches of the window by the client
// they name; it returns the top client, its count, the total and one of
// its lines.
func slowSearchClient(ev *Gathered) (top string, n, total int, line string) {
	counts := map[string]int{}
	lines := map[string]string{}
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if t.Incident == 0 || !matchLine(searchSlowRE, t.Example) {
				continue
			}
			total += t.Incident
			m := findSubmatch(opaqueIDRE, t.Example)
			if m == nil {
				continue
			}
			id := strings.TrimSpace(orWord(m[1], m[2]))
			if id == "" {
				continue
			}
			counts[id] += t.Incident
			if lines[id] == "" {
				lines[id] = t.Example
			}
		}
	}
	for _, id := range byCount(counts) {
		return id, counts[id], total, lines[id]
	}
	return "", 0, total, ""
}
