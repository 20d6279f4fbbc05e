package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Job stopped at its deadline (DeadlineExceeded) did not fail: it ran
// too long. Its own log says where the time went: the lines reporting the
// longest durations (a call the run itself calls slow first) name the slow
// operation, the URLs the run's lines name are what it calls, and a change
// to one of those, shortly before or during the run, is why it slowed.

var (
	// Hosts of the URLs a run's lines name (its source, its target).
	urlHostRE = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://(?:[^@/\s"']*@)?([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])`)
	// Words of a slow-operation line that may name the system called
	// ("opensearch bulk request slow").
	slowWordRE = regexp.MustCompile(`(?i)\bslow\b`)
	nameWordRE = regexp.MustCompile(`[a-z][a-z0-9]{4,}`)
)

// deadlineSlowBar is the least duration a line of a run stopped at its
// deadline must report to say where its time went.
const deadlineSlowBar = 2.0

// explainDeadline adds to a Job finding stopped at its deadline the slow
// operation its run's log reports and the change to what it calls.
func explainDeadline(f *Finding, sets []LogSet, names []string, changes []evidence.Change, start time.Time) {
	var line string
	var hi, lo float64
	bestSlow := false
	var hosts []string
	var words []string
	for i := range sets {
		set := &sets[i]
		if !containsFold(names, set.Subject) && !containsFold(names, set.Source) {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(urlHostRE, l, -1) {
					if h := strings.ToLower(m[1]); !containsFold(hosts, h) && h != "localhost" {
						hosts = append(hosts, h)
					}
				}
			}
			dE, okE := lineDuration(t.Example)
			dL, okL := lineDuration(t.Last)
			if !okE && !okL {
				continue
			}
			d, l := dE, t.Example
			if dL > dE {
				d, l = dL, t.Last
			}
			if d < deadlineSlowBar {
				continue
			}
			slow := matchLine(slowWordRE, l)
			if slow && !bestSlow || slow == bestSlow && d > hi {
				bestSlow, hi, line = slow, d, l
				lo = 0
				if okE && okL && min(dE, dL) < d/3 {
					lo = min(dE, dL)
				}
			}
		}
	}
	if line == "" {
		return
	}
	f.setFact("slow_line", line)
	f.setFact("slow_max", seconds(hi))
	ev := fmt.Sprintf("the run's log reports calls taking up to %s", seconds(hi))
	if lo > 0 {
		f.setFact("slow_typical", seconds(lo))
		ev += fmt.Sprintf(" (%s at first)", seconds(lo))
	}
	f.Evidence = append(f.Evidence, ev+": "+quote(ReadableLine(line), 240))
	if len(hosts) > 0 {
		f.setFact("calls", strings.Join(hosts, ", "))
	}
	for _, w := range findAllString(nameWordRE, strings.ToLower(line), -1) {
		if !commonWords[w] {
			words = append(words, w)
		}
	}
	// A change to what the run calls, from six hours before the run to its
	// end: the dependency named by a host, or by the slow line's words.
	var best *evidence.Change
	for i := range changes {
		c := &changes[i]
		svc := strings.ToLower(c.Service)
		if svc == "" || containsFold(names, svc) || c.Timestamp.After(f.Time) || !start.IsZero() && c.Timestamp.Before(start.Add(-6*time.Hour)) {
			continue
		}
		hit := false
		for _, h := range hosts {
			if strings.Contains(h, svc) {
				hit = true
			}
		}
		desc := strings.ToLower(c.Description)
		for _, w := range words {
			if strings.Contains(desc, w) || strings.Contains(svc, w) {
				hit = true
			}
		}
		if hit && (best == nil || c.Timestamp.After(best.Timestamp)) {
			best = c
		}
	}
	if best != nil {
		f.setFact("dep_change", fmt.Sprintf("%s change of %s at %s: %q", changeKindWords(best.Kind), best.Service, ts(best.Timestamp), best.Description))
		f.setFact("dep_changed", strings.ToLower(best.Service))
		f.Evidence = append(f.Evidence, f.fact("dep_change"))
		if !containsFold(f.Related, best.Service) {
			f.Related = append(f.Related, strings.ToLower(best.Service))
		}
	}
}

// describeDeadline says where a run stopped at its deadline lost its time.
func describeDeadline(h *Hypothesis) string {
	l := h.fact("slow_line")
	if l == "" {
		return ""
	}
	d := fmt.Sprintf("; it ran out of time because its calls slowed: its log reports calls taking up to %s", h.fact("slow_max"))
	if t := h.fact("slow_typical"); t != "" {
		d += fmt.Sprintf(" (%s at first)", t)
	}
	d += ": " + quote(ReadableLine(l), 200)
	d += h.clause("; it calls ", "calls")
	d += h.clause("; what it calls changed: the ", "dep_change")
	return d
}

// commonWords are words of log lines that name no system.
var commonWords = map[string]bool{"request": true, "requests": true, "query": true, "queries": true, "items": true, "status": true, "errors": true,
	"error": true, "false": true, "true": true, "threshold": true, "took": true, "warning": true, "reindex": true, "batch": true, "write": true,
	"update": true, "insert": true, "select": true, "docs": true, "documents": true, "progress": true, "shard": true, "index": true, "calls": true}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if s != "" && strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// changeKindWords names a change's kind as the timeline does.
func changeKindWords(kind string) string {
	switch kind {
	case "infra":
		return "infrastructure"
	case "feature_flag":
		return "feature flag"
	}
	return kind
}
