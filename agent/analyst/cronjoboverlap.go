package analyst

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Several runs of one CronJob active at once. Overlapping runs are not a
// failure on their own (a Job being active is normal); they matter when
// they share a limited resource, such as a connection pool, which the
// reasoner joins them to (joinJobOverlaps).
var jobOverlap = &mechanism{
	kind:    KindJobOverlap,
	class:   classSymptom,
	label:   "overlapping CronJob runs",
	metrics: DetectJobOverlap,
	describe: func(h *Hypothesis, sc Scope) string {
		return orWord(h.top().Summary, h.Subject+": several runs of its CronJob active at once")
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) { recommendGeneric(h, r) },
}

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
