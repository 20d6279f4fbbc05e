package localize

import (
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
)

var errorHandlerRE = regexp.MustCompile(`(?i)(^|[.:/ ])error$|errorcontroller|errorhandler|exceptionhandler`)

// ErrorHandlerSpan reports whether a span name is a framework's error path
// (Spring's BasicErrorController.error, an "error" handler): where a tracer
// records no status, a request that failed still shows as such a span.
func ErrorHandlerSpan(name string) bool { return errorHandlerRE.MatchString(name) }

// MinTraceVisits is the fewest visits of a service in a bin for its span
// self-time percentile to count: a p90 of a handful of visits is noise,
// not a level.
const MinTraceVisits = 5

// TraceSeries turns the service call graphs of consecutive bins into the
// series localization ranks: per service its exclusive (self) time p90 and
// its share of requests with an error span (the lower bound of the 95%
// Wilson interval: one failed request of one is not a service failing
// every request), per call edge the calls per trace (a caller that stopped
// or started calling a service: the caller's own behaviour), and the entry
// service's request duration p90; with the call edges seen.
func TraceSeries(graphs []*tracegraph.Graph, entry string) ([]Series, []Edge) {
	type key struct{ svc, metric string }
	series := map[key]*Series{}
	var order []key
	add := func(k key, sig Signal, unit string, bad Direction, p evidence.Point) {
		s := series[k]
		if s == nil {
			s = &Series{Service: k.svc, Metric: k.metric, Signal: sig, Unit: unit, Bad: bad}
			series[k] = s
			order = append(order, k)
		}
		s.Points = append(s.Points, p)
	}
	seen := map[Edge]bool{}
	var edges []Edge
	visits := map[key][]float64{} // visits per bin behind each percentile
	for _, gr := range graphs {
		t := gr.Window.Start
		for _, st := range gr.Services {
			if st.Requests == 0 {
				continue
			}
			if st.Requests >= MinTraceVisits {
				k := key{st.Service, "span self time p90"}
				add(k, SignalTraceLat, "s", Up, evidence.Point{T: t, V: st.SelfTime.P90.Seconds()})
				visits[k] = append(visits[k], float64(st.Requests))
			}
			add(key{st.Service, "error spans per request (lower bound)"}, SignalTraceErr, "ratio", Up, evidence.Point{T: t, V: WilsonLower(st.ErrorSpans, st.Requests)})
			if strings.EqualFold(st.Service, entry) {
				add(key{st.Service, "request duration p90 (traces)"}, SignalLatency, "s", Up, evidence.Point{T: t, V: st.Duration.P90.Seconds()})
			}
		}
		for _, e := range gr.Edges {
			if e.Caller == "" || e.Callee == "" || e.Caller == e.Callee {
				continue
			}
			if le := (Edge{Caller: e.Caller, Callee: e.Callee}); !seen[le] {
				seen[le] = true
				edges = append(edges, le)
			}
			if gr.Traces > 0 {
				add(key{e.Caller, "calls to " + e.Callee + " per trace"}, SignalTraceOps, "", Both, evidence.Point{T: t, V: float64(e.Calls) / float64(gr.Traces)})
			}
		}
	}
	out := make([]Series, 0, len(order))
	for _, k := range order {
		s := series[k]
		if v := visits[k]; len(v) > 0 {
			// A p90 over a handful of visits is its slowest one or two.
			s.PerBin = analysis.Median(v)
		}
		out = append(out, *s)
	}
	return out, edges
}
