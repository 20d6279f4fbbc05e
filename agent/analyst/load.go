package analyst

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// DetectJobOverlap finds CronJobs with several runs active at once (from
// kube_cronjob_status_active, or kube_job_status_active summed over the
// Jobs of one CronJob). Overlapping runs are not a failure on their own: a
// Job being active is normal. They matter when they share a limited
// resource (a connection pool), which the reasoner joins them to.
func DetectJobOverlap(sets []MetricSet, w Window) []Finding {
	type agg struct {
		ns     string
		byTime map[time.Time]float64
	}
	crons := map[string]*agg{}
	var order []string
	get := func(name, ns string) *agg {
		a := crons[name]
		if a == nil {
			a = &agg{ns: ns, byTime: map[time.Time]float64{}}
			crons[name] = a
			order = append(order, name)
		}
		return a
	}
	for _, ms := range sets {
		n := strings.ToLower(ms.Name)
		var fromJobs bool
		switch {
		case strings.HasPrefix(n, "kube_cronjob_status_active"):
		case strings.HasPrefix(n, "kube_job_status_active"):
			fromJobs = true
		default:
			continue
		}
		for _, s := range ms.Series {
			name := s.Labels["cronjob"]
			if fromJobs {
				name = s.Labels["owner_name"]
				if name == "" {
					name = workloadOfName(s.Labels["job_name"])
				}
			}
			if name == "" {
				continue
			}
			a := get(name, s.Labels["namespace"])
			for _, p := range s.Points {
				if fromJobs {
					a.byTime[p.T] += p.V
				} else {
					a.byTime[p.T] = math.Max(a.byTime[p.T], p.V)
				}
			}
		}
	}
	var out []Finding
	for _, name := range order {
		a := crons[name]
		var tss []time.Time
		for t := range a.byTime {
			tss = append(tss, t)
		}
		sort.Slice(tss, func(i, j int) bool { return tss[i].Before(tss[j]) })
		peak, base := 0.0, 0.0
		var first, peakAt time.Time
		for _, t := range tss {
			v := a.byTime[t]
			if t.Before(w.Start) && !t.Before(w.BaselineStart) {
				base = math.Max(base, v)
			}
			if t.Before(w.BaselineStart) || !w.End.IsZero() && t.After(w.End) {
				continue
			}
			if v >= 2 && first.IsZero() {
				first = t
			}
			if v > peak {
				peak, peakAt = v, t
			}
		}
		if peak < 2 || first.IsZero() {
			continue
		}
		f := Finding{Kind: KindJobOverlap, Subject: name, Object: "cronjob " + a.ns + "/" + name, Namespace: a.ns, Time: first,
			Severity: SevWarning, Weight: 0.6, Source: SrcMetrics}
		f.Summary = fmt.Sprintf("CronJob %s runs overlap: up to %.0f Jobs active at once (2 or more from %s)", name, peak, hm(first))
		f.Evidence = []string{fmt.Sprintf("kube-state-metrics: CronJob %s (namespace %s) had %.0f runs active at once at %s (at most %.0f in the baseline); 2 or more active from %s", name, orDash(a.ns), peak, ts(peakAt), base, ts(first))}
		f.setFact("cronjob", name)
		f.setFact("active_peak", fmt.Sprintf("%.0f", peak))
		out = append(out, f)
	}
	return out
}

var loadMetricRE = regexp.MustCompile(`(?i)connections|conns\b|_conns_|sessions|clients|websocket|_ws_|requests_total|http_requests|requests_count|inflight|in_flight|active_requests|messages_consumed|consumed_total|records_consumed|throughput|rps\b`)

// A database's own connection count rises when its queries slow down: a
// consequence, not the load that caused it.
var notLoadRE = regexp.MustCompile(`(?i)error|fail|5xx|latency|duration|seconds|pool|idle|in_?use|sql_stats|waiting|max|limit|refused|rejected|dropped|bytes|database|^pg_|^mysql_|^mongodb_`)

// IsLoadMetric reports whether a metric measures how much work a service
// is given: requests, active connections or sessions, messages consumed.
func IsLoadMetric(name string) bool {
	return loadMetricRE.MatchString(name) && !notLoadRE.MatchString(name)
}

// DetectLoadSurge finds services whose load rose several times over the
// baseline: the sum over a service's series (pods, handlers, status codes)
// of a load metric at its window peak against the baseline median. A load
// surge is not a failure; it explains one (an OOM kill, a saturation)
// that follows it on the same service.
func DetectLoadSurge(sets []MetricSet, w Window) []Finding {
	var out []Finding
	seen := map[string]int{}
	for _, ms := range sets {
		if ms.Class != MetricRequests && ms.Class != MetricSaturation || !IsLoadMetric(ms.Name) {
			continue
		}
		sums := map[string]map[time.Time]float64{}
		nss := map[string]string{}
		var subjects []string
		for _, s := range ms.Series {
			subj := SubjectOfLabels(s.Labels)
			if subj == "" {
				continue
			}
			if sums[subj] == nil {
				sums[subj] = map[time.Time]float64{}
				subjects = append(subjects, subj)
			}
			nss[subj] = s.Labels["namespace"]
			for _, p := range s.Points {
				sums[subj][p.T] += p.V
			}
		}
		for _, subj := range subjects {
			byT := sums[subj]
			var base []float64
			var tss []time.Time
			for t, v := range byT {
				if t.Before(w.Start) && !t.Before(w.BaselineStart) {
					base = append(base, v)
				}
				if !t.Before(w.Start) && (w.End.IsZero() || !t.After(w.End)) {
					tss = append(tss, t)
				}
			}
			if len(base) < 3 {
				continue
			}
			sort.Float64s(base)
			med := base[len(base)/2]
			if med <= 0 {
				continue
			}
			sort.Slice(tss, func(i, j int) bool { return tss[i].Before(tss[j]) })
			peak := 0.0
			var first, peakAt time.Time
			for _, t := range tss {
				v := byT[t]
				if v >= 2*med && first.IsZero() {
					first = t
				}
				if v > peak {
					peak, peakAt = v, t
				}
			}
			ratio := peak / med
			if ratio < 2.5 || first.IsZero() {
				continue
			}
			f := Finding{Kind: KindLoadSurge, Subject: subj, Object: ms.Origin + " " + ms.Name, Namespace: nss[subj], Time: first,
				Severity: SevInfo, Weight: math.Min(1, 0.5+ratio/20), Source: ms.Origin}
			f.Summary = fmt.Sprintf("load on %s rose ~%.1f× (%s from %s to %s in total)", subj, ratio, ms.Name, formatValue(med, ms.Unit), formatValue(peak, ms.Unit))
			f.Evidence = []string{fmt.Sprintf("%s of %s (summed over its series) rose from a baseline median of %s to %s (~%.1f×; above 2× from %s, peak at %s)", ms.Name, subj, formatValue(med, ms.Unit), formatValue(peak, ms.Unit), ratio, ts(first), ts(peakAt))}
			f.setFact("metric", ms.Name)
			f.setFact("ratio", fmt.Sprintf("%.1f", ratio))
			f.setFact("peak", formatValue(peak, ms.Unit))
			f.setFact("baseline", formatValue(med, ms.Unit))
			if i, ok := seen[subj]; ok {
				var r float64
				fmt.Sscan(out[i].fact("ratio"), &r)
				if ratio > r {
					out[i] = f
				}
				continue
			}
			seen[subj] = len(out)
			out = append(out, f)
		}
	}
	return out
}

// cacheRole sorts a cache metric into what it measures.
func cacheRole(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "memory_max_bytes") || strings.Contains(n, "limit_maxbytes"):
		return "max"
	case strings.Contains(n, "memory_used_bytes") || strings.Contains(n, "current_bytes"):
		return "used"
	case strings.Contains(n, "evict"):
		return "evictions"
	case strings.Contains(n, "hits"):
		return "hits"
	case strings.Contains(n, "misses"):
		return "misses"
	}
	return ""
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
			name := firstLabel(s.Labels, "service", "cache", "redis", "instance", "addr", "pod")
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
			in.series[role] = append(in.series[role], s.Points...)
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
		if maxPs := in.series["max"]; len(maxPs) > 0 {
			if mx, ok := lastPoint(maxPs); ok && mx.V > 0 {
				for _, p := range inWindow(in.series["used"], w.Start, w.End) {
					usedPct = math.Max(usedPct, p.V/mx.V)
				}
			}
		}
		// Hit ratio, baseline against its lowest in the window.
		ratioAt := func(from, to time.Time, worst bool) (float64, bool) {
			hits, misses := in.series["hits"], in.series["misses"]
			if len(hits) == 0 || len(misses) == 0 {
				return 0, false
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
		f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: evictions rose from %s to %s keys/s (from %s)", name, formatValue(baseEv, ""), formatValue(peakEv, ""), ts(evStart)))
		f.setFact("evictions", fmt.Sprintf("%.0f keys/s", peakEv))
		parts = append(parts, fmt.Sprintf("evicting ~%.0f keys/s", peakEv))
		if okB && okL {
			f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: hit ratio fell from %.0f%% to %.0f%% (keyspace hits/(hits+misses))", name, 100*hrBase, 100*hrLow))
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
