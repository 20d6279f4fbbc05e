package analyst

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/localize"
	"github.com/rootcause/rootcause/agent/tools"
	corev1 "k8s.io/api/core/v1"
)

// KindLocalized is a fault localized to a service (or node) other than, or
// including, the one asked about: the subject whose own signals began to
// deviate when the symptom did (see package localize).
const KindLocalized Kind = "localized_fault"

func init() {
	kinds[KindLocalized] = kindInfo{0.5, classCause, "fault localized to this service (its own signals changed first)"}
}

// Bounds on what localization reads.
const (
	locMaxMetricNames = 40
	// locMaxListPages bounds the pages of series listing read.
	locMaxListPages  = 10
	locMaxCandidates = 5
	locMaxNodes      = 2
	// locMaxLogWorkloads bounds the workloads whose logs localization
	// reads beyond those the log gatherer read.
	locMaxLogWorkloads = 100
)

// localize ranks every service and node by when and how much its own
// signals deviated (metrics through prometheus_query_range, the pod log
// templates already mined, the call graph from mesh metrics) and returns
// findings for the strongest candidates, plus one for the asked service's
// own latency or errors when they moved (so the verdict is never
// "healthy" then). It runs only when the question names a service. A
// subject for which a detector already found a specific mechanism (an OOM
// kill, a bad certificate, a failing probe...) gets no localization
// finding: the mechanism says more than where.
func (g *gatherer) localize(ctx context.Context, plan []specialist, found []Finding) []Finding {
	sc := g.sc
	if sc.Service == "" || ctx.Err() != nil {
		return found
	}
	specific := map[string]bool{}
	victim := map[string]bool{}
	for _, f := range found {
		i := infoOf(f.Kind)
		if i.class != classSymptom && i.class != classChange && i.prior >= 0.5 {
			specific[strings.ToLower(f.Subject)] = true
		}
		// A caller whose calls to a dependency fail is where the failure
		// is seen more often than where it starts.
		if i.class == classDependency && f.fact("caller") != "" && !strings.EqualFold(f.fact("caller"), f.Subject) {
			victim[strings.ToLower(f.fact("caller"))] = true
		}
	}
	in := localize.Input{Entry: sc.Service, Window: localize.Window{BaselineStart: sc.Window.BaselineStart, Start: sc.Window.Start, End: sc.Window.End}}
	in.Metrics, in.Step = g.localizeMetrics(ctx, plan)
	if in.Step <= 0 {
		in.Step = time.Minute
	}
	// Spans first: the logs read next are joined to them as they are read.
	join := newSpanJoin()
	traceSeries, traceEdges := g.localizeTraces(ctx, in.Window, join)
	// A log file named after a service (a host log source) is read when
	// that service is one the metrics or traces know.
	known := map[string]bool{}
	for _, s := range append(slices.Clone(in.Metrics), traceSeries...) {
		known[strings.ToLower(s.Service)] = true
	}
	for _, e := range traceEdges {
		known[strings.ToLower(e.Callee)], known[strings.ToLower(e.Caller)] = true, true
	}
	in.Logs = g.localizeLogs(ctx, plan, join, known)
	in.Metrics = append(in.Metrics, traceSeries...)
	in.Edges = append(in.Edges, traceEdges...)
	in.Ops = g.localizeOps(ctx, plan, join)
	seenEdge := map[localize.Edge]bool{}
	for _, e := range in.Edges {
		seenEdge[e] = true
	}
	for _, s := range in.Metrics {
		if s.Caller != "" && s.Service != "" {
			e := localize.Edge{Caller: s.Caller, Callee: s.Service}
			if !seenEdge[e] {
				seenEdge[e] = true
				in.Edges = append(in.Edges, e)
			}
		}
	}
	if len(in.Metrics) == 0 && len(in.Logs) == 0 {
		return found
	}
	res := localize.Rank(in)
	// Onset, not loudness, for the other detectors too: a generic
	// symptom (latency, errors, saturation) of a subject whose deviation
	// began well before the symptom, or was over by then, is an earlier
	// episode's tail and weighs half.
	examined, nodes := map[string]bool{}, map[string]bool{}
	for _, s := range in.Metrics {
		examined[strings.ToLower(s.Service)] = true
		if s.Service == "" && s.Node != "" {
			nodes[strings.ToLower(s.Node)] = true
		}
	}
	for _, l := range in.Logs {
		examined[strings.ToLower(l.Service)] = true
	}
	timing := map[string]localize.Candidate{}
	for _, c := range res.Candidates {
		timing[strings.ToLower(c.Subject)] = c
	}
	// A generic symptom of a service that localization, which read the
	// same signals against their own noise and the symptom's onset, did
	// not rank at all (the move was a fall where only a rise means
	// trouble, a one-bin blip, or too small for the series) weighs half
	// too.
	for i := range found {
		f := &found[i]
		if k := f.Kind; strings.EqualFold(f.Subject, sc.Service) || k != KindLatency && k != KindErrorRate && k != KindSaturation && k != KindLogErrors {
			continue
		}
		c, ok := timing[strings.ToLower(f.Subject)]
		switch {
		case ok && (c.Timing == localize.TimingBefore || c.Timing == localize.TimingEnded):
			f.Weight *= 0.5
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: its deviation began at %s, %s (%s)", f.Subject, c.Onset.UTC().Format("15:04"), c.Timing, hm(res.SymptomOnset)))
		case !ok && len(res.Candidates) > 0 && (examined[strings.ToLower(f.Subject)] || nodes[strings.ToLower(f.Subject)]):
			// A node's own series too: a node whose CPU localization did
			// not rank moved within its own noise (its routine jumps).

			f.Weight *= 0.5
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: none of its own signals deviated from its own noise with the symptom (%s)", f.Subject, hm(res.SymptomOnset)))
		case ok && examined[strings.ToLower(f.Subject)]:
			// Localization weighed the same signals against their
			// noise: a generic symptom weighs no more than its verdict.
			f.Weight = math.Min(f.Weight, locWeight(c.Score))
		}
	}
	below, above := reachable(in.Edges, sc.Service, false), reachable(in.Edges, sc.Service, true)
	out := found
	// Up to locMaxCandidates services and locMaxNodes nodes: a node seen
	// under two names, or a few nodes sharing one burst, do not crowd the
	// services out.
	emitted := map[localize.Level]int{}
	withOnset := false // a candidate emitted began with the symptom
	for i, c := range res.Candidates {
		if c.Score < 20 {
			break
		}
		if c.Timing == localize.TimingEnded {
			continue // over before the symptom: it explains nothing now
		}
		if limit := locMaxCandidates; c.Level == localize.LevelNode && emitted[c.Level] >= locMaxNodes || emitted[c.Level] >= limit {
			continue
		}
		// The asked service itself is what the other detectors examine
		// already; localization speaks when the origin is elsewhere.
		if specific[strings.ToLower(c.Subject)] || strings.EqualFold(c.Subject, sc.Service) {
			continue
		}
		// The ranking's order holds: a runner-up weighs less than the
		// leader whatever corroboration the reasoner adds. A caller whose
		// calls to a dependency fail is left to the dependency findings.
		w := locWeight(c.Score)
		if len(out) > len(found) {
			w *= 0.6
		}
		if victim[strings.ToLower(c.Subject)] {
			continue
		}
		f := Finding{Kind: KindLocalized, Subject: c.Subject, Namespace: sc.Namespace, Time: c.Onset,
			Severity: SevWarning, Weight: w, Source: locSource(c.Signal)}
		if c.Level == localize.LevelNode {
			f.Object = "node " + c.Subject
		} else {
			f.Object = "service " + c.Subject
		}
		f.Summary = c.Explanation
		f.Evidence = append(f.Evidence, c.Evidence...)
		if len(out) == len(found) && c.Level == localize.LevelService {
			// The leader names the runners-up, so that whoever reads the
			// root cause sees the next places to look before the
			// consequences.
			if next := nextSuspects(res.Candidates[i+1:], sc.Service); next != "" {
				f.Summary += "; next suspects: " + next
				f.Evidence = append(f.Evidence, "next suspects: "+next)
			}
		}
		// A caller's fault does not explain its callee: a fault upstream
		// of the asked service (what calls it, directly or through
		// others) and not also below it is not linked to it; when the
		// asked service's own signals did not move either, it is a
		// failure nearby.
		switch {
		case strings.EqualFold(c.Subject, sc.Service):
		case above[strings.ToLower(c.Subject)] && !below[strings.ToLower(c.Subject)]:
			if !res.EntryMoved {
				f.setFact("nearby", sc.Service)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s calls %s, whose own latency and error signals did not move", c.Subject, sc.Service))
			}
		default:
			f.Related = []string{sc.Service}
			f.setFact("caller", sc.Service)
		}
		f.setFact("signal", string(c.Signal))
		f.setFact("score", fmt.Sprintf("%.0f", c.Score))
		out = append(out, f)
		emitted[c.Level]++
		withOnset = withOnset || c.Timing == localize.TimingWith
	}
	// The asked service's latency or errors being up is the symptom, and
	// localization names where its current episode comes from. When the
	// asked service's own signals moved, its current episode began at the
	// symptom's onset: a latency or error finding of it dated before that
	// (a deviation that began and settled before, or a build-up from
	// before the window) is an earlier episode's tail, and weighs half
	// against a candidate that began with the current episode. The
	// current episode itself is the finding added below.
	if res.EntryMoved && withOnset {
		for i := range out[:len(found)] {
			f := &out[i]
			if !strings.EqualFold(f.Subject, sc.Service) || f.Kind != KindLatency && f.Kind != KindErrorRate || f.Time.IsZero() || !f.Time.Before(res.SymptomOnset.Add(-2*in.Step)) {
				continue
			}
			f.Weight *= 0.5
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: this deviation began at %s, before its current episode (%s): an earlier episode's tail", f.Subject, f.Time.UTC().Format("15:04"), hm(res.SymptomOnset)))
		}
	}
	if !res.EntryMoved && withOnset && examined[strings.ToLower(sc.Service)] {
		for i := range out[:len(found)] {
			f := &out[i]
			if !strings.EqualFold(f.Subject, sc.Service) || f.Kind != KindLatency && f.Kind != KindErrorRate {
				continue
			}
			f.Weight *= 0.5
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: none of its own latency and error series held a deviation beyond its own noise with the symptom (%s)", f.Subject, hm(res.SymptomOnset)))
		}
	}
	// The asked service's own episode that localization explained by a
	// service it calls, and emitted, is that service's consequence: the
	// finding for that service keeps the verdict from "healthy", and the
	// asked service's episode is not added as a symptom of its own (where
	// it would support a change to the asked service).
	if res.EntryMoved && !(res.EntryExplainedBy != "" && emittedSubject(out[len(found):], res.EntryExplainedBy)) {
		out = append(out, Finding{Kind: KindLatency, Subject: sc.Service, Object: "service " + sc.Service, Namespace: sc.Namespace,
			Time: res.SymptomOnset, Severity: SevWarning, Weight: 0.8, Source: SrcMetrics,
			Summary: res.EntryEvidence, Evidence: []string{res.EntryEvidence}})
	}
	return out
}

// emittedSubject reports whether one of the findings is about subject.
func emittedSubject(fs []Finding, subject string) bool {
	for _, f := range fs {
		if strings.EqualFold(f.Subject, subject) {
			return true
		}
	}
	return false
}

// reachable returns, lower-cased, every service service calls, directly
// or through others, along the call edges; with up, every service that
// calls it.
func reachable(edges []localize.Edge, service string, up bool) map[string]bool {
	next := map[string][]string{}
	for _, e := range edges {
		from, to := strings.ToLower(e.Caller), strings.ToLower(e.Callee)
		if up {
			from, to = to, from
		}
		next[from] = append(next[from], to)
	}
	seen := map[string]bool{}
	queue := []string{strings.ToLower(service)}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range next[n] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return seen
}

// locWeight maps a localization score (0-100) to a finding's weight.
func locWeight(score float64) float64 { return math.Min(1, math.Sqrt(math.Max(0, score)/100)) }

// nextSuspects names up to two runner-up services (not the asked one),
// with their signal and score.
func nextSuspects(cs []localize.Candidate, asked string) string {
	var parts []string
	for _, c := range cs {
		if len(parts) >= 2 || c.Score < 20 {
			break
		}
		if c.Level != localize.LevelService || c.Timing == localize.TimingEnded || strings.EqualFold(c.Subject, asked) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s, score %.0f)", c.Subject, c.Signal, c.Score))
	}
	return strings.Join(parts, ", ")
}

func locSource(s localize.Signal) string {
	if s == localize.SignalLogs || s == localize.SignalOpEvents {
		return SrcLogs
	}
	return SrcMetrics
}

// localizeLogs turns the pod log templates already mined per workload
// (and those of log files named after a service it knows) into
// localization input, first reading the logs of the workloads the
// log gatherer left out (it reads a bounded number of pods, most suspect
// first; localization needs every service's own logs).
func (g *gatherer) localizeLogs(ctx context.Context, plan []specialist, join *spanJoin, known map[string]bool) []localize.LogTemplate {
	sets := slices.Clone(g.logSets)
	have := map[string]bool{}
	for _, set := range sets {
		have[set.Namespace+"/"+set.Subject] = true
	}
	var sp *specialist
	for i := range plan {
		if plan[i].run.Has("get_pod_logs") {
			sp = &plan[i]
			break
		}
	}
	if sp != nil && g.haveK8s["list_pods"] {
		w := g.sc.Window
		since, until := g.window()
		miners := map[string]*analysis.Miner{}
		var order []string
		for i := range g.k8s.Pods {
			p := &g.k8s.Pods[i]
			key := p.Namespace + "/" + WorkloadOfPod(p)
			if have[key] || ctx.Err() != nil || len(order) >= locMaxLogWorkloads || p.Status.StartTime == nil && p.Status.Phase == corev1.PodPending {
				continue
			}
			if g.sc.Namespace != "" && p.Namespace != g.sc.Namespace {
				continue
			}
			m := miners[key]
			if m == nil {
				m = analysis.NewMiner(w.BaselineStart, w.Start, w.End)
				miners[key] = m
				order = append(order, key)
			}
			out, ok := g.call(ctx, *sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": g.opts.PodLogLimit})
			if !ok {
				continue
			}
			lr, _ := as[*evidence.LogResult](out)
			if lr == nil {
				continue
			}
			join.read(p)
			var last time.Time
			for _, l := range lr.Lines {
				if !l.Time.IsZero() {
					last = l.Time
				}
				// The miner's tokens of the line serve the join too.
				if !last.IsZero() && m.Add(last, p.Name, l.Text) {
					join.AddLineTokens(l.Text, m.Tokens())
				} else {
					join.AddLine(l.Text)
				}
			}
		}
		for _, k := range order {
			ns, wl, _ := strings.Cut(k, "/")
			sets = append(sets, LogSet{Subject: wl, Namespace: ns, Origin: SrcLogs, Templates: miners[k].Templates()})
		}
	}
	var names []string
	for _, set := range sets {
		if len(set.Subject) >= 4 && !slices.Contains(names, strings.ToLower(set.Subject)) {
			names = append(names, strings.ToLower(set.Subject))
		}
	}
	for i := range g.k8s.Pods {
		if n := strings.ToLower(WorkloadOfPod(&g.k8s.Pods[i])); len(n) >= 4 && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []localize.LogTemplate
	for _, set := range sets {
		if set.Host && !known[strings.ToLower(set.Subject)] || set.Origin != SrcLogs || set.Subject == "" {
			continue
		}
		for _, t := range set.Templates {
			if len(t.PerMinute) == 0 {
				continue
			}
			lt := localize.LogTemplate{Service: set.Subject, Template: t.Template, Example: t.Example,
				Error: templateError(t), Counts: t.PerMinute}
			text := strings.ToLower(t.Example)
			for _, n := range names {
				if n != strings.ToLower(set.Subject) && strings.Contains(text, n) && !strings.Contains(strings.ToLower(set.Subject), n) {
					lt.Outbound = true
					break
				}
			}
			out = append(out, lt)
		}
	}
	return out
}

// templateError reports whether a mined template reads as an error: its
// text, or its first or last line. The miner folds a severity that varies
// into a variable (one message logged at INFO, then at ERROR, is one
// event), so the first line alone may carry the milder level.
func templateError(t analysis.LogTemplate) bool {
	return analysis.ErrorLike(t.Template) || analysis.ErrorLike(t.Example) || analysis.ErrorLike(t.Last)
}

// localizeTraces builds the service call graph of every bin of the window
// from the spans (one scan) and returns, per service, its exclusive (self)
// time p90 and its share of error spans per bin, per call edge the calls
// per trace (a caller that stopped or started calling a service: the
// caller's own behaviour), the entry service's latency, and the edges.
func (g *gatherer) localizeTraces(ctx context.Context, w localize.Window, join *spanJoin) ([]localize.Series, []localize.Edge) {
	if g.src == nil || g.src.Traces == nil || ctx.Err() != nil {
		return nil, nil
	}
	var wins []tracegraph.Window
	for t := w.BaselineStart.Truncate(w.Step); t.Before(w.End); t = t.Add(w.Step) {
		wins = append(wins, tracegraph.Window{Start: t, End: t.Add(w.Step)})
	}
	if len(wins) == 0 || len(wins) > 2000 {
		return nil, nil
	}
	b := tracegraph.NewBuilder(wins...)
	// Span names repeat: the error-handler test runs once per distinct
	// name (the callback runs on the scanning goroutine).
	errName := map[string]bool{}
	isErrName := func(name string) bool {
		v, ok := errName[name]
		if !ok {
			v = localize.ErrorHandlerSpan(name)
			if len(errName) < 10000 {
				errName[strings.Clone(name)] = v
			}
		}
		return v
	}
	err := g.src.Traces.ScanSpans(ctx, wins[0].Start, w.End, func(s *evidence.Span) error {
		join.Add(s)
		if !s.Error && isErrName(s.Name) {
			c := *s
			c.Error = true
			b.Add(&c)
			return nil
		}
		b.Add(s)
		return nil
	})
	if err != nil {
		g.gap("traces", err)
		return nil, nil
	}
	return localize.TraceSeries(b.Graphs(), g.sc.Service)
}

// locMetric says how a metric name is read for localization.
type locMetric struct {
	signal  localize.Signal
	unit    string
	bad     localize.Direction
	counter bool
	// mean marks a histogram's or summary's _sum, read with its _count
	// as the mean per request (rate of the sum over rate of the count).
	mean bool
}

// classifyLocMetric reads a metric name: latency, errors and success,
// CPU, memory, network and traffic, in the naming conventions of
// Prometheus exporters, cAdvisor, Istio, Linkerd and OpenTelemetry.
// Histogram buckets and scrape internals are skipped.
func classifyLocMetric(name string) (locMetric, bool) {
	n := strings.ToLower(name)
	if strings.HasSuffix(n, "_bucket") || strings.HasSuffix(n, "_created") || strings.HasPrefix(n, "scrape_") || strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") {
		return locMetric{}, false
	}
	counter := strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_count")
	has := func(ws ...string) bool {
		for _, w := range ws {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("success"):
		return locMetric{localize.SignalErrors, pctOr(n, ""), localize.Down, false, false}, true
	case has("error", "fail", "5xx", "exception"):
		u := pctOr(n, "")
		if counter {
			u = "/s"
		}
		return locMetric{localize.SignalErrors, u, localize.Up, counter, false}, true
	case has("latency", "duration", "response_time") || has("request", "http", "rpc") && has("_seconds_sum", "_seconds_count"):
		// A latency exposed only as a histogram or summary (OpenTelemetry's
		// http.server.request.duration, Micrometer's
		// http_server_requests_seconds): its _sum over its _count is the
		// mean per request, and its _count is the requests, by status
		// code when labelled so (a 5xx count is errors).
		switch {
		case strings.HasSuffix(n, "_count"):
			return locMetric{localize.SignalTraffic, "/s", localize.Both, true, false}, true
		case strings.HasSuffix(n, "_sum"):
			u := "s"
			if has("millisecond", "_ms") {
				u = "ms"
			}
			return locMetric{localize.SignalLatency, u, localize.Up, false, true}, true
		case strings.HasSuffix(n, "_max"):
			return locMetric{}, false // the slowest request of a bin: one request
		}
		u := "s"
		if has("millisecond", "_ms") {
			u = "ms"
		}
		return locMetric{localize.SignalLatency, u, localize.Up, false, false}, true
	case has("cpu"):
		if has("throttl", "period") {
			return locMetric{}, false
		}
		if strings.HasSuffix(n, "_seconds_total") {
			return locMetric{localize.SignalCPU, "cores", localize.Up, true, false}, true
		}
		return locMetric{localize.SignalCPU, pctOr(n, ""), localize.Up, counter, false}, true
	case has("memory"):
		u := pctOr(n, "")
		if has("bytes") {
			u = "bytes"
		}
		return locMetric{localize.SignalMemory, u, localize.Up, false, false}, true
	case has("network", "receive_bytes", "transmit_bytes"):
		u := ""
		if has("bytes") {
			u = "bytes/s"
		}
		return locMetric{localize.SignalNetwork, u, localize.Both, counter, false}, true
	case has("requests_total", "request_total", "_ops", "requests_count", "calls_total"):
		return locMetric{localize.SignalTraffic, "/s", localize.Both, counter, false}, true
	}
	return locMetric{}, false
}

func pctOr(n, other string) string {
	if strings.Contains(n, "percent") || strings.Contains(n, "ratio") && !strings.Contains(n, "bytes") {
		if strings.Contains(n, "ratio") {
			return ""
		}
		return "%"
	}
	return other
}

// Label names that carry the owner of a series.
var (
	locServiceLabels = []string{"service", "app", "application", "app_kubernetes_io_name", "deployment", "workload", "job_name"}
	locCalleeLabels  = []string{"destination_workload", "destination_app", "destination_service_name", "dst_deployment", "server_service_name"}
	locCallerLabels  = []string{"source_workload", "source_app", "deployment", "client_service_name"}
	locNodeLabels    = []string{"node", "kubernetes_node", "nodename"}
	locCodeLabels    = []string{"response_code", "status_code", "code", "http_response_status_code", "http_status_code"}
)

// localizeMetrics reads the metrics localization weighs, once per name,
// through the toolkit of the first specialist that can query them.
func (g *gatherer) localizeMetrics(ctx context.Context, plan []specialist) ([]localize.Series, time.Duration) {
	var sp *specialist
	for i := range plan {
		if plan[i].run.Has("prometheus_query_range") && plan[i].run.Has("list_metrics") {
			sp = &plan[i]
			break
		}
	}
	if sp == nil || !configured(g.src, "prometheus") {
		return nil, 0
	}
	since, until := g.window()
	labels := g.listAllMetrics(ctx, *sp, since, until)
	if len(labels) == 0 {
		return nil, 0
	}
	names := map[string]locMetric{}
	for _, l := range labels {
		n := l["__name__"]
		if _, seen := names[n]; seen || n == "" {
			continue
		}
		if m, ok := classifyLocMetric(n); ok && g.inScope(l) {
			names[n] = m
		}
	}
	order := make([]string, 0, len(names))
	for n := range names {
		order = append(order, n)
	}
	// Most telling signals first when the cap bites.
	rank := map[localize.Signal]int{localize.SignalLatency: 0, localize.SignalErrors: 0, localize.SignalCPU: 1, localize.SignalMemory: 2, localize.SignalNetwork: 2, localize.SignalTraffic: 3}
	sort.Slice(order, func(i, j int) bool {
		ri, rj := rank[names[order[i]].signal], rank[names[order[j]].signal]
		if ri != rj {
			return ri < rj
		}
		return order[i] < order[j]
	})
	if len(order) > locMaxMetricNames {
		order = order[:locMaxMetricNames]
	}
	total := g.sc.Window.End.Sub(g.sc.Window.BaselineStart)
	step := max(time.Minute, (total / 360).Truncate(time.Second))
	var series []localize.Series
	var intervals []float64
	for _, n := range order {
		if ctx.Err() != nil {
			break
		}
		out, ok := g.call(ctx, *sp, "prometheus_query_range", map[string]any{"query": n, "start": since, "end": until, "step": fmt.Sprintf("%ds", int(step.Seconds()))})
		if !ok {
			continue
		}
		ss, _ := as[[]evidence.Series](out)
		m := names[n]
		metric := n
		switch {
		case m.mean:
			base := strings.TrimSuffix(n, "_sum")
			cout, ok := g.call(ctx, *sp, "prometheus_query_range", map[string]any{"query": base + "_count", "start": since, "end": until, "step": fmt.Sprintf("%ds", int(step.Seconds()))})
			if !ok {
				continue
			}
			counts, _ := as[[]evidence.Series](cout)
			ss, metric = meanSeries(ss, counts), base+" (mean)"
		case m.counter:
			ss = analysis.RateSeries(ss)
		}
		for _, s := range ss {
			if !g.inScope(s.Labels) || len(s.Points) == 0 {
				continue
			}
			ls := localize.Series{Metric: metric, Signal: m.signal, Unit: m.unit, Bad: m.bad, Points: s.Points,
				Outbound: strings.Contains(strings.ToLower(n), "client")}
			// Requests answered with a 5xx (Istio's response_code,
			// Linkerd's status_code, OpenTelemetry's
			// http.response.status_code) are errors.
			if m.signal == localize.SignalTraffic {
				code := locLabel(s.Labels, locCodeLabels)
				if c := s.Labels["status"]; code == "" && len(c) == 3 && c[0] >= '1' && c[0] <= '5' {
					code = c // Micrometer's status label, when it holds an HTTP code
				}
				if len(code) == 3 && code[0] == '5' {
					ls.Signal, ls.Bad, ls.Metric = localize.SignalErrors, localize.Up, n+" ("+code+")"
					// A series of errors begins with the first error: before
					// it, the rate was zero.
					var zeros []evidence.Point
					for t := g.sc.Window.BaselineStart; len(ls.Points) > 0 && t.Before(ls.Points[0].T.Add(-step)); t = t.Add(step) {
						zeros = append(zeros, evidence.Point{T: t})
					}
					ls.Points = append(zeros, ls.Points...)
				} else if code != "" {
					continue // other codes: the traffic is counted by the series without one, or not at all
				}
			}
			if ls.Unit == "ms" {
				pts := make([]evidence.Point, len(s.Points))
				for i, p := range s.Points {
					pts[i] = evidence.Point{T: p.T, V: p.V / 1000}
				}
				ls.Points, ls.Unit = pts, "s"
			}
			callee := locLabel(s.Labels, locCalleeLabels)
			switch {
			case callee != "":
				ls.Service = callee
				ls.Caller = locLabel(s.Labels, locCallerLabels)
				if ls.Caller == callee {
					ls.Caller = ""
				}
			default:
				ls.Service = locLabel(s.Labels, locServiceLabels)
				ls.Pod = s.Labels["pod"]
				if ls.Service == "" && ls.Pod != "" {
					ls.Service = workloadOfName(ls.Pod)
				}
				if ls.Service == "" && ls.Pod == "" {
					ls.Node = locLabel(s.Labels, locNodeLabels)
					if ls.Node == "" && nodeExporterName(n) {
						ls.Node = hostOfInstance(s.Labels["instance"])
					}
				}
			}
			if ls.Service == "" && ls.Node == "" {
				continue
			}
			if iv := analysis.SampleInterval(s.Points); iv > 0 {
				intervals = append(intervals, iv.Seconds())
			}
			series = append(series, ls)
		}
	}
	binStep := step
	if len(intervals) > 0 {
		if iv := time.Duration(analysis.Median(intervals) * float64(time.Second)); iv > binStep {
			binStep = iv.Round(time.Second)
		}
	}
	return series, binStep
}

// listAllMetrics lists the series of the window. A listing is capped (in
// label-set order, so by name), and a system with many pods fills the cap
// with its first few names; the next page asks for the names not seen yet,
// until a page comes back short or brings no new name.
func (g *gatherer) listAllMetrics(ctx context.Context, sp specialist, since, until string) []evidence.Labels {
	var all []evidence.Labels
	seen := map[string]bool{}
	var names []string
	for page := 0; page < locMaxListPages && ctx.Err() == nil; page++ {
		args := map[string]any{"start": since, "end": until}
		if len(names) > 0 {
			quoted := make([]string, len(names))
			for i, n := range names {
				quoted[i] = regexp.QuoteMeta(n)
			}
			args["match"] = `{__name__=~".+",__name__!~"` + strings.Join(quoted, "|") + `"}`
		}
		out, ok := g.call(ctx, sp, "list_metrics", args)
		if !ok {
			break
		}
		ls, _ := as[[]evidence.Labels](out)
		fresh := 0
		for _, l := range ls {
			if n := l["__name__"]; n != "" && !seen[n] {
				seen[n] = true
				names = append(names, n)
				fresh++
			}
		}
		all = append(all, ls...)
		if len(ls) < tools.MaxLabelSets || fresh == 0 {
			break
		}
	}
	return all
}

// nodeExporterName reports whether a metric is node_exporter's, or a
// recording rule over it (instance:node_cpu_utilisation:rate5m): its
// instance label is the node.
func nodeExporterName(n string) bool {
	return strings.HasPrefix(n, "node_") || strings.HasPrefix(n, "instance:node_")
}

// hostOfInstance is an instance label without its port.
func hostOfInstance(v string) string {
	if h, p, ok := strings.Cut(v, ":"); ok && p != "" && strings.Trim(p, "0123456789") == "" {
		return h
	}
	return v
}

func locLabel(l evidence.Labels, keys []string) string {
	for _, k := range keys {
		if v := l[k]; v != "" && v != "unknown" {
			return v
		}
	}
	return ""
}

// inScope keeps series of the asked namespace (and those without one).
func (g *gatherer) inScope(l evidence.Labels) bool {
	if g.sc.Namespace == "" {
		return true
	}
	for _, k := range []string{"namespace", "destination_workload_namespace", "kubernetes_namespace"} {
		if v := l[k]; v != "" {
			return v == g.sc.Namespace
		}
	}
	return true
}

// spanJoin is localization's join of log lines to their spans
// (localize.SpanJoin) with the pods whose lines it joined already.
type spanJoin struct {
	*localize.SpanJoin
	readPods map[string]bool
}

func newSpanJoin() *spanJoin { return &spanJoin{SpanJoin: localize.NewSpanJoin()} }

// read records that a pod's lines were joined.
func (j *spanJoin) read(p *corev1.Pod) {
	if j == nil || j.Spans() == 0 {
		return
	}
	if j.readPods == nil {
		j.readPods = map[string]bool{}
	}
	j.readPods[p.Namespace+"/"+p.Name] = true
}

// wasRead reports whether a pod's lines were joined already.
func (j *spanJoin) wasRead(p *corev1.Pod) bool {
	return j != nil && j.readPods[p.Namespace+"/"+p.Name]
}

// localizeOps joins the pods' log lines to their spans and returns, per
// operation, what it logs and calls per call. Without indexed spans it
// reads nothing.
func (g *gatherer) localizeOps(ctx context.Context, plan []specialist, j *spanJoin) []localize.OpEvent {
	if j == nil || j.Spans() == 0 || ctx.Err() != nil {
		return nil
	}
	// Log lines carrying a span id.
	var sp *specialist
	for i := range plan {
		if plan[i].run.Has("get_pod_logs") {
			sp = &plan[i]
			break
		}
	}
	if sp != nil && g.haveK8s["list_pods"] {
		since, until := g.window()
		read := 0
		for i := range g.k8s.Pods {
			p := &g.k8s.Pods[i]
			if ctx.Err() != nil || read >= locMaxLogWorkloads {
				break
			}
			if p.Status.StartTime == nil && p.Status.Phase == corev1.PodPending || g.sc.Namespace != "" && p.Namespace != g.sc.Namespace {
				continue
			}
			if j.wasRead(p) {
				read++ // joined while localizeLogs read it
				continue
			}
			out, ok := g.call(ctx, *sp, "get_pod_logs", map[string]any{"namespace": p.Namespace, "pod": p.Name, "since": since, "until": until, "limit": g.opts.PodLogLimit})
			if !ok {
				continue
			}
			read++
			lr, _ := as[*evidence.LogResult](out)
			if lr == nil {
				continue
			}
			for _, l := range lr.Lines {
				j.AddLine(l.Text)
			}
		}
	}
	return j.OpEvents()
}
