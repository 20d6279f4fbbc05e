package analyst

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindCacheKeyChurn: a client that builds its cache keys so that no
// lookup finds what an earlier one stored (a per-request timestamp or id
// in the key, a version segment that changes on every call): the hit
// ratio collapses at its deploy while the cache has room to spare, and
// the cache then fills with entries never read again.
const KindCacheKeyChurn Kind = "cache_key_churn"

// A hit ratio that collapses right after a deploy of the cache's client,
// while the cache was not full, points at the client's keys, not at the
// cache's capacity: evictions that come later are the never-read keys
// filling it.
var cacheKeyChurn = &mechanism{
	kind:   KindCacheKeyChurn,
	class:  classCause,
	label:  "cache keys never reused (hit ratio collapsed at a client's change)",
	detect: detectCacheKeyChurn,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindFeatureFlag)
	},
	describe: describeCacheKeyChurn,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Make the cache keys of %s stable again: drop the per-request part (%s) so that lookups of the same entry build the same key", h.Subject, orWord(h.fact("volatile"), "what changed in the key format with the change"))
		r.med("Clear the never-read keys from %s (SCAN by the new key pattern and UNLINK, or let their TTL run out) so the entries worth keeping are not evicted", orWord(h.fact("cache"), "the cache"))
		r.low("Alert on the hit ratio per client and key prefix, and test a release's cache keys (a lookup after a store must hit)")
	},
}

var (
	// A client's log line saying a lookup missed, and its key.
	cacheMissLineRE = regexp.MustCompile(`(?i)\bcache[ _-]?miss`)
	cacheKeyRE      = regexp.MustCompile(`(?i)"?\b(?:cache_?)?key"?\s*[=:]\s*"?([^\s",}]+)|\bkey\s+['"]([^'"]+)`)
	// A key's segments that change per request: an epoch in seconds or
	// milliseconds, a UUID, a long hex id.
	epochRE = regexp.MustCompile(`\d{13}|\d{10}`)
	uuidRE  = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	hexIDRE = regexp.MustCompile(`(?i)\b[0-9a-f]{24,}\b`)
	// A redis-cli or memcached command listing keys.
	keyListCmdRE = regexp.MustCompile(`(?i)--scan|\bscan\b|\bkeys\b|lru_crawler metadump`)
	keyLineRE    = regexp.MustCompile(`^\s*(?:\d+\)\s*)?"?([^\s"]+)"?\s*$`)
)

// volatileSegment names the part of a key that changes per request: an
// epoch near at (the request's own time when within minutes of it), a
// UUID or a long hex id; "" when the key has none.
func volatileSegment(key string, at time.Time) (seg, what string) {
	for _, m := range findAllString(epochRE, key, -1) {
		n, _ := strconv.ParseInt(m, 10, 64)
		t := time.Unix(n, 0)
		if len(m) == 13 {
			t = time.UnixMilli(n)
		}
		if d := t.Sub(at); d > -72*time.Hour && d < 72*time.Hour {
			if d > -5*time.Minute && d < 5*time.Minute {
				return m, "the request's own time (epoch " + m + ")"
			}
			return m, "a timestamp (epoch " + m + ")"
		}
	}
	if m := findString(uuidRE, key); m != "" {
		return m, "a per-request UUID"
	}
	if m := findString(hexIDRE, key); m != "" {
		return m, "a per-request id"
	}
	return "", ""
}

// cacheInstance is one cache's series by role (cacheRole).
type cacheInstance struct {
	name, ns string
	series   map[string][]evidence.Point
}

// cacheInstances groups the cache series by instance, as
// DetectCacheSaturation names them.
func cacheInstances(sets []MetricSet) []*cacheInstance {
	byName := map[string]*cacheInstance{}
	var out []*cacheInstance
	for _, ms := range sets {
		if ms.Class != MetricCache {
			continue
		}
		role := cacheRole(ms.Name)
		for _, s := range ms.Series {
			name := workloadOfName(DependencyName(firstLabel(s.Labels, "service", "cache", "redis", "instance", "addr", "pod", "CacheClusterId")))
			if i := strings.IndexByte(name, '.'); i > 0 && net.ParseIP(name) == nil {
				name = name[:i]
			}
			name = orWord(name, "cache")
			in := byName[name]
			if in == nil {
				in = &cacheInstance{name: name, ns: s.Labels["namespace"], series: map[string][]evidence.Point{}}
				byName[name] = in
				out = append(out, in)
			}
			r := cacheSeriesRole(ms.Name, role, s.Labels)
			in.series[r] = append(in.series[r], s.Points...)
		}
	}
	return out
}

// hitCollapse finds when the hit ratio of a cache fell from a healthy
// level (at least 50%) by at least 30 points and stayed down: the
// ratio before and after, and the onset.
func hitCollapse(in *cacheInstance, w Window) (before, after float64, onset time.Time, ok bool) {
	misses := map[time.Time]float64{}
	for _, p := range in.series["misses"] {
		misses[p.T] += p.V
	}
	type rp struct {
		t time.Time
		r float64
	}
	var rs []rp
	for _, p := range in.series["hits"] {
		m, has := misses[p.T]
		if !has || p.V+m <= 0 || p.T.Before(w.BaselineStart) || p.T.After(w.End) {
			continue
		}
		rs = append(rs, rp{p.T, p.V / (p.V + m)})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].t.Before(rs[j].t) })
	if len(rs) < 8 {
		return 0, 0, time.Time{}, false
	}
	med := func(xs []rp) float64 {
		vs := make([]float64, len(xs))
		for i, x := range xs {
			vs[i] = x.r
		}
		return medianOf(vs)
	}
	for i := 3; i < len(rs)-3; i++ {
		b, a := med(rs[:i]), med(rs[i:])
		if b >= 0.5 && b-a >= 0.3 && rs[i].r < b-0.15 {
			return b, a, rs[i].t, true
		}
	}
	return 0, 0, time.Time{}, false
}

// detectCacheKeyChurn finds a cache whose hit ratio collapsed while it had
// room (no evictions, memory below maxmemory before the collapse), and
// the client behind it: the service changed shortly before, and what its
// keys carry per request (a cache-miss log line's key, a key listing).
func detectCacheKeyChurn(ev *Gathered, _ []Finding) []Finding {
	w := ev.Window
	var out []Finding
	for _, in := range cacheInstances(ev.Metrics) {
		before, after, onset, ok := hitCollapse(in, w)
		if !ok {
			continue
		}
		// The cache had room when the ratio fell: no eviction storm, its
		// memory below maxmemory.
		evBefore, evAfter := 0.0, time.Time{}
		for _, p := range in.series["evictions"] {
			switch {
			case !p.T.After(onset.Add(10 * time.Minute)):
				evBefore = max(evBefore, p.V)
			case evAfter.IsZero() && p.V > 1:
				evAfter = p.T
			}
		}
		if evBefore > 1 {
			continue // full already: cacheFull's
		}
		usedPct := -1.0
		if mx, ok := lastPoint(in.series["max"]); ok && mx.V > 0 {
			for _, p := range in.series["used"] {
				if p.T.Before(onset) {
					usedPct = p.V / mx.V
				}
			}
		}
		if usedPct >= 0.9 {
			continue
		}
		// Keys that expired together at the fall are a mass expiry
		// (cachemassexpiry.go), not keys never reused.
		if _, _, burst := expiryBurst(in, onset); burst {
			continue
		}
		// The client: whose logs show the misses, and what their keys carry.
		client, keyLine, seg, what := churnInLogs(ev.Logs, onset)
		if seg == "" {
			if s, wh, ex := churnInKeyList(ev.Commands, w.End); s != "" {
				seg, what, keyLine = s, wh, ex
			}
		}
		if client == "" {
			client = cacheClientNaming(ev.Logs, in.name)
		}
		change := clientChange(ev.Changes, onset, client, ev.Scope.Service)
		if change == nil && seg == "" {
			continue
		}
		subject := client
		if change != nil {
			subject = strings.ToLower(change.Service)
		}
		subject = orWord(subject, ev.Scope.Service)
		if subject == "" {
			continue
		}
		f := Finding{Kind: KindCacheKeyChurn, Subject: subject, Object: "cache " + in.name, Namespace: in.ns, Time: onset,
			Severity: SevCritical, Weight: 0.75, Source: SrcMetrics, Related: []string{in.name}}
		f.setFact("cache", in.name)
		f.setFact("hit_before", fmt.Sprintf("%.0f%%", 100*before))
		f.setFact("hit_after", fmt.Sprintf("%.0f%%", 100*after))
		f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: hit ratio fell from %.0f%% to %.0f%% at %s (keyspace hits/(hits+misses))", in.name, 100*before, 100*after, ts(onset)))
		room := "no evictions before it"
		if usedPct >= 0 {
			room += fmt.Sprintf(", memory at %.0f%% of maxmemory", 100*usedPct)
		}
		f.setFact("room", room)
		f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s was not full when the ratio fell: %s", in.name, room))
		if k0, k1, ok := keysGrowth(in.series["keys"], onset, w.End); ok {
			f.setFact("keys", fmt.Sprintf("%s to %s keys", fmtKeys(k0), fmtKeys(k1)))
			f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: keys grew from %s to %s after the fall (entries stored and never read again)", in.name, fmtKeys(k0), fmtKeys(k1)))
		}
		if !evAfter.IsZero() {
			f.setFact("filled_at", ts(evAfter))
		}
		if change != nil {
			f.setFact("change", fmt.Sprintf("%s of %s at %s (%q)", change.Kind, change.Service, ts(change.Timestamp), truncate(change.Description, 140)))
		}
		if seg != "" {
			f.setFact("volatile", what)
			f.setFact("key_line", keyLine)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the keys carry %s: %s", what, truncate(keyLine, 300)))
			f.Weight = 0.92
			f.Source = SrcLogs
		}
		f.Summary = fmt.Sprintf("cache %s hit ratio collapsed (%.0f%% → %.0f%%) with room to spare: the keys of %s are not reused", in.name, 100*before, 100*after, subject)
		out = append(out, f)
	}
	return out
}

// churnInLogs finds a client's cache-miss lines whose keys carry a
// per-request segment, from shortly before the onset: the client, where
// the key was seen, the segment and what it is.
func churnInLogs(sets []LogSet, onset time.Time) (client, line, seg, what string) {
	for i := range sets {
		set := &sets[i]
		if set.Host && strings.Contains(strings.ToLower(set.Source), "redis") {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 || !matchLine(cacheMissLineRE, t.Example) || t.LastSeen.Before(onset.Add(-15*time.Minute)) {
				continue
			}
			for _, l := range t.Lines() {
				m := findSubmatch(cacheKeyRE, l)
				if m == nil {
					continue
				}
				at, ok := evidence.LineTime([]byte(l), t.FirstSeen)
				if !ok || at.IsZero() {
					at = t.FirstSeen
				}
				if s, wh := volatileSegment(m[1]+m[2], at); s != "" {
					return orWord(set.Subject, subjectOfSource(set.Source)), fmt.Sprintf("key %q in a cache-miss line of %s at %s", m[1]+m[2], set.Source, ts(at)), s, wh
				}
			}
			if client == "" {
				client = orWord(set.Subject, subjectOfSource(set.Source))
			}
		}
	}
	return client, "", "", ""
}

// cacheClientNaming is the one service whose own log names the cache's
// host (its client configured with "servers":"catalog-cache...:11211", a
// connection line): the cache's client when no miss line names one.
func cacheClientNaming(sets []LogSet, cache string) string {
	if cache == "" || cache == "cache" {
		return ""
	}
	client := ""
	for i := range sets {
		set := &sets[i]
		subj := orWord(set.Subject, subjectOfSource(set.Source))
		if subj == "" || strings.EqualFold(subj, cache) {
			continue
		}
		named := false
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if containsToken(strings.ToLower(l), strings.ToLower(cache)) {
					named = true
				}
			}
		}
		if !named {
			continue
		}
		if client != "" && client != subj {
			return "" // several clients: none is the one
		}
		client = subj
	}
	return client
}

// churnInKeyList reads a key listing (redis-cli --scan, KEYS): several
// keys that differ only in a per-request segment are the same entry
// stored again and again.
func churnInKeyList(cmds []evidence.CommandOutput, now time.Time) (seg, what, example string) {
	for _, c := range cmds {
		if !matchLine(keyListCmdRE, c.Run) && !matchLine(keyListCmdRE, c.Command) {
			continue
		}
		forms := map[string][]string{}
		for _, l := range c.Lines {
			m := findSubmatch(keyLineRE, l)
			if m == nil {
				continue
			}
			key := m[1]
			s, wh := volatileSegment(key, now)
			if s == "" {
				continue
			}
			// What is left of the key without the segment and its
			// prefix letters is the entry.
			form := strings.Replace(key, s, "*", 1)
			forms[form] = append(forms[form], key)
			if len(forms[form]) >= 3 {
				return s, strings.Replace(wh, "the request's own time", "a timestamp", 1), fmt.Sprintf("%s lists %d keys of the same entry that differ only in it: %s", c.Command, len(forms[form]), strings.Join(forms[form], ", "))
			}
		}
	}
	return "", "", ""
}

// clientChange is the change that most likely altered the client's keys:
// the latest change at most an hour before the onset (two minutes after
// for clock skew) of the client whose logs show the misses, or of the
// service asked about, or else of any service.
func clientChange(cs []evidence.Change, onset time.Time, client, service string) *evidence.Change {
	var best *evidence.Change
	bestRank := -1
	for i := range cs {
		c := &cs[i]
		d := onset.Sub(c.Timestamp)
		if d < -2*time.Minute || d > time.Hour {
			continue
		}
		rank := 0
		if c.Kind == "deploy" {
			rank++
		}
		if svc := strings.ToLower(c.Service); svc != "" && (svc == strings.ToLower(client) || svc == strings.ToLower(service)) {
			rank += 2
		}
		if rank > bestRank || rank == bestRank && c.Timestamp.After(best.Timestamp) {
			best, bestRank = c, rank
		}
	}
	if best != nil && bestRank < 2 && (client != "" || service != "") {
		return nil // a change of another service: not the client's
	}
	return best
}

// keysGrowth is the key count at the onset and at the end, when it grew
// by at least a third.
func keysGrowth(ps []evidence.Point, onset, end time.Time) (k0, k1 float64, ok bool) {
	for _, p := range ps {
		if !p.T.After(onset) {
			k0 = p.V
		}
		if !p.T.After(end) {
			k1 = p.V
		}
	}
	return k0, k1, k0 > 0 && k1 >= 1.33*k0
}

func fmtKeys(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func describeCacheKeyChurn(h *Hypothesis, sc Scope) string {
	cache := orWord(h.fact("cache"), "the cache")
	d := fmt.Sprintf("the cache keys of %s are never reused, so every lookup misses: the hit ratio of %s collapsed from %s to %s", h.Subject, cache, orDash(h.fact("hit_before")), orDash(h.fact("hit_after")))
	d += h.clause(" right after the ", "change")
	d += fmt.Sprintf(", while %s had room (%s), so it is not its capacity", cache, orWord(h.fact("room"), "no evictions"))
	if v := h.fact("volatile"); v != "" {
		d += fmt.Sprintf("; the keys now include %s, different on every request: %s", v, truncate(h.fact("key_line"), 240))
	} else {
		d += "; what the client puts in its keys changed with it (compare a key stored before and after)"
	}
	var then []string
	if k := h.fact("keys"); k != "" {
		then = append(then, "the key count grew from "+k)
	}
	if f := h.fact("filled_at"); f != "" {
		then = append(then, "evictions began at "+f+" once the never-read keys filled it, a consequence rather than the cause")
	}
	if len(then) > 0 {
		d += "; " + strings.Join(then, ", and ")
	}
	d += ". Lookups fall through to the backing store and reads slow down"
	return d
}
