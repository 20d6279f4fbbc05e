package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// An edge cache that stopped serving. A CDN or caching proxy in front of
// a site (CloudFront, Fastly, Cloudflare, Varnish, an nginx proxy_cache)
// answers most requests from its cache; the origin and the services it
// calls are sized for the misses. When responses stop being cacheable —
// a release that renders pages per request and sends "Cache-Control:
// private, no-store", a Set-Cookie on every response, a Vary on a header
// that differs per user — the hit ratio falls and every request reaches
// the origin: its load rises many times over while the CDN's own request
// count stays flat, its autoscaler reaches its maximum, and its CPU is
// pegged. The root is upstream, the change that made the responses
// uncacheable; the origin's own changes are coincidences. The CDN's hit
// ratio says when (CloudFront's CacheHitRate), a response's headers say
// why (cache-control, x-cache: Miss, cf-cache-status: BYPASS).

// KindCacheBypassed is an origin's load surge from an edge cache that
// stopped serving its responses.
const KindCacheBypassed Kind = "cache_bypassed"

// MetricHitRatio is an edge cache's hit ratio (a percentage or a
// fraction): falling is bad, and it says nothing alone.
const MetricHitRatio = "hit_ratio"

var cacheBypassed = &mechanism{
	kind:   KindCacheBypassed,
	class:  classCause,
	label:  "edge cache stopped serving, the origin takes every request",
	detect: detectCacheBypassed,
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject && f.Subject != h.fact("sender") && !slices.Contains(strings.Split(h.fact("origins"), ", "), f.Subject) {
			return false
		}
		switch f.Kind {
		case KindLoadSurge, KindHPAMax, KindSaturation, KindLatency, KindErrorRate, KindCPUThrottling, KindTimeout:
			return true
		}
		return false
	},
	// The change that made the responses uncacheable: the sender's
	// change found, or a change whose text speaks of caching or
	// rendering per request.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.fact("sender") || matchLine(edgeCacheChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		front := h.Subject
		if s := h.fact("sender"); s != "" && s != h.Subject && slices.Contains(strings.Split(h.fact("origins"), ", "), s) {
			front = s // the cache fronts the sender, which calls the subject
		}
		d := fmt.Sprintf("the edge cache (CDN) in front of %s stopped serving: %s", front, orWord(h.fact("hit_ratio"), "its hit ratio fell"))
		d += ", so the requests it used to answer from its cache now reach the origin"
		if front != h.Subject {
			d += fmt.Sprintf(", and each page %s renders for them calls %s", front, h.Subject)
		}
		d += fmt.Sprintf(": the load on %s rose %s", h.Subject, orWord(h.fact("surge"), "many times over"))
		if r := h.fact("response"); r != "" {
			d += fmt.Sprintf("; the responses are no longer cacheable: %s", r)
		}
		if s := h.fact("sender"); s != "" {
			d += fmt.Sprintf("; they changed with %s", orWord(h.fact("sender_change"), s))
		}
		if n := h.fact("innocent"); n != "" {
			d += fmt.Sprintf("; %s came after the load rose: not its cause", n)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if s := h.fact("sender"); s != "" {
			r.high("Make %s's responses cacheable again (Cache-Control: public, s-maxage=…, stale-while-revalidate; no per-request rendering or Set-Cookie on cacheable pages), or roll back %s", s, orWord(h.fact("sender_change"), s))
		} else {
			r.high("Find what made the responses uncacheable (their Cache-Control, Set-Cookie and Vary headers against the cache's policy) and restore caching")
		}
		r.med("Until then, protect %s: raise its autoscaler's maximum and cache its answers in the caller, or serve stale content at the edge", h.Subject)
		r.low("Alert on the edge cache's hit ratio and on the origin's request rate per page type, not only on the origin's CPU")
	},
}

var (
	// hitRatioNameRE names an edge cache's hit ratio series.
	hitRatioNameRE = regexp.MustCompile(`(?i)cachehitrate|cache_hit_ratio|cache_hit_rate|hit_ratio|hitratio|hit_rate`)
	// edgeCacheChangeRE is a change that speaks of caching or of rendering
	// per request.
	edgeCacheChangeRE = regexp.MustCompile(`(?i)cache|\bcdn\b|no-store|cache-control|getserversideprops|server[- ]side render|\bssr\b|\bisr\b|static (?:generation|pages)|per request|set-cookie|\bvary\b`)
	// uncacheableRE is a response header saying the response may not be
	// cached, and missRE a cache's answer that it was not.
	uncacheableRE = regexp.MustCompile(`(?i)^\s*cache-control:.*\b(?:no-store|private|no-cache|max-age=0)\b`)
	missRE        = regexp.MustCompile(`(?i)^\s*(?:x-cache|x-cache-status|cf-cache-status|x-proxy-cache|cdn-cache)\s*:\s*(?:miss|bypass|dynamic|pass)`)
	urlInCmdRE    = regexp.MustCompile(`https?://\S+`)
)

// Edge caches in Prometheus form: a hit ratio gauge (Fastly's exporter
// fastly_rt_hit_ratio, CloudFront's CacheHitRate through the CloudWatch
// exporters as aws_cloudfront_cache_hit_rate_average), or a hit counter
// read against the counters of every request (Varnish's exporter
// varnish_main_cache_hit against cache_miss, cache_hitpass and s_pass;
// Fastly's fastly_rt_hits_total against miss and pass; Cloudflare's
// exporter cloudflare_zone_requests_cached against
// cloudflare_zone_requests_total). A pass (an uncacheable response) is a
// request the cache did not serve: it counts against the hits.
var (
	edgeHitGaugeRE  = regexp.MustCompile(`(?i)^(?:fastly|varnish|cloudflare|aws_cloudfront|cloudfront|akamai|cdn)_\w*?(?:hit_?ratio|hit_?rate)\w*$`)
	edgeHitCounters = map[string][]string{
		"varnish_main_cache_hit":          {"varnish_main_cache_hit", "varnish_main_cache_miss", "varnish_main_cache_hitpass", "varnish_main_s_pass"},
		"fastly_rt_hits_total":            {"fastly_rt_hits_total", "fastly_rt_miss_total", "fastly_rt_pass_total"},
		"cloudflare_zone_requests_cached": {"cloudflare_zone_requests_total"},
	}
)

// IsEdgeHitMetric reports whether a Prometheus metric is an edge cache's
// hit ratio or the hit counter it is read from.
func IsEdgeHitMetric(name string) bool {
	n := strings.ToLower(name)
	return matchLine(edgeHitGaugeRE, n) || edgeHitCounters[n] != nil
}

// edgeHitRatio turns an edge cache's hit counter into its hit ratio (a
// fraction), per series: the rate of hits over the summed rates of every
// request the cache answered, the other counters read with query (nil
// for a counter the source lacks); a gauge is returned as it is. The name
// says what was divided.
func edgeHitRatio(name string, hits []evidence.Series, query func(name string) []evidence.Series) ([]evidence.Series, string) {
	counters := edgeHitCounters[strings.ToLower(name)]
	if counters == nil {
		return hits, name
	}
	hitRates := analysis.RateSeries(hits)
	totals := map[string]map[time.Time]float64{}
	var used []string
	for _, n := range counters {
		ss := hitRates
		if n != name {
			ss = analysis.RateSeries(query(n))
		}
		if len(ss) == 0 {
			continue
		}
		used = append(used, n)
		for _, s := range ss {
			k := seriesKeyWithoutName(s.Labels)
			if totals[k] == nil {
				totals[k] = map[time.Time]float64{}
			}
			for _, p := range s.Points {
				totals[k][p.T] += p.V
			}
		}
	}
	if len(used) == 0 || len(used) == 1 && used[0] == name {
		return nil, name // nothing to divide by
	}
	var den []evidence.Series
	for _, s := range hitRates {
		t := totals[seriesKeyWithoutName(s.Labels)]
		if t == nil {
			continue
		}
		d := evidence.Series{Labels: s.Labels}
		for _, p := range s.Points {
			d.Points = append(d.Points, evidence.Point{T: p.T, V: t[p.T]})
		}
		den = append(den, d)
	}
	all := strings.Join(used, " + ")
	if len(used) > 1 {
		all = "(" + all + ")"
	}
	return ratioSeries(hitRates, den), fmt.Sprintf("cache hit ratio (%s / %s)", name, all)
}

// detectCacheBypassed finds an edge cache whose hit ratio fell from a
// healthy level to under half of it in the window, when the load on a
// service rose at the same time (within 20 minutes): the service's load
// surge is the cache's misses. Responses handed over that are not
// cacheable, and the change that made them so, are named.
func detectCacheBypassed(ev *Gathered, found []Finding) []Finding {
	type fall struct {
		before, after float64
		at            time.Time
		name          string
	}
	var best *fall
	for _, set := range ev.Metrics {
		if set.Class != MetricHitRatio && !matchLine(hitRatioNameRE, set.Name) {
			continue
		}
		for _, s := range set.Series {
			sh, ok := seriesShift(s, ev.Window)
			if !ok || sh.up {
				continue
			}
			before, after := sh.before, sh.peak
			if before <= 1 {
				before, after = before*100, after*100 // a fraction
			}
			if before < 50 || after > before/2 {
				continue
			}
			if best == nil || before-after > best.before-best.after {
				best = &fall{before: before, after: after, at: sh.start, name: humanMetric(orWord(s.Labels["metric_name"], set.Name), MetricHitRatio)}
				if d := firstLabel(s.Labels, "DistributionId", "distribution", "service_id", "zone", "cache"); d != "" {
					best.name += " of " + d
				}
			}
		}
	}
	if best == nil {
		return nil
	}
	// The services whose load rose with the fall; the question's service
	// first.
	var origins []string
	surge := ""
	subject := ""
	for _, f := range found {
		if f.Kind != KindLoadSurge || f.Time.Before(best.at.Add(-20*time.Minute)) || f.Time.After(best.at.Add(20*time.Minute)) {
			continue
		}
		if !slices.Contains(origins, f.Subject) {
			origins = append(origins, f.Subject)
		}
		if subject == "" || f.Subject == ev.Scope.Service {
			subject = f.Subject
			surge = f.Summary
		}
	}
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindCacheBypassed, Subject: subject, Object: "metrics " + best.name, Source: SrcCloudWatch, Severity: SevCritical, Weight: 0.85, Time: best.at}
	f.setFact("hit_ratio", fmt.Sprintf("%s fell from %.0f%% to %.0f%% at %s", best.name, best.before, best.after, hm(best.at)))
	f.setFact("origins", strings.Join(origins, ", "))
	f.Related = append(f.Related, origins...)
	if m := findString(surgeFactorRE, surge); m != "" {
		f.setFact("surge", m)
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s fell from %.0f%% to %.0f%% (from %s)", best.name, best.before, best.after, ts(best.at)), surge)
	// A response handed over that the cache may not store.
	for _, c := range ev.Commands {
		cc, miss := "", ""
		for _, l := range c.Lines {
			if matchLine(uncacheableRE, l) {
				cc = strings.TrimSpace(l)
			} else if matchLine(missRE, l) {
				miss = strings.TrimSpace(l)
			}
		}
		if cc == "" {
			continue
		}
		r := quote(cc, 120)
		if miss != "" {
			r += " with " + quote(miss, 60)
		}
		if u := findString(urlInCmdRE, c.Command); u != "" {
			r = strings.Trim(u, `'"`) + " answers " + r
		}
		f.setFact("response", r)
		f.setFact("why", "the responses are not cacheable: "+cc)
		f.Weight = 0.92
		f.Evidence = append(f.Evidence, truncate(c.Command, 100)+": "+r)
		break
	}
	// The change that made them so: from 30 minutes before the fall to 2
	// minutes after, of a service whose load rose with it or that speaks
	// of caching; the latest.
	var sender *evidence.Change
	for i := range ev.Changes {
		c := &ev.Changes[i]
		if c.Timestamp.Before(best.at.Add(-30*time.Minute)) || c.Timestamp.After(best.at.Add(2*time.Minute)) || c.Service == "" {
			continue
		}
		if !slices.Contains(origins, c.Service) && !matchLine(edgeCacheChangeRE, c.Description) {
			continue
		}
		if sender == nil || c.Timestamp.After(sender.Timestamp) {
			sender = c
		}
	}
	if sender != nil {
		f.setFact("sender", sender.Service)
		f.setFact("sender_change", fmt.Sprintf("the %s of %s at %s (%s)", changeWord(sender.Kind), sender.Service, hm(sender.Timestamp), truncate(sender.Description, 140)))
		if !slices.Contains(f.Related, sender.Service) {
			f.Related = append(f.Related, sender.Service)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s of %s at %s, %d min before the hit ratio fell: %s", changeWord(sender.Kind), sender.Service, ts(sender.Timestamp), int(best.at.Sub(sender.Timestamp).Minutes()), truncate(sender.Description, 200)))
	}
	// The subject's own changes after the surge began did not cause it.
	var late []string
	for _, c := range ev.Changes {
		if c.Service == subject && c.Timestamp.After(best.at.Add(10*time.Minute)) && c.Timestamp.Before(ev.Window.End) {
			late = append(late, fmt.Sprintf("the %s of %s at %s", changeWord(c.Kind), c.Service, hm(c.Timestamp)))
		}
	}
	if len(late) > 0 {
		f.setFact("innocent", strings.Join(late, " and "))
	}
	f.Summary = fmt.Sprintf("%s; the load on %s rose with it", f.fact("hit_ratio"), subject)
	return []Finding{f}
}

// surgeFactorRE is the factor a load surge's summary states ("~15.9×").
var surgeFactorRE = regexp.MustCompile(`~?[\d.]+×`)
