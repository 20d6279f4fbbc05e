package analyst

import (
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// A cache at maxmemory in an eviction storm: keys are evicted before they
// are read again, misses fall through to the backing store and its callers
// slow down.
var cacheFull = &mechanism{
	kind:       KindCacheFull,
	class:      classCause,
	label:      "cache at maxmemory (eviction storm, hit ratio falling)",
	metrics:    DetectCacheSaturation,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return matchLine(cacheChangeRE, changeText(c)) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the cache %s is at maxmemory and in an eviction storm", s)
		var parts []string
		if u := h.fact("used_pct"); u != "" {
			parts = append(parts, "used memory at "+u+" of maxmemory")
		}
		if e := h.fact("evictions"); e != "" {
			parts = append(parts, "evicting ~"+e)
		}
		if r := h.fact("hit_ratio"); r != "" {
			parts = append(parts, "hit ratio "+r)
		}
		if len(parts) > 0 {
			d += " (" + strings.Join(parts, ", ") + ")"
		}
		d += ": keys are evicted before they are read again, so cache misses fall through to the backing store and slow the reads of its callers"
		if t := h.Trigger; t != nil && t.Subject != "" && t.Subject != s && h.fact("filling_since") != "" {
			// A new writer filled the cache: its keys push out those
			// of every other user under an LRU policy.
			d += fmt.Sprintf("; it began filling at %s, after a change of %s, and the new keys now evict the entries the cache's other users rely on (dedupe markers, locks, sessions)", h.fact("filling_since"), t.Subject)
		}
		if db := h.dbLoad; db != nil {
			d += fmt.Sprintf("; the database load rises with them (%s)", db.Summary)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Relieve the cache %s now: raise its maxmemory (or scale it out), or revert the change that made its entries larger or more numerous", s))
		r.add(finding.PriorityMedium, "Find what fills the cache (key sizes and counts by prefix: redis-cli --bigkeys / MEMORY USAGE) and set TTLs or smaller payloads; protect the database from miss storms (request coalescing)")
		r.add(finding.PriorityLow, "Alert on cache memory above 90% of maxmemory, on evicted keys per second and on the hit ratio")
	},
}

// cacheRole sorts a cache metric into what it measures.
func cacheRole(name string) string {
	n := strings.ToLower(name)
	switch {
	// CloudWatch's: a hit rate and a memory use already in percent.
	case strings.HasSuffix(n, "cachehitrate"):
		return "hit_rate"
	case strings.HasSuffix(n, "databasememoryusagepercentage"):
		return "used_pct"
	case strings.HasSuffix(n, "bytesusedforcache"):
		return "used"
	case strings.HasSuffix(n, "curritems"):
		return "keys"
	// Keys that expired (redis_exporter's expired_keys, memcached's
	// reclaimed items, ElastiCache's Reclaimed): a mass expiry
	// (cachemassexpiry.go).
	case strings.Contains(n, "expired_keys") || strings.HasSuffix(n, "reclaimed") || strings.Contains(n, "items_reclaimed"):
		return "expired"
	case strings.Contains(n, "memory_max_bytes") || strings.Contains(n, "limit_maxbytes") || strings.HasSuffix(n, "_limit_bytes"):
		return "max"
	case strings.Contains(n, "memory_used_bytes") || strings.Contains(n, "current_bytes"):
		return "used"
	case strings.Contains(n, "evict"):
		return "evictions"
	case strings.Contains(n, "db_keys") || strings.Contains(n, "current_items"):
		return "keys"
	case strings.Contains(n, "hits"):
		return "hits"
	case strings.Contains(n, "misses"):
		return "misses"
	}
	return ""
}

// cacheSeriesRole is the role of one series of a cache metric: memcached
// exporter's memcached_commands_total counts the gets that hit and missed
// under one name, told apart by its command and status labels.
func cacheSeriesRole(name string, role string, l evidence.Labels) string {
	if role != "" || !strings.HasSuffix(strings.ToLower(name), "_commands_total") || !strings.EqualFold(l["command"], "get") {
		return role
	}
	switch strings.ToLower(l["status"]) {
	case "hit":
		return "hits"
	case "miss":
		return "misses"
	}
	return role
}

// perSecond turns counts per sampling period (CloudWatch's Evictions: the
// keys evicted in each minute) into rates per second, the period read
// from the spacing of the points.
func perSecond(ps []evidence.Point) []evidence.Point {
	sorted := slices.Clone(ps)
	slices.SortFunc(sorted, func(a, b evidence.Point) int { return a.T.Compare(b.T) })
	var gaps []float64
	for i := 1; i < len(sorted); i++ {
		if d := sorted[i].T.Sub(sorted[i-1].T).Seconds(); d > 0 {
			gaps = append(gaps, d)
		}
	}
	if len(gaps) == 0 {
		return sorted
	}
	sort.Float64s(gaps)
	period := gaps[len(gaps)/2]
	for i := range sorted {
		sorted[i].V /= period
	}
	return sorted
}

// DetectCacheSaturation finds a cache (Redis, memcached) at its maxmemory
// evicting keys, with its hit ratio falling: the misses fall through to
// the backing store (a database), whose load rises, and reads slow down.
// Evictions must rise over the baseline, together with memory at ≥95% of
// maxmemory or a hit ratio falling by at least 15 points.
func DetectCacheSaturation(sets []MetricSet, w Window) []Finding {
	type inst struct {
		ns     string
		series map[string][]evidence.Point
	}
	insts := map[string]*inst{}
	var order []string
	for _, ms := range sets {
		if ms.Class != MetricCache {
			continue
		}
		role := cacheRole(ms.Name)
		for _, s := range ms.Series {
			name := firstLabel(s.Labels, "service", "cache", "redis", "instance", "addr", "pod", "CacheClusterId", "NodeName", "ClusterName")
			// An ElastiCache node (catalog-cache-0001-001) speaks for
			// its replication group.
			if id := s.Labels["CacheClusterId"]; id != "" && id == name {
				name = nodeSuffixRE.ReplaceAllString(id, "")
			}
			name = workloadOfName(DependencyName(name))
			if i := strings.IndexByte(name, '.'); i > 0 && net.ParseIP(name) == nil {
				name = name[:i]
			}
			if name == "" {
				name = "cache"
			}
			in := insts[name]
			if in == nil {
				in = &inst{ns: s.Labels["namespace"], series: map[string][]evidence.Point{}}
				insts[name] = in
				order = append(order, name)
			}
			r := cacheSeriesRole(ms.Name, role, s.Labels)
			ps := s.Points
			if r == "evictions" && strings.HasPrefix(strings.ToLower(ms.Name), "aws/") {
				ps = perSecond(ps)
			}
			in.series[r] = append(in.series[r], ps...)
		}
	}
	median := func(ps []evidence.Point, from, to time.Time) (float64, bool) {
		var vs []float64
		for _, p := range ps {
			if !p.T.Before(from) && p.T.Before(to) {
				vs = append(vs, p.V)
			}
		}
		if len(vs) == 0 {
			return 0, false
		}
		sort.Float64s(vs)
		return vs[len(vs)/2], true
	}
	var out []Finding
	for _, name := range order {
		in := insts[name]
		ev := in.series["evictions"]
		baseEv, _ := median(ev, w.BaselineStart, w.Start)
		peakEv, evStart := 0.0, time.Time{}
		for _, p := range inWindow(ev, w.Start, w.End) {
			if p.V > peakEv {
				peakEv = p.V
			}
			if evStart.IsZero() && p.V > math.Max(1, 3*baseEv) {
				evStart = p.T
			}
		}
		if peakEv <= 0 || evStart.IsZero() {
			continue
		}
		// Memory against maxmemory.
		usedPct := 0.0
		for _, p := range inWindow(in.series["used_pct"], w.Start, w.End) {
			usedPct = math.Max(usedPct, p.V/100)
		}
		var fillStart time.Time
		if maxPs := in.series["max"]; len(maxPs) > 0 {
			if mx, ok := lastPoint(maxPs); ok && mx.V > 0 {
				for _, p := range inWindow(in.series["used"], w.Start, w.End) {
					usedPct = math.Max(usedPct, p.V/mx.V)
				}
				fillStart = cacheFillStart(in.series["used"], mx.V)
			}
		}
		// Hit ratio, baseline against its lowest in the window.
		ratioAt := func(from, to time.Time, worst bool) (float64, bool) {
			hits, misses := in.series["hits"], in.series["misses"]
			if len(hits) == 0 || len(misses) == 0 {
				// A hit rate in percent (CloudWatch's CacheHitRate).
				var rs []float64
				for _, p := range in.series["hit_rate"] {
					if !p.T.Before(from) && p.T.Before(to) {
						rs = append(rs, p.V/100)
					}
				}
				if len(rs) == 0 {
					return 0, false
				}
				sort.Float64s(rs)
				if worst {
					return rs[min(len(rs)-1, len(rs)/10)], true
				}
				return rs[len(rs)/2], true
			}
			mByT := map[time.Time]float64{}
			for _, p := range misses {
				mByT[p.T] += p.V
			}
			var rs []float64
			for _, p := range hits {
				if p.T.Before(from) || !p.T.Before(to) {
					continue
				}
				if m, ok := mByT[p.T]; ok && p.V+m > 0 {
					rs = append(rs, p.V/(p.V+m))
				}
			}
			if len(rs) == 0 {
				return 0, false
			}
			sort.Float64s(rs)
			if worst {
				return rs[min(len(rs)-1, len(rs)/10)], true
			}
			return rs[len(rs)/2], true
		}
		hrBase, okB := ratioAt(w.BaselineStart, w.Start, false)
		hrLow, okL := ratioAt(w.Start, w.End.Add(time.Second), true)
		hitFell := okB && okL && hrBase-hrLow >= 0.15
		atMax := usedPct >= 0.95
		if !atMax && !hitFell {
			continue
		}
		// A cache at maxmemory evicting cold keys while its hit ratio
		// holds does what it is built for: no storm.
		if okB && okL && hrBase-hrLow < 0.05 {
			continue
		}
		f := Finding{Kind: KindCacheFull, Subject: name, Object: "cache " + name, Namespace: in.ns, Time: evStart,
			Severity: SevCritical, Weight: 0.85, Source: SrcMetrics}
		if atMax && hitFell {
			f.Weight = 0.95
		}
		var parts []string
		if atMax {
			parts = append(parts, fmt.Sprintf("memory at %.0f%% of maxmemory", 100*usedPct))
			f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: used memory reached %.0f%% of its maxmemory", name, 100*usedPct))
			f.setFact("used_pct", fmt.Sprintf("%.0f%%", 100*usedPct))
		}
		if !fillStart.IsZero() && fillStart.Before(evStart) {
			f.setFact("filling_since", ts(fillStart))
			f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: used memory climbed steadily from %s until it reached maxmemory", name, ts(fillStart)))
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: evictions rose from %s to %s keys/s (from %s)", name, formatValue(baseEv, ""), formatValue(peakEv, ""), ts(evStart)))
		f.setFact("evictions", fmt.Sprintf("%.0f keys/s", peakEv))
		parts = append(parts, fmt.Sprintf("evicting ~%.0f keys/s", peakEv))
		if okB && okL {
			how := "keyspace hits/(hits+misses)"
			if len(in.series["hits"]) == 0 || len(in.series["misses"]) == 0 {
				how = "its reported hit rate"
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: hit ratio fell from %.0f%% to %.0f%% (%s)", name, 100*hrBase, 100*hrLow, how))
			f.setFact("hit_ratio", fmt.Sprintf("%.0f%% → %.0f%%", 100*hrBase, 100*hrLow))
			if hitFell {
				parts = append(parts, fmt.Sprintf("hit ratio %.0f%% → %.0f%%", 100*hrBase, 100*hrLow))
			}
		}
		f.Summary = fmt.Sprintf("cache %s saturated: %s", name, strings.Join(parts, ", "))
		out = append(out, f)
	}
	return out
}

// cacheFillStart is when a cache's used memory began the climb that took
// it to maxmemory: the last low point before it first reached 95% of max,
// once the climb from there covers at least a quarter of max. Zero when
// the memory did not climb (it was near max all along).
func cacheFillStart(used []evidence.Point, max float64) time.Time {
	ps := slices.Clone(used)
	slices.SortFunc(ps, func(a, b evidence.Point) int { return a.T.Compare(b.T) })
	full := -1
	for i, p := range ps {
		if p.V >= 0.95*max {
			full = i
			break
		}
	}
	if full <= 0 {
		return time.Time{}
	}
	low := full
	for i := full - 1; i >= 0; i-- {
		if ps[i].V <= ps[low].V {
			low = i
		}
	}
	if ps[full].V-ps[low].V < 0.25*max {
		return time.Time{}
	}
	// The climb starts at the last point still within 2% of max of the low.
	start := low
	for i := low + 1; i < full; i++ {
		if ps[i].V-ps[low].V <= 0.02*max {
			start = i
		}
	}
	return ps[start].T
}
