package analyst

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindMemoryClaim: an alert's claim that a container is near its memory
// limit, checked against its working set.
const KindMemoryClaim Kind = "memory_claim"

// A memory alert taken as a claim to check: container_memory_usage_bytes
// counts the page cache, which the kernel reclaims before it kills
// anything; the working set is what the OOM killer judges. A working set
// well below the limit refutes the alert (a false positive: no OOM
// risk); one at the limit confirms it (an OOM kill is coming).
var memoryClaim = &mechanism{
	kind:   KindMemoryClaim,
	class:  classCause,
	label:  "memory alert checked against the working set",
	detect: detectMemoryClaim,
	describe: func(h *Hypothesis, sc Scope) string {
		alert := orWord(h.fact("alert"), "memory alert")
		if h.fact("at_risk") != "" {
			return fmt.Sprintf("the %s alert on %s is real: its working set (container_memory_working_set_bytes, what the OOM killer judges) is %s of its %s memory limit, so an OOM kill is near", alert, h.Subject, h.fact("working_set_pct"), h.fact("limit"))
		}
		if h.fact("recovered") != "" {
			return describeMemoryRecovered(h, alert)
		}
		if h.fact("usage_pct") == "" {
			return fmt.Sprintf("the %s alert on %s is not borne out by its working set, what the OOM killer judges: it stays at %s of its %s limit (%s now, at most %s in the window); the alert's figure is not the working set (it likely counts reclaimable page cache)",
				alert, h.Subject, h.fact("working_set_pct"), h.fact("limit"), h.fact("working_set"), orWord(h.fact("peak_pct"), h.fact("working_set_pct")))
		}
		return fmt.Sprintf("the %s alert on %s is a false positive, not an OOM risk: container_memory_usage_bytes (%s of its %s limit) counts the page cache (%s), which the kernel reclaims before any OOM kill; the working set, what the OOM killer judges, is %s (%s of the limit)",
			alert, h.Subject, h.fact("usage_pct"), h.fact("limit"), orWord(h.fact("cache"), "reclaimable"), h.fact("working_set"), h.fact("working_set_pct"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("recovered") != "" {
			r.high("No action needed now: the working set of %s is back to %s of its limit, with no OOM kill and no restart; let the resolved alert close", h.Subject, h.fact("working_set_pct"))
			what := "what raised it"
			if c := h.fact("peak_change"); c != "" {
				what = c
			}
			r.med("Give the peak headroom before it recurs: it reached %s of the %s limit during %s; raise the limit above the peak or make that step hold less memory at once", h.fact("peak_pct"), h.fact("limit"), what)
			r.low("Alert on the working set near the limit only when it stays there (a longer for: clause), and on OOM kills")
			return
		}
		if h.fact("at_risk") != "" {
			r.high("Raise the memory limit of %s (now %s) or cut its memory use before the OOM killer restarts it", h.Subject, h.fact("limit"))
			r.med("Find what grows in the working set of %s (heap, caches, leaks)", h.Subject)
		} else {
			r.high("No need to raise the memory limit of %s: its working set is %s of it; the rest is reclaimable page cache", h.Subject, h.fact("working_set_pct"))
			r.med("Base the alert on container_memory_working_set_bytes rather than container_memory_usage_bytes, which counts the page cache")
		}
		r.low("Alert on OOM kills and on the working set near the limit")
	},
}

var (
	memoryAlertRE = regexp.MustCompile(`(?i)MemoryNearLimit|MemoryUsageHigh|memory (?:usage )?(?:is )?(?:near|close to|above|over) (?:its |the )?(?:memory )?limit|\d+(?:\.\d+)?% of its memory limit`)
	memLimitRE    = regexp.MustCompile(`(?i)memory limit \(?(\d+(?:\.\d+)?\s*[KMGTP]i?B?)\)?`)
	memAlertName  = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*Memory[A-Za-z0-9]*\b`)
)

// detectMemoryClaim checks an alert's claim that a container is near its
// memory limit against the container's working set and page cache.
func detectMemoryClaim(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	text, subject := alertClaim(sc, memoryAlertRE)
	if subject == "" {
		return nil
	}
	var limit float64
	if m := findSubmatch(memLimitRE, text); m != nil {
		if q, err := resource.ParseQuantity(strings.TrimSuffix(strings.ReplaceAll(m[1], " ", ""), "B")); err == nil {
			limit = float64(q.Value())
		}
	}
	if limit == 0 {
		for i := range ev.K8s.Pods {
			if p := &ev.K8s.Pods[i]; WorkloadOfPod(p) == subject {
				for j := range p.Spec.Containers {
					if q, ok := p.Spec.Containers[j].Resources.Limits["memory"]; ok && limit == 0 {
						limit = float64(q.Value())
					}
				}
			}
		}
	}
	// The latest value of each series of the subject, by metric; the
	// working set's peak in the window and when it was near the limit.
	last := map[string]float64{}
	var wsPoints [][]evidence.Point
	restarts := 0.0
	for _, ms := range ev.Metrics {
		name := strings.ToLower(ms.Name)
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) && !strings.HasPrefix(s.Labels["pod"], subject+"-") {
				continue
			}
			if p, ok := lastPoint(s.Points); ok && p.V > last[name] {
				last[name] = p.V
			}
			switch {
			case name == "container_memory_working_set_bytes":
				wsPoints = append(wsPoints, inWindow(s.Points, ev.Window.Start, ev.Window.End))
			case strings.Contains(name, "restarts"):
				// A count that moves in the window, whether read as
				// the counter or as its rate, is a restart.
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, p := range inWindow(s.Points, ev.Window.Start, ev.Window.End) {
					lo, hi = min(lo, p.V), max(hi, p.V)
				}
				if hi > lo {
					restarts += hi - lo
				}
			}
		}
	}
	ws, usage, cache := last["container_memory_working_set_bytes"], last["container_memory_usage_bytes"], last["container_memory_cache"]
	if limit <= 0 || ws <= 0 {
		return nil // nothing to check the claim against
	}
	alert := "memory"
	if m := findString(memAlertName, text); m != "" {
		alert = m
	}
	f := Finding{Kind: KindMemoryClaim, Subject: subject, Object: "alert " + alert, Namespace: sc.Namespace, Time: ev.Window.Start,
		Severity: SevWarning, Weight: 0.9, Source: SrcMetrics}
	pct := func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v/limit) }
	f.setFact("alert", alert)
	f.setFact("limit", humanBytes(int64(limit)))
	f.setFact("working_set", humanBytes(int64(ws)))
	f.setFact("working_set_pct", pct(ws))
	if usage > 0 {
		f.setFact("usage_pct", pct(usage))
	}
	if cache > 0 {
		f.setFact("cache", humanBytes(int64(cache))+" of page cache")
	}
	f.Evidence = []string{fmt.Sprintf("the %s alert states: %s", alert, quote(strings.TrimSpace(sc.Message), 220)),
		fmt.Sprintf("working set of %s: %s, %s of its %s memory limit; usage (with page cache) %s", subject, humanBytes(int64(ws)), pct(ws), humanBytes(int64(limit)), orWord(f.fact("usage_pct"), "unknown"))}
	peak, from, until := memoryPeak(wsPoints, 0.85*limit)
	if peak > 0 {
		f.setFact("peak_pct", pct(peak))
	}
	oom := oomKillsOf(ev, subject)
	if ws < 0.9*limit && peak >= 0.85*limit && ws <= peak-0.15*limit && restarts == 0 && oom == "" {
		// Near the limit for a while, then back down, with nothing
		// killed: the alert was true and is over.
		f.setFact("recovered", "true")
		f.setFact("peak_from", ts(from))
		f.setFact("peak_until", ts(until))
		f.Time = from
		f.Evidence = append(f.Evidence, fmt.Sprintf("working set of %s peaked at %s of its limit (%s) from %s to %s, then returned to %s (%s now)",
			subject, pct(peak), humanBytes(int64(peak)), ts(from), ts(until), pct(ws), humanBytes(int64(ws))),
			fmt.Sprintf("no OOM kill and no restart of %s in the window", subject))
		if c := changeBefore(ev.Changes, subject, from); c != nil {
			// (The change itself is the trigger's evidence.)
			f.setFact("peak_change", fmt.Sprintf("the %s change at %s (%q)", c.Kind, ts(c.Timestamp), truncate(c.Description, 120)))
			if e := recurringChange(ev.Earlier, c); e != nil {
				f.setFact("recurs", fmt.Sprintf("the same change ran at %s", ts(e.Timestamp)))
			}
		}
		f.Severity = SevInfo
		f.Summary = fmt.Sprintf("%s working set peaked at %s of its memory limit and recovered to %s: no OOM kill, no restart", subject, pct(peak), pct(ws))
		return []Finding{f}
	}
	if ws >= 0.9*limit {
		f.setFact("at_risk", "true")
		f.Summary = fmt.Sprintf("%s working set at %s of its memory limit: the alert is real", subject, pct(ws))
	} else {
		f.Severity = SevInfo
		f.Summary = fmt.Sprintf("%s memory alert counts page cache: working set %s of the limit", subject, pct(ws))
	}
	return []Finding{f}
}

// describeMemoryRecovered answers "is it still a problem?" of a memory
// alert whose working set came near the limit and went back down.
func describeMemoryRecovered(h *Hypothesis, alert string) string {
	d := fmt.Sprintf("the %s alert on %s was true for a while and has recovered: the working set (what the OOM killer judges) peaked at %s of its %s limit from %s to %s", alert, h.Subject, h.fact("peak_pct"), h.fact("limit"), h.fact("peak_from"), h.fact("peak_until"))
	d += h.clause(", after ", "peak_change")
	d += fmt.Sprintf(", then returned to %s (%s now); no OOM kill and no restart followed. It is no longer a problem: a transient peak, not an ongoing one", h.fact("working_set_pct"), h.fact("working_set"))
	if r := h.fact("recurs"); r != "" {
		d += fmt.Sprintf(", though it recurs (%s the day before) and each run comes as near the limit", r)
	}
	return d
}

// memoryPeak is the highest point of the working-set series and the span
// they stay at or above near.
func memoryPeak(series [][]evidence.Point, near float64) (peak float64, from, until time.Time) {
	for _, ps := range series {
		for _, p := range ps {
			peak = max(peak, p.V)
			if p.V >= near {
				if from.IsZero() || p.T.Before(from) {
					from = p.T
				}
				if p.T.After(until) {
					until = p.T
				}
			}
		}
	}
	return peak, from, until
}

// oomKillsOf names a pod of the subject whose container ended in the
// window (OOM-killed or restarted), or that an OOM event names; "" when
// none did.
func oomKillsOf(ev *Gathered, subject string) string {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if WorkloadOfPod(p) != subject {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			// Any container that ended in the window (OOMKilled or
			// not) is no clean recovery.
			if t := c.LastTerminationState.Terminated; t != nil && !t.FinishedAt.Time.Before(ev.Window.Start) {
				return p.Name
			}
		}
	}
	for _, e := range ev.K8s.Events {
		if strings.Contains(e.Reason, "OOM") && strings.HasPrefix(e.InvolvedObject.Name, subject) {
			return e.InvolvedObject.Name
		}
	}
	return ""
}

// changeBefore is the latest change of the subject at most an hour
// before t.
func changeBefore(cs []evidence.Change, subject string, t time.Time) *evidence.Change {
	var best *evidence.Change
	for i := range cs {
		c := &cs[i]
		if !strings.EqualFold(c.Service, subject) || c.Timestamp.After(t) || t.Sub(c.Timestamp) > time.Hour {
			continue
		}
		if best == nil || c.Timestamp.After(best.Timestamp) {
			best = c
		}
	}
	return best
}

// recurringChange is an earlier change of the same service and kind made
// about a whole number of days before c (a nightly job).
func recurringChange(earlier []evidence.Change, c *evidence.Change) *evidence.Change {
	for i := range earlier {
		e := &earlier[i]
		if e.Service != c.Service || e.Kind != c.Kind || !e.Timestamp.Before(c.Timestamp) {
			continue
		}
		d := c.Timestamp.Sub(e.Timestamp)
		if off := d % (24 * time.Hour); d >= 20*time.Hour && (off <= time.Hour || off >= 23*time.Hour) {
			return e
		}
	}
	return nil
}
