package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindCacheMassExpiry: a cache stampede after a mass expiry. Keys written
// together with one fixed TTL (a warm-up after a restart or a flush, a
// bulk load, a nightly refresh) expire together one TTL later: the hit
// ratio collapses at that moment, the key count falls and the expired
// keys counter jumps, and every miss goes to the backing store at once,
// which overloads it. The database's slow statements, its CPU and the
// clients' pool timeouts that follow are the stampede's consequences.
const KindCacheMassExpiry Kind = "cache_mass_expiry"

var cacheMassExpiry = &mechanism{
	kind:   KindCacheMassExpiry,
	class:  classCause,
	label:  "cache stampede: keys written with one TTL expired together",
	detect: detectCacheMassExpiry,
	// The bulk write's own service (the warmer) is its trigger; a deploy
	// of a client near the expiry is a coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject || c.Subject == h.fact("writer")
	},
	strictTriggers: true,
	describe:       describeCacheMassExpiry,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		writer := orWord(h.fact("writer"), "the writer of the keys")
		r.high("Spread the expiry of the keys %s writes: add a random jitter to their TTL (%s ± 10–20%%) so that keys written together do not expire together", writer, orWord(h.fact("ttl"), "the fixed TTL"))
		r.high("Shield %s from the misses of %s: coalesce concurrent misses of one key (single-flight or a short lock per key), serve the stale value while one caller refreshes it, and refresh hot keys before they expire", orWord(h.fact("backend"), "the backing store"), h.Subject)
		r.med("Warm %s in batches with spread TTLs rather than all at once, and rate-limit the rebuild of missed keys against the database", h.Subject)
		r.low("Alert on the expired keys per second and the hit ratio of %s, not only on the database's CPU", h.Subject)
	},
}

var (
	// A TTL in a line or a change: Redis's SET … EX 3600 / PX, SETEX key
	// 3600, EXPIRE key 3600, a ttl=/ttl:/expiry= field, "TTL of 1h",
	// memcached's exptime.
	ttlValueRE = regexp.MustCompile(`(?i)(?:\b(?:SET\b[^\n]{0,60}?\bEX|SETEX\s+\S+|EXPIRE\s+\S+|exptime|ttl(?:_?seconds|_?secs|_?s)?|expir(?:y|e|es|ation)(?:_?in|_?after|_?seconds)?|max[-_]?age)"?\s*(?:[=:]|\bof\b|\bto\b)?\s*"?(\d+(?:\.\d+)?)\s*(ms|milliseconds|s|sec|secs|seconds|m|min|mins|minutes|h|hr|hrs|hours?)?\b)|\bPX\s+(\d+)\b`)
	// A jitter switched off or absent: ttl_jitter=0, "jitter": 0, no jitter.
	noJitterRE = regexp.MustCompile(`(?i)jitter"?\s*[=:]\s*"?0(?:\.0+)?(?:s|ms|%)?\b|\bno (?:ttl )?jitter|without jitter|jitter[=:]?\s*(?:none|off|false|disabled)`)
	// How many keys a bulk write wrote.
	bulkKeysRE = regexp.MustCompile(`(?i)\b(\d[\d,_]*)\s+(?:keys|entries|items|objects)\b|\b(?:keys|entries|items)(?:_written|_loaded)?"?\s*[=:]\s*"?(\d[\d,_]*)\b`)
)

// ttlOf reads the TTL a line or change sets, and how it said it.
func ttlOf(text string) (time.Duration, string, bool) {
	m := findSubmatch(ttlValueRE, text)
	if m == nil {
		return 0, "", false
	}
	if m[3] != "" {
		n, _ := strconv.ParseInt(m[3], 10, 64)
		d := time.Duration(n) * time.Millisecond
		return d, fmt.Sprintf("%d ms", n), d > 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 {
		return 0, "", false
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case u == "ms" || u == "milliseconds":
		unit = time.Millisecond
	case strings.HasPrefix(u, "m"):
		unit = time.Minute
	case strings.HasPrefix(u, "h"):
		unit = time.Hour
	}
	d := time.Duration(v * float64(unit))
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(m[0])), "PX") {
		d = time.Duration(v * float64(time.Millisecond))
	}
	said := strings.TrimSpace(m[1] + " " + orWord(m[2], "s"))
	return d, said, d >= time.Minute
}

// expiryBurst reads, around a hit-ratio collapse, whether keys expired
// together: the expired keys per second jumping to at least ten times
// their level before (and to a rate that is not noise), or the key count
// falling by a third or more within a quarter hour of the onset. It
// returns when the burst peaked and what was seen.
func expiryBurst(in *cacheInstance, onset time.Time) (at time.Time, seen []string, ok bool) {
	from, to := onset.Add(-10*time.Minute), onset.Add(15*time.Minute)
	var base []float64
	peak := evidence.Point{}
	for _, p := range in.series["expired"] {
		switch {
		case p.T.Before(from):
			base = append(base, p.V)
		case !p.T.After(to) && p.V > peak.V:
			peak = p
		}
	}
	if len(base) > 0 && peak.V > 0 {
		b := medianOf(base)
		if peak.V >= 10*max(b, 0.1) && peak.V >= 5 {
			at = peak.T
			seen = append(seen, fmt.Sprintf("cache %s: expired keys jumped to %s/s at %s (%s/s before)", in.name, fmtRate(peak.V), ts(peak.T), fmtRate(b)))
		}
	}
	var k0, kmin float64
	var kAt time.Time
	for _, p := range in.series["keys"] {
		if p.T.Before(from) {
			k0 = p.V
			continue
		}
		if p.T.After(to) {
			break
		}
		if kmin == 0 || p.V < kmin {
			kmin, kAt = p.V, p.T
		}
	}
	if k0 > 0 && kmin <= k0*2/3 {
		if at.IsZero() {
			at = kAt
		}
		seen = append(seen, fmt.Sprintf("cache %s: keys fell from %s to %s by %s", in.name, fmtKeys(k0), fmtKeys(kmin), ts(kAt)))
	}
	return at, seen, len(seen) > 0
}

func fmtRate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// ttlWrite is a write of many keys with one TTL whose expiry falls on the
// burst: the line or change, who wrote, when, and the TTL.
type ttlWrite struct {
	writer, text, from, said string
	at                       time.Time
	ttl                      time.Duration
	noJitter                 bool
	keys                     string
}

// findTTLWrite looks, in every log and change, for a write whose time
// plus the TTL it set falls within ten minutes (or a tenth of the TTL)
// of the expiry burst.
func findTTLWrite(ev *Gathered, burst time.Time, cache string) *ttlWrite {
	fits := func(at time.Time, ttl time.Duration) bool {
		slack := max(10*time.Minute, ttl/10)
		d := at.Add(ttl).Sub(burst)
		return ttl >= time.Minute && d > -slack && d < slack
	}
	var best *ttlWrite
	consider := func(w *ttlWrite) {
		if best == nil || w.noJitter && !best.noJitter || w.keys != "" && best.keys == "" {
			best = w
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		subj := orWord(set.Subject, subjectOfSource(set.Source))
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				ttl, said, ok := ttlOf(l)
				if !ok {
					continue
				}
				at, has := evidence.LineTime([]byte(l), t.FirstSeen)
				if !has || at.IsZero() {
					at = t.FirstSeen
				}
				if !fits(at, ttl) {
					continue
				}
				w := &ttlWrite{writer: subj, text: l, from: set.Origin + " " + set.Source, said: said, at: at, ttl: ttl, noJitter: matchLine(noJitterRE, l)}
				if m := findSubmatch(bulkKeysRE, l); m != nil {
					w.keys = m[1] + m[2]
				}
				consider(w)
			}
		}
	}
	for _, c := range ev.Changes {
		ttl, said, ok := ttlOf(c.Description)
		if !ok || !fits(c.Timestamp, ttl) {
			continue
		}
		consider(&ttlWrite{writer: strings.ToLower(c.Service), text: c.Description, from: "change of " + c.Service, said: said, at: c.Timestamp, ttl: ttl, noJitter: matchLine(noJitterRE, c.Description)})
	}
	if best != nil && strings.EqualFold(best.writer, cache) {
		best.writer = ""
	}
	return best
}

// detectCacheMassExpiry finds a cache whose hit ratio collapsed as its
// keys expired together, and the bulk write one TTL earlier that set them.
func detectCacheMassExpiry(ev *Gathered, _ []Finding) []Finding {
	w := ev.Window
	var out []Finding
	for _, in := range cacheInstances(ev.Metrics) {
		before, after, onset, ok := hitCollapse(in, w)
		if !ok {
			continue
		}
		// Keys pushed out by a full cache are evictions (cacheFull's).
		evicting := false
		for _, p := range in.series["evictions"] {
			if !p.T.Before(onset.Add(-10*time.Minute)) && !p.T.After(onset.Add(15*time.Minute)) && p.V > 1 {
				evicting = true
			}
		}
		if evicting {
			continue
		}
		burst, seen, ok := expiryBurst(in, onset)
		if !ok {
			continue
		}
		bw := findTTLWrite(ev, burst, in.name)
		f := Finding{Kind: KindCacheMassExpiry, Subject: in.name, Object: "cache " + in.name, Namespace: in.ns, Time: onset,
			Severity: SevCritical, Weight: 0.7, Source: SrcMetrics, Related: []string{in.name}}
		f.setFact("cache", in.name)
		f.setFact("hit_before", fmt.Sprintf("%.0f%%", 100*before))
		f.setFact("hit_after", fmt.Sprintf("%.0f%%", 100*after))
		f.setFact("expired_at", ts(burst))
		f.Evidence = append(f.Evidence, fmt.Sprintf("cache %s: hit ratio fell from %.0f%% to %.0f%% at %s (keyspace hits/(hits+misses))", in.name, 100*before, 100*after, ts(onset)))
		f.Evidence = append(f.Evidence, seen...)
		f.setFact("burst", strings.Join(seen, "; "))
		if bw != nil {
			f.setFact("ttl", bw.said)
			f.setFact("written_at", ts(bw.at))
			f.setFact("write_line", bw.text)
			if bw.writer != "" {
				f.setFact("writer", bw.writer)
				f.Related = appendNew(f.Related, bw.writer)
			}
			if bw.noJitter {
				f.setFact("no_jitter", "true")
			}
			if bw.keys != "" {
				f.setFact("keys_written", bw.keys)
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s wrote the keys with a TTL of %s at %s, one TTL before the expiry: %s", orWord(bw.writer, bw.from), bw.said, ts(bw.at), quote(ReadableLine(bw.text), 200)))
			f.Weight = 0.93
			f.Source = SrcLogs
		}
		if c := ev.Scope.Service; c != "" && !strings.EqualFold(c, in.name) {
			f.Related = appendNew(f.Related, c)
			f.setFact("clients", c)
		}
		f.Summary = fmt.Sprintf("cache %s: keys expired together at %s (hit ratio %.0f%% → %.0f%%), a stampede of misses on the backing store", in.name, hm(burst), 100*before, 100*after)
		out = append(out, f)
	}
	return out
}

func describeCacheMassExpiry(h *Hypothesis, sc Scope) string {
	cache := h.Subject
	d := fmt.Sprintf("cache stampede on %s: its keys expired at the same time (mass expiry at %s)", cache, h.fact("expired_at"))
	if ttl := h.fact("ttl"); ttl != "" {
		jitter := ""
		if h.fact("no_jitter") != "" {
			jitter = ", without jitter"
		}
		d = fmt.Sprintf("cache stampede on %s: %s wrote %s at %s with one fixed TTL of %s%s, so they all expired at the same time one TTL later (mass expiry at %s)",
			cache, orWord(h.fact("writer"), "a bulk write"), orWord(keysCounted(h.fact("keys_written"), "keys"), "its keys"), h.fact("written_at"), ttl, jitter, h.fact("expired_at"))
	}
	d += fmt.Sprintf(". The hit ratio fell from %s to %s and every miss went to the backing store at once", h.fact("hit_before"), h.fact("hit_after"))
	if c := h.fact("clients"); c != "" {
		d += fmt.Sprintf(" through %s", c)
	}
	d += ": the database's load, slow statements and pool timeouts that follow are the stampede's consequence, not a fault of the database"
	if h.fact("ttl") == "" {
		d += ". What wrote the keys together (a warm-up after a restart or flush, a bulk load) was not read: look for a write one TTL before the expiry"
	}
	return d
}

// keysCounted is "420517 keys" from a count, "" without one.
func keysCounted(n, what string) string {
	if n == "" {
		return ""
	}
	return n + " " + what
}
