package analyst

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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
		return fmt.Sprintf("the %s alert on %s is a false positive, not an OOM risk: container_memory_usage_bytes (%s of its %s limit) counts the page cache (%s), which the kernel reclaims before any OOM kill; the working set, what the OOM killer judges, is %s (%s of the limit)",
			alert, h.Subject, h.fact("usage_pct"), h.fact("limit"), orWord(h.fact("cache"), "reclaimable"), h.fact("working_set"), h.fact("working_set_pct"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
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
	if m := memLimitRE.FindStringSubmatch(text); m != nil {
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
	// The latest value of each series of the subject, by metric.
	last := map[string]float64{}
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
		}
	}
	ws, usage, cache := last["container_memory_working_set_bytes"], last["container_memory_usage_bytes"], last["container_memory_cache"]
	if limit <= 0 || ws <= 0 {
		return nil // nothing to check the claim against
	}
	alert := "memory"
	if m := memAlertName.FindString(text); m != "" {
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
	if ws >= 0.9*limit {
		f.setFact("at_risk", "true")
		f.Summary = fmt.Sprintf("%s working set at %s of its memory limit: the alert is real", subject, pct(ws))
	} else {
		f.Severity = SevInfo
		f.Summary = fmt.Sprintf("%s memory alert counts page cache: working set %s of the limit", subject, pct(ws))
	}
	return []Finding{f}
}
