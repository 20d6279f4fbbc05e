package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An in-process cache without a bound: a render, response or lookup
// cache kept in the process's memory (lru-cache, Caffeine, a map) whose
// size cap was removed or never set, or whose key takes in what varies
// per request (the full URL with its query string: utm_, gclid, fbclid
// tracking parameters; a session id), so that entries pile up faster
// than its TTL expires them. Its entry count climbs with the process's
// memory until the container is OOMKilled at its limit, and a restart
// empties it; it is no leak in the runtime and no bad node. Read from the
// cache's own size gauge (ssr_render_cache_entries, cache_size,
// caffeine_cache_estimated_size) climbing on a workload that runs out of
// memory, with the diff that removed the cap (max: 5000) or keyed it by
// the request URL.

// KindUnboundedCache is an in-process cache growing without bound to the
// memory limit.
const KindUnboundedCache Kind = "unbounded_cache"

var unboundedCache = &mechanism{
	kind:    KindUnboundedCache,
	class:   classCause,
	label:   "in-process cache growing without bound (no size cap, per-request keys)",
	detect:  detectUnboundedCache,
	related: kindsOnSubject(KindOOMKilled, KindSaturation, KindMemoryClaim, KindCrashLoop, KindRestarts),
	// The cache's code or its settings came with a release.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange) && !matchLine(restartChangeRE, changeText(c)) || matchLine(unboundedCacheChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		d := fmt.Sprintf("%s keeps an in-process cache that grows without bound: %s", s, h.fact("growth"))
		d += ", and its memory grows with it until the containers are OOMKilled"
		if l := h.fact("memory_limit"); l != "" {
			d += " at the memory limit of " + l
		}
		d += "; a restart empties the cache, so it comes back after as long again"
		var why []string
		if b := h.fact("bound_removed"); b != "" {
			why = append(why, "its size cap was removed ("+b+")")
		}
		if k := h.fact("key"); k != "" {
			why = append(why, "its cache key is the full request URL with its query string ("+k+"), so every distinct URL (each query-string variant, tracking parameters such as utm_ included) is a new entry")
		}
		if len(why) > 0 {
			d += ": " + strings.Join(why, " and ")
		}
		if r := h.fact("release"); r != "" && h.Trigger == nil {
			d += "; it came with " + r
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.high("Bound the cache of %s again (a max entry count or a max size in bytes) and key it by what varies the response (path and the parameters that matter), not the full request URL", s)
		r.med("Strip tracking parameters (utm_*, gclid, fbclid) from the key, and size the cap so the cache fits well under the memory limit")
		r.low("Alert on the cache's entry count and on memory growth of %s, not only on OOMKilled restarts", s)
	},
}

var (
	// cacheSizeSeriesRE is a cache's own size gauge.
	cacheSizeSeriesRE = regexp.MustCompile(`(?i)cache.*(?:entries|_size|items|keys|estimated_size)|(?:entries|items)_in_cache`)
	cacheCountNotRE   = regexp.MustCompile(`(?i)hit|miss|request|evict|_total$|bytes_read`)
	// cacheBoundRE is a size cap of a cache in a diff's removed line.
	cacheBoundRE = regexp.MustCompile(`^-\s*\.?(?:max|maxSize|max_size|maxEntries|max_entries|maximumSize|maxsize|capacity|maxItems)\s*[:=(]\s*\d`)
	// cacheURLKeyRE is a cache key made from the full request URL, in a
	// diff's added line.
	cacheURLKeyRE          = regexp.MustCompile(`(?i)^\+.*key.*(?:req(?:uest)?\.(?:url|originalUrl|uri|full_path|fullpath|get_full_path|request_uri|RequestURI)\b|\$request_uri|url\.String\(\))`)
	unboundedCacheChangeRE = regexp.MustCompile(`(?i)\bcache\b`)
)

func detectUnboundedCache(ev *Gathered, found []Finding) []Finding {
	subjects := map[string]Finding{}
	var order []string
	for _, g := range found {
		if g.Kind == KindOOMKilled || g.Kind == KindSaturation && strings.Contains(strings.ToLower(g.fact("metric")), "memory") {
			if e, ok := subjects[g.Subject]; !ok {
				subjects[g.Subject] = g
				order = append(order, g.Subject)
			} else if !g.Time.IsZero() && g.Time.Before(e.Time) {
				e.Time = g.Time
				subjects[g.Subject] = e
			}
		}
	}
	var out []Finding
	for _, s := range order {
		growth := cacheGrowth(ev.Metrics, s)
		if growth == "" {
			continue
		}
		g := subjects[s]
		f := Finding{Kind: KindUnboundedCache, Subject: s, Namespace: g.Namespace, Severity: SevCritical, Weight: 0.86,
			Source: SrcMetrics, Time: g.Time, Object: "in-process cache of " + s}
		f.setFact("growth", growth)
		f.Evidence = append(f.Evidence, growth)
		for _, c := range ev.Commands {
			if c.Pod != "" && !strings.EqualFold(workloadOfName(c.Pod), s) {
				continue
			}
			for _, l := range c.Lines {
				t := strings.TrimSpace(l)
				if strings.HasPrefix(t, "---") || strings.HasPrefix(t, "+++") {
					continue
				}
				if matchLine(cacheBoundRE, t) && f.fact("bound_removed") == "" {
					f.setFact("bound_removed", fmt.Sprintf("%q removed in %s", t, truncate(c.Run, 60)))
					f.Evidence = append(f.Evidence, f.fact("bound_removed"))
				}
				if matchLine(cacheURLKeyRE, t) && f.fact("key") == "" {
					f.setFact("key", fmt.Sprintf("%q added in %s", t, truncate(c.Run, 60)))
					f.Evidence = append(f.Evidence, f.fact("key"))
				}
			}
		}
		if f.fact("bound_removed") != "" || f.fact("key") != "" {
			f.Weight = 0.95
			f.setFact("why", "an in-process cache without a bound grows to the memory limit")
		}
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if !strings.EqualFold(WorkloadOfPod(p), s) {
				continue
			}
			for _, c := range p.Spec.Containers {
				if q := c.Resources.Limits.Memory(); q != nil && !q.IsZero() && f.fact("memory_limit") == "" {
					f.setFact("memory_limit", q.String())
				}
			}
		}
		var latest time.Time
		for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
			if strings.EqualFold(c.Service, s) && c.Kind == "deploy" && !matchLine(restartChangeRE, c.Description) && c.Timestamp.After(latest) {
				latest = c.Timestamp
				f.Facts["release"] = (fmt.Sprintf("release %s (%s): %s", orWord(c.Revision, "?"), ts(c.Timestamp), quote(c.Description, 140)))
			}
		}
		f.Summary = fmt.Sprintf("%s's in-process cache grows without bound until it is OOMKilled", s)
		out = append(out, f)
	}
	return out
}

// IsInProcessCacheSize reports whether a metric is an in-process cache's
// entry count (not a cache server's, not its hits or misses).
func IsInProcessCacheSize(name string) bool {
	return matchLine(cacheSizeSeriesRE, name) && !matchLine(cacheCountNotRE, name) && !IsCacheMetric(name)
}

// cacheGrowth says how far a subject's cache size gauge climbed, when its
// highest value is at least four times its lowest and in the thousands.
func cacheGrowth(sets []MetricSet, subject string) string {
	for _, ms := range sets {
		if !IsInProcessCacheSize(ms.Name) {
			continue
		}
		lo, hi, seen := 0.0, 0.0, false
		for _, s := range ms.Series {
			if !strings.EqualFold(SubjectOfLabels(s.Labels), subject) {
				continue
			}
			for _, p := range s.Points {
				if !seen {
					lo, hi, seen = p.V, p.V, true
				}
				lo, hi = min(lo, p.V), max(hi, p.V)
			}
		}
		if seen && hi >= 1000 && hi >= 4*max(lo, 1) {
			return fmt.Sprintf("its cache size gauge %s climbs from %.0f to %.0f entries", ms.Name, lo, hi)
		}
	}
	return ""
}
