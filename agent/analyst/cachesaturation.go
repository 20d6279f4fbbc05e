package analyst

import (
	"fmt"
	"strings"

	"github.com/rootcause/rootcause/finding"
)

// A cache at maxmemory in an eviction storm: keys are evicted before they
// are read again, misses fall through to the backing store and its callers
// slow down.
var cacheFull = &mechanism{
	kind:       KindCacheFull,
	class:      classCause,
	label:      "cache at maxmemory (eviction storm, hit ratio falling)",
	fitsChange: func(h *Hypothesis, c *Finding) bool { return cacheChangeRE.MatchString(changeText(c)) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the cache %s is at maxmemory and in an eviction storm", s)
		var parts []string
		if u := h.fact("used_pct"); u != "" {
			parts = append(parts, "used memory at "+u+" of maxmemory")
		}
		if e := h.fact("evictions"); e != "" {
			parts = append(parts, "evicting ~"+e)
		}
		if r := h.fact("hit_ratio"); r != "" {
			parts = append(parts, "hit ratio "+r)
		}
		if len(parts) > 0 {
			d += " (" + strings.Join(parts, ", ") + ")"
		}
		d += ": keys are evicted before they are read again, so cache misses fall through to the backing store and slow the reads of its callers"
		if db := h.dbLoad; db != nil {
			d += fmt.Sprintf("; the database load rises with them (%s)", db.Summary)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Relieve the cache %s now: raise its maxmemory (or scale it out), or revert the change that made its entries larger or more numerous", s))
		r.add(finding.PriorityMedium, "Find what fills the cache (key sizes and counts by prefix: redis-cli --bigkeys / MEMORY USAGE) and set TTLs or smaller payloads; protect the database from miss storms (request coalescing)")
		r.add(finding.PriorityLow, "Alert on cache memory above 90% of maxmemory, on evicted keys per second and on the hit ratio")
	},
}
