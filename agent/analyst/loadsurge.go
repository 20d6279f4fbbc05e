package analyst

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"time"
)

// A service's load (requests, connections, sessions, messages consumed)
// rising several times over its baseline: a symptom, and the trigger of
// the causes it drives (out-of-memory kills, saturation, an autoscaler at
// its maximum), which name it.
var loadSurge = &mechanism{
	kind:    KindLoadSurge,
	class:   classSymptom,
	label:   "load surge",
	metrics: DetectLoadSurge,
	describe: func(h *Hypothesis, sc Scope) string {
		return orWord(h.top().Summary, h.Subject+": its load rose several times over its baseline")
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) { recommendGeneric(h, r) },
}

var loadMetricRE = regexp.MustCompile(`(?i)connections|conns\b|_conns_|sessions|clients|websocket|_ws_|requests_total|http_requests|requests_count|_requests$|_rq_total|inflight|in_flight|active_requests|messages_consumed|consumed_total|records_consumed|throughput|rps\b`)

// A database's own connection count rises when its queries slow down: a
// consequence, not the load that caused it; so does a client's pool of
// database connections in use (HikariCP's, OpenTelemetry's
// db.client.connections) when its calls hold them longer.
var notLoadRE = regexp.MustCompile(`(?i)error|fail|5xx|latency|duration|seconds|pool|hikari|^db_client_connections|idle|in_?use|sql_stats|waiting|max|limit|refused|rejected|dropped|bytes|database|^pg_|^mysql_|^mongodb_`)

// IsLoadMetric reports whether a metric measures how much work a service
// is given: requests, active connections or sessions, messages consumed.
func IsLoadMetric(name string) bool {
	return matchLine(loadMetricRE, name) && !matchLine(notLoadRE, name)
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
