package analyst

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
)

// KindSlowPeer: a dependency outside the traced services (a third-party
// API, a managed database, a SaaS endpoint) whose calls slowed, timed by
// its callers' CLIENT spans (OpenTelemetry's peer.service, server.address
// or net.peer.name name it; it sends no spans of its own). When the time
// its calls gained is most of what the asked service's requests gained,
// it is the answer to "is it us?": no change of ours shows on that call,
// and a deploy of the asked service near the onset is a coincidence,
// since the asked service's own calls to the other services are unchanged.
const KindSlowPeer Kind = "slow_peer"

var slowPeer = &mechanism{
	kind:  KindSlowPeer,
	class: classDependency,
	label: "an outside dependency's calls slowed (its callers' client spans)",
	// Only a change to how the caller calls the dependency (its client,
	// its endpoint, its timeout) triggers it; any other change is a
	// coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return c.Subject == h.fact("caller") && strings.Contains(t, strings.ToLower(h.Subject))
	},
	// The asked service's and the callers' latency are what the slow
	// calls cost them.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind != KindLatency && f.Kind != KindSlowOperation && f.Kind != KindTimeout {
			return false
		}
		return f.Subject == h.fact("caller") || f.Subject == h.fact("asked") ||
			strings.Contains(strings.ToLower(f.Summary+" "+f.fact("line")), strings.ToLower(h.Subject))
	},
	describe: describeSlowPeer,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		caller := orWord(h.fact("caller"), "its callers")
		r.high("Take it up with %s (its status page, support) and meanwhile bound its cost: a tight timeout, a cache of its answers, or a fallback in %s", h.Subject, caller)
		r.med("Keep %s's answers in a cache in %s so that a slow provider costs only the misses; consider a second provider", h.Subject, caller)
		r.low("Alert on the p90 of %s's calls to %s (its client spans or a probe) apart from %s's own latency", caller, h.Subject, orWord(h.fact("asked"), caller))
	},
}

// describeSlowPeer says which outside call took the time, against the
// asked service's requests and its other calls.
func describeSlowPeer(h *Hypothesis, sc Scope) string {
	caller := orWord(h.fact("caller"), "its caller")
	d := fmt.Sprintf("%s, a dependency outside the traced services, answers slowly: %s's calls to it take %s (p50; p90 %s), up from %s before %s",
		h.Subject, caller, orWord(h.fact("now"), "longer"), orWord(h.fact("now_p90"), "?"), orWord(h.fact("before"), "less"), orWord(h.fact("since"), "the onset"))
	if a := h.fact("asked"); a != "" && a != caller {
		d += fmt.Sprintf("; %s calls %s (%s)", a, caller, h.fact("path"))
	}
	if a := h.fact("asked"); a != "" {
		d += fmt.Sprintf(", and the time these calls gained (%s) is %s of what %s's requests gained (%s, from %s to %s)", h.fact("delta"), h.fact("share"), a, h.fact("asked_delta"), h.fact("asked_before"), h.fact("asked_now"))
	}
	d += h.wrapped("; its other calls are unchanged (", "others", "): the time is lost on this one outside call")
	return d
}

// Thresholds of a slowed outside call: its median at least doubled and
// grew by a fifth of a second, over enough calls on both sides.
const (
	peerMinCalls = 5
	peerMinRise  = 200 * time.Millisecond
	peerMinShare = 0.5
)

// gatherSlowPeers builds the call graph of the traces in the baseline and
// the window (and in bins of the window, for the onset) when the question
// is about latency, and finds the outside dependencies whose calls slowed.
func (g *gatherer) gatherSlowPeers(ctx context.Context) []Finding {
	if g.src == nil || g.src.Traces == nil || ctx.Err() != nil {
		return nil
	}
	if !matchLine(durationAskRE, g.sc.Message+" "+g.sc.Hint+" "+g.sc.Alert) {
		return nil
	}
	w := g.sc.Window
	if !w.BaselineStart.Before(w.Start) || !w.Start.Before(w.End) {
		return nil
	}
	wins := []tracegraph.Window{{Start: w.BaselineStart, End: w.Start}, {Start: w.Start, End: w.End}}
	step := max(w.End.Sub(w.Start)/24, time.Minute)
	for t := w.Start; t.Before(w.End); t = t.Add(step) {
		wins = append(wins, tracegraph.Window{Start: t, End: t.Add(step)})
	}
	graphs, err := tracegraph.Build(ctx, g.src.Traces, wins...)
	if err != nil || len(graphs) < 2 {
		return nil
	}
	return slowPeers(graphs[0], graphs[1], graphs[2:], g.sc)
}

// slowPeers compares the outside calls of the window with the baseline's.
func slowPeers(base, now *tracegraph.Graph, bins []*tracegraph.Graph, sc Scope) []Finding {
	if base == nil || now == nil {
		return nil
	}
	edgeOf := func(gr *tracegraph.Graph, caller, callee string) *tracegraph.EdgeStats {
		for i := range gr.Edges {
			if gr.Edges[i].Caller == caller && gr.Edges[i].Callee == callee {
				return &gr.Edges[i]
			}
		}
		return nil
	}
	svcOf := func(gr *tracegraph.Graph, name string) *tracegraph.ServiceStats {
		for i := range gr.Services {
			if gr.Services[i].Service == name {
				return &gr.Services[i]
			}
		}
		return nil
	}
	var out []Finding
	for _, e := range now.Edges {
		if !e.Peer || e.Calls < peerMinCalls {
			continue
		}
		b := edgeOf(base, e.Caller, e.Callee)
		if b == nil || b.Calls < peerMinCalls {
			continue
		}
		delta := e.Latency.P50 - b.Latency.P50
		if e.Latency.P50 < 2*b.Latency.P50 || delta < peerMinRise {
			continue
		}
		// The asked service, and the chain of calls from it to the caller.
		asked := sc.Service
		if asked == "" {
			asked = e.Caller
		}
		path := callPath(now, asked, e.Caller)
		if path == nil {
			continue
		}
		sb, sn := svcOf(base, asked), svcOf(now, asked)
		if sb == nil || sn == nil || sn.Duration.P50 <= sb.Duration.P50 {
			continue
		}
		askedDelta := sn.Duration.P50 - sb.Duration.P50
		share := min(1, float64(delta)/float64(askedDelta))
		if share < peerMinShare {
			continue
		}
		f := Finding{Kind: KindSlowPeer, Subject: e.Callee, Object: "calls of " + e.Caller + " to " + e.Callee, Namespace: sc.Namespace,
			Time: sc.Window.Start, Severity: SevCritical, Weight: 0.75, Source: SrcMetrics, Related: []string{e.Caller}}
		if asked != e.Caller {
			f.Related = append(f.Related, asked)
		}
		if share >= 0.7 {
			f.Weight = 0.9
		}
		// The onset: the first bin whose calls took half the gain.
		for _, g := range bins {
			if be := edgeOf(g, e.Caller, e.Callee); be != nil && be.Calls > 0 && be.Latency.P50 >= b.Latency.P50+delta/2 {
				f.Time = g.Window.Start
				break
			}
		}
		f.setFact("caller", e.Caller)
		f.setFact("asked", asked)
		f.setFact("path", strings.Join(append(path, e.Callee), " → "))
		f.setFact("before", msText(b.Latency.P50))
		f.setFact("now", msText(e.Latency.P50))
		f.setFact("now_p90", msText(e.Latency.P90))
		f.setFact("delta", msText(delta))
		f.setFact("since", ts(f.Time))
		f.setFact("share", fmt.Sprintf("%.0f%%", 100*share))
		f.setFact("asked_before", msText(sb.Duration.P50))
		f.setFact("asked_now", msText(sn.Duration.P50))
		f.setFact("asked_delta", msText(askedDelta))
		// The other calls along the path, unchanged: not the cause.
		var others []string
		for _, svc := range path {
			for _, oe := range now.Edges {
				if oe.Caller != svc || oe.Callee == e.Callee || slicesContainsStr(path, oe.Callee) {
					continue
				}
				if ob := edgeOf(base, oe.Caller, oe.Callee); ob != nil && ob.Calls >= peerMinCalls && oe.Latency.P50-ob.Latency.P50 < delta/5 {
					others = append(others, fmt.Sprintf("%s → %s %s, was %s", oe.Caller, oe.Callee, msText(oe.Latency.P50), msText(ob.Latency.P50)))
				}
			}
		}
		sort.Strings(others)
		f.setFact("others", strings.Join(others, "; "))
		f.Summary = fmt.Sprintf("%s's calls to %s take %s (p50), up from %s: %s of what %s's requests gained", e.Caller, e.Callee, msText(e.Latency.P50), msText(b.Latency.P50), f.fact("share"), asked)
		f.Evidence = []string{
			fmt.Sprintf("client spans of %s calling %s: p50 %s → %s, p90 %s → %s (%d calls in the window, %d before)", e.Caller, e.Callee, msText(b.Latency.P50), msText(e.Latency.P50), msText(b.Latency.P90), msText(e.Latency.P90), e.Calls, b.Calls),
			fmt.Sprintf("requests of %s (traces): p50 %s → %s; the calls to %s account for %s of the rise", asked, msText(sb.Duration.P50), msText(sn.Duration.P50), e.Callee, f.fact("share")),
		}
		if len(others) > 0 {
			f.Evidence = append(f.Evidence, "unchanged calls: "+f.fact("others"))
		}
		out = append(out, f)
	}
	return out
}

// callPath is the chain of services from one to another along the
// window's calls (nil when to is not reached).
func callPath(gr *tracegraph.Graph, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s == to {
			var path []string
			for x := to; x != ""; x = prev[x] {
				path = append([]string{x}, path...)
			}
			return path
		}
		for _, e := range gr.Edges {
			if _, seen := prev[e.Callee]; e.Caller == s && !e.Peer && !seen {
				prev[e.Callee] = s
				queue = append(queue, e.Callee)
			}
		}
	}
	return nil
}

func slicesContainsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// msText writes a call's time: "119 ms", "2.56 s".
func msText(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
