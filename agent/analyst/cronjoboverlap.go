package analyst

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
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
	detect: func(ev *Gathered, _ []Finding) []Finding {
		fs := detectRunOverlaps(ev.K8s, ev.Window)
		for i := range fs {
			overlapChain(ev, &fs[i])
		}
		return fs
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := orWord(h.top().Summary, h.Subject+": several runs of its CronJob active at once")
		if t := h.fact("typical_run"); t != "" {
			d += fmt.Sprintf(" (the runs that completed took about %s)", t)
		}
		if p := h.fact("policy"); p != "" {
			d += fmt.Sprintf(". The runs overlap: a run takes longer than the interval of its schedule %s, and concurrencyPolicy %s lets the next run start while the previous one is still running", orWord(h.fact("schedule"), "(its schedule)"), p)
		}
		if h.fact("lock_line") != "" {
			d += fmt.Sprintf("; the lock the runs take expires%s before a run ends, so the next run takes it and both write at the same time", h.wrapped(" after ", "lock_ttl", " (its TTL)"))
			d += h.quoteClause(": ", "lock_line", 180)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("policy") == "" && h.fact("lock_line") == "" {
			recommendGeneric(h, r)
			return
		}
		r.high("Set concurrencyPolicy: Forbid on CronJob %s so a run never starts while the previous one is running, or space its schedule wider than a run takes", h.Subject)
		if h.fact("lock_line") != "" {
			r.high("Make %s's lock outlive a run: a TTL longer than the longest run%s or renewed while the run works, and check ownership before each write", h.Subject, h.wrapped(" (now ", "lock_ttl", ")"))
		}
		r.med("Make the runs faster or incremental, and repair the data the overlapping runs overwrote")
		r.low("Alert on kube_cronjob_status_active above 1 and on run durations near the schedule's interval")
	},
}

var (
	// lockTTLRE is a job's log of the lock it took, with its TTL.
	lockTTLRE = regexp.MustCompile(`(?i)\block\b[^\n]{0,120}?\b(?:ttl|expires?(?:[_ ]in)?|lease)["=: ]+(\d+(?:\.\d+)?\s*(?:ms|s|m|sec|seconds|minutes)?)\b`)
	// lockLostRE is a run finding its lock taken by another before it
	// ended.
	lockLostRE = regexp.MustCompile(`(?i)\block\b[^\n]{0,120}(?:now owned by|owned by another|lost|expired before|not (?:the )?owner|release skipped|already released)`)
)

// overlapChain reads why a CronJob's runs overlap and what it costs: the
// CronJob's schedule and concurrencyPolicy (Allow, the default, starts a
// run while the previous one runs), and a lock the runs take whose TTL
// is shorter than a run (the next run takes it while the previous one
// still writes).
func overlapChain(ev *Gathered, f *Finding) {
	name := f.fact("cronjob")
	for i := range ev.K8s.CronJobs {
		c := &ev.K8s.CronJobs[i]
		if c.Name != name || f.Namespace != "" && c.Namespace != "" && c.Namespace != f.Namespace {
			continue
		}
		p := string(c.Spec.ConcurrencyPolicy)
		if p == "" {
			p = "Allow (the default)"
		}
		if strings.HasPrefix(p, "Allow") {
			f.setFact("policy", p)
			f.setFact("schedule", fmt.Sprintf("%q", c.Spec.Schedule))
			f.Evidence = append(f.Evidence, fmt.Sprintf("CronJob %s: schedule %q, concurrencyPolicy %s", name, c.Spec.Schedule, p))
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if !strings.HasPrefix(set.Subject, name) && !strings.Contains(set.Source, name) {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(lockTTLRE, l); m != nil && f.fact("lock_ttl") == "" {
					f.setFact("lock_ttl", strings.TrimSpace(m[1]))
				}
				if matchLine(lockLostRE, l) && f.fact("lock_line") == "" {
					f.setFact("lock_line", l)
					f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", set.Subject, quote(ReadableLine(l), 200)))
				}
			}
		}
	}
	if f.fact("lock_line") == "" {
		delete(f.Facts, "lock_ttl")
	} else {
		f.Weight = max(f.Weight, 0.8)
	}
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
			if !w.covers(t) {
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

// detectRunOverlaps finds, in the Jobs a CronJob created, a run still
// active when the next ones started: several active at once now (the
// oldest has outlasted the schedule's interval), or a run that completed
// after the next one had started. The evidence names the run, when it
// was scheduled, how long it has run against the runs that completed.
func detectRunOverlaps(k K8sEvidence, w Window) []Finding {
	byCron := cronRuns(k)
	var out []Finding
	for _, key := range slices.Sorted(maps.Keys(byCron)) {
		runs := byCron[key]
		ns, name, _ := strings.Cut(key, "/")
		var active []int
		for i, r := range runs {
			if r.State == runActive {
				active = append(active, i)
			}
		}
		first, at := -1, time.Time{}
		if len(active) >= 2 {
			first, at = active[0], runs[active[1]].Scheduled
		} else {
			// History: a run that completed after the next one started.
			for i := 0; i+1 < len(runs); i++ {
				if e := runs[i].End; !e.IsZero() && e.After(runs[i+1].Scheduled) && w.recent(runs[i+1].Scheduled) {
					first, at = i, runs[i+1].Scheduled
					break
				}
			}
		}
		if first < 0 {
			continue
		}
		r := runs[first]
		f := Finding{Kind: KindJobOverlap, Subject: name, Object: "cronjob " + ns + "/" + name, Namespace: ns, Time: at,
			Severity: SevWarning, Weight: 0.5, Source: SrcKubernetes}
		var later []string
		for _, l := range runs[first+1:] {
			if !l.Scheduled.After(at) || l.State == runActive || r.End.IsZero() || l.Scheduled.Before(r.End) {
				later = append(later, l.Job.Name+" at "+hm(l.Scheduled))
			}
		}
		ev := fmt.Sprintf("Job %s was still active when the next runs of CronJob %s started (%s)", r.label(), name, strings.Join(later, ", "))
		if len(active) >= 2 {
			f.Weight, f.Time = 0.75, r.Scheduled
			ev = fmt.Sprintf("Job %s is still active after %s: %d runs of CronJob %s are active at once (the later ones %s)",
				r.label(), duration.HumanDuration(w.End.Sub(orTime(r.Start, r.Scheduled))), len(active), name, strings.Join(later, ", "))
			f.Summary = fmt.Sprintf("CronJob %s runs pile up: %s still active, %d runs active at once", name, r.label(), len(active))
		} else {
			ev += fmt.Sprintf("; it completed at %s", hm(r.End))
			f.Summary = fmt.Sprintf("CronJob %s runs overlap: %s ran until %s, after the next run started", name, r.label(), hm(r.End))
		}
		f.Evidence = []string{ev}
		if d := typicalRun(runs); d > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the runs that completed took %s (median)", duration.HumanDuration(d)))
			f.setFact("typical_run", duration.HumanDuration(d))
		}
		if r.Inferred {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the CronJob counts %d active runs: the newest runs not complete", len(active)))
		}
		f.setFact("cronjob", name)
		f.setFact("job", r.Job.Name)
		f.setFact("active_peak", fmt.Sprint(max(len(active), 2)))
		out = append(out, f)
	}
	return out
}
