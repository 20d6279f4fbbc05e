package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A caller's fan-out widened: a change to a service makes each of its
// requests call another service many times where it called it once (a
// per-item call in a loop instead of one batch call, a page size raised,
// an N+1 query pattern across services). The callee's load is multiplied
// by the new fan-out although the traffic did not change: it saturates,
// its autoscaler runs to its maximum, and the caller waits on its many
// calls. Read from the traces: localization measures per call edge the
// calls per root trace (agent/localize), and the callee's saturation (its
// autoscaler at maxReplicas, its CPU, its latency) is what the wider
// fan-out did. Adding capacity to the callee treats the consequence; the
// caller's change is the cause.

// KindFanOut is a caller calling a service many more times per request.
const KindFanOut Kind = "fan_out_widened"

// fanOutRE reads localization's calls-per-trace deviation of a call edge
// ("calls to reviews per trace of search rose from 1 to 48 at 14:19").
var fanOutRE = regexp.MustCompile(`calls to (\S+) per trace of (\S+) rose from (\d+(?:\.\d+)?) to (\d+(?:\.\d+)?)(?: at (\d\d:\d\d))?`)

// fanOutFactor is how many times more calls per request make a fan-out
// widened rather than a request mix that moved.
const fanOutFactor = 3.0

// fanOutLoad are the kinds of findings that show the callee loaded by the
// wider fan-out.
var fanOutLoad = map[Kind]bool{KindHPAMax: true, KindSaturation: true, KindLoadSurge: true, KindLatency: true, KindCPUThrottling: true}

var fanOut = &mechanism{
	kind:  KindFanOut,
	class: classCause,
	label: "fan-out widened (a caller calls a service many times per request)",
	// The callee's load and the caller's waits are what the fan-out did.
	related: func(h *Hypothesis, f *Finding) bool {
		callee := h.fact("callee")
		return callee != "" && f.Subject == callee && (fanOutLoad[f.Kind] || f.Kind == KindLocalized)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		callee := h.fact("callee")
		d := fmt.Sprintf("fan-out widened: each request of %s now calls %s %s times (per trace, %s before", h.Subject, callee, h.fact("to"), h.fact("from"))
		if at := h.fact("at"); at != "" {
			d += "; since " + at
		}
		d += fmt.Sprintf("), so every request brings ~%s× the calls it did to %s", h.fact("factor"), callee)
		if l := h.fact("load"); l != "" {
			d += fmt.Sprintf(": %s saturates (%s) and %s waits on its calls", callee, truncate(l, 240), h.Subject)
		}
		d += fmt.Sprintf("; more capacity for %s treats the consequence", callee)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		callee := h.fact("callee")
		r.rollback()
		r.high("Bring %s back to one call to %s per request (a batch call, a bounded page of items) or roll back the change that widened its fan-out", h.Subject, callee)
		r.med("Cap the concurrency and count of %s's calls to %s per request, and cache what they fetch, before adding replicas to %s", h.Subject, callee, callee)
		r.low("Alert on calls per request of each call edge (spans per trace) so a widened fan-out shows before its callee saturates")
	},
}

// fanOutWidened turns localization's calls-per-trace deviations of call
// edges (KindLocalized findings of the trace_calls signal) into fan-out
// findings on the caller, when the calls per request rose several times
// and the callee shows the load (its autoscaler at its maximum, its CPU,
// its latency). It runs after localization.
func fanOutWidened(found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i := range found {
		lf := &found[i]
		if lf.Kind != KindLocalized {
			continue
		}
		for _, text := range append([]string{lf.Summary}, lf.Evidence...) {
			m := findSubmatch(fanOutRE, text)
			if m == nil {
				continue
			}
			callee, caller := m[1], m[2]
			from, err1 := strconv.ParseFloat(m[3], 64)
			to, err2 := strconv.ParseFloat(m[4], 64)
			if err1 != nil || err2 != nil || from <= 0 || to < fanOutFactor*from || to < 3 || callee == caller || seen[caller+"/"+callee] {
				continue
			}
			var load []string
			for j := range found {
				g := &found[j]
				if g.Subject == callee && fanOutLoad[g.Kind] && g.Summary != "" && len(load) < 2 {
					load = append(load, g.Summary)
				}
			}
			if len(load) == 0 {
				continue
			}
			seen[caller+"/"+callee] = true
			f := Finding{Kind: KindFanOut, Subject: caller, Namespace: lf.Namespace, Object: "service " + caller, Time: lf.Time,
				Severity: SevCritical, Weight: 0.85, Source: lf.Source, Related: []string{callee}, Facts: map[string]string{}}
			f.setFact("callee", callee)
			f.setFact("from", m[3])
			f.setFact("to", m[4])
			f.setFact("at", m[5])
			f.setFact("factor", strconv.FormatFloat(to/from, 'f', 0, 64))
			f.setFact("load", strings.Join(load, "; "))
			f.Summary = fmt.Sprintf("%s calls %s %s times per request (%s before)", caller, callee, m[4], m[3])
			f.Evidence = append(f.Evidence, fmt.Sprintf("traces: calls to %s per trace of %s rose from %s to %s", callee, caller, m[3], m[4]))
			for _, l := range load {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s under the wider fan-out: %s", callee, l))
			}
			out = append(out, f)
		}
	}
	return out
}
