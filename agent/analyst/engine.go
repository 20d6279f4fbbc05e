package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// Options tunes the analyst. Zero values take the defaults.
type Options struct {
	// MaxPodLogs bounds the pods whose logs are read (default 30).
	MaxPodLogs int
	// PodLogLimit is the lines read per pod (default 1000).
	PodLogLimit int
	// MaxMetrics bounds the metric names analysed (default 60).
	MaxMetrics int
	// MaxLogSources bounds the host log sources mined (default 20).
	MaxLogSources int
	// MaxDeploymentsHistory bounds get_rollout_history calls (default 15).
	MaxDeploymentsHistory int
}

func (o *Options) defaults() {
	if o.MaxPodLogs <= 0 {
		o.MaxPodLogs = 30
	}
	if o.PodLogLimit <= 0 {
		o.PodLogLimit = 1000
	}
	if o.MaxMetrics <= 0 {
		o.MaxMetrics = 60
	}
	if o.MaxLogSources <= 0 {
		o.MaxLogSources = 20
	}
	if o.MaxDeploymentsHistory <= 0 {
		o.MaxDeploymentsHistory = 15
	}
}

// Engine is the offline analyst.
type Engine struct {
	opts Options
}

var _ agent.Engine = (*Engine)(nil)

// New returns the offline analyst engine.
func New(opts Options) *Engine {
	opts.defaults()
	return &Engine{opts: opts}
}

// Specialists the planner can delegate to, in consultation order.
var specialists = []string{tools.AgentK8s, tools.AgentMetrics, tools.AgentAWS, tools.AgentCoding}

// specialist is one agent run the investigation consults.
type specialist struct {
	name string
	run  agent.Run
}

// Investigate runs an investigation: plan, gather, detect, reason, report.
func (e *Engine) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	env := run.Env()
	var src *evidence.Sources
	if env != nil {
		src = env.Sources
	}
	now := src.Clock()
	sc := ScopeOf(req, now)
	plan, notes := e.plan(req, run)
	g := newGatherer(e.opts, sc, src)
	total := len(plan)*2 + 2
	step := 0
	for _, sp := range plan {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, d := range g.domainsOf(sp) {
			run.Step(fmt.Sprintf("%s: collecting %s", sp.name, d), step, total)
			step++
			if step > total {
				total = step + 2
			}
			if err := g.gather(ctx, sp, d); err != nil {
				return nil, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if g.calls == 0 && g.unavailable != nil {
		return nil, g.unavailable
	}
	g.gatherClusterDNS(ctx, plan)
	g.gatherCNIAgents(ctx, plan)
	g.gatherCalledPods(ctx, plan)
	run.Step("analysing evidence", step, total)
	step++
	findings := g.detect()
	findings = g.localize(ctx, plan, findings)
	findings = append(findings, fanOutWidened(findings)...)
	findings = dropEntryWobble(findings, g.sc)
	findings = append(findings, g.gatherSlowPeers(ctx)...)
	findings = append(findings, g.gatherEdgeShutdown(ctx, plan)...)
	findings = append(findings, g.gatherWebhookBackend(ctx, plan)...)
	findings = append(findings, g.gatherRouteController(ctx, plan)...)
	findings = append(findings, g.gatherCSIPlugins(ctx, plan, findings)...)
	findings = append(findings, g.gatherStuckNamespaces(ctx, plan)...)
	findings = g.explainPortConflicts(ctx, findings)
	findings = append(findings, g.gatherMeshPolicy(ctx, plan, findings)...)
	findings = append(findings, e.askPeers(ctx, req, run, sc)...)
	sc.Known = g.knownNames()
	sc.Restarts = oldRestarts(g.k8s.Pods, sc.Service, sc.Window)
	sc.Removed = removedJobs(g.gathered(), sc)
	sc.Restarted = askedRestarted(g.k8s.Pods, sc.Message, sc.Window)
	sc.Nodes = g.nodeNames()
	sc.Components = componentNames(g.k8s.Pods, g.k8s.Deployments)
	sc.Releases = releaseNames(g.k8s.Pods, g.k8s.Deployments)
	for _, f := range findings {
		if f.Kind == KindPeer {
			sc.Known[f.Subject] = true
		}
	}
	a := Reason(findings, sc)
	res := Build(a, sc, g.dataGaps(plan), g.checked())
	applyHealthyProof(res, a, g.gathered(), sc)
	g.explainResolvedAlert(ctx, res)
	if !a.Healthy && len(a.Hypotheses) > 0 {
		run.Step("searching runbooks", step, total)
		res.Runbooks = g.runbooks(ctx, plan, a.Hypotheses[0])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Notes = append(res.Notes, notes...)
	res.Notes = append(res.Notes, e.consultToolServers(ctx, req, run)...)
	res.Notes = append(res.Notes, fmt.Sprintf("offline analyst: %d findings from %s", len(findings), g.checked()))
	run.Step("done", total, total)
	return res, nil
}

// plan picks the agent runs to consult. The planner (an agent with no
// tools of its own and specialists to delegate to) consults each enabled
// specialist whose toolkit reaches a configured source, most relevant to
// the request first; any other agent investigates with its own toolkit.
func (e *Engine) plan(req *agent.Request, run agent.Run) ([]specialist, []string) {
	isPlanner := req.Agent.Name == tools.AgentPlanner || (len(req.Agent.Tools) == 0 && len(req.Agents) > 0)
	if !isPlanner {
		return []specialist{{name: orWord(req.Agent.Name, "agent"), run: run}}, nil
	}
	var src *evidence.Sources
	if env := run.Env(); env != nil {
		src = env.Sources
	}
	type cand struct {
		a     agent.Agent
		score int
	}
	var cands []cand
	var notes []string
	text := strings.ToLower(req.Message + " " + req.Context["hint"] + " " + req.Context["related_alert"])
	for i, name := range specialists {
		a, ok := req.Agents[name]
		if !ok || !a.Enabled || len(a.Tools) == 0 {
			continue
		}
		if !reachesSource(a.Tools, src) {
			notes = append(notes, fmt.Sprintf("planner: %s not consulted (its tools reach no configured data source)", name))
			continue
		}
		cands = append(cands, cand{a, relevanceScore(name, text, req.Context)*10 - i})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].score > cands[j].score })
	var plan []specialist
	var names []string
	for _, c := range cands {
		plan = append(plan, specialist{name: c.a.Name, run: run.Sub(c.a)})
		names = append(names, c.a.Name)
	}
	if len(names) > 0 {
		notes = append([]string{"planner delegated to " + strings.Join(names, ", ")}, notes...)
	} else {
		notes = append(notes, "planner: no specialist could reach a data source")
	}
	return plan, notes
}

var routeWords = map[string]*regexp.Regexp{
	tools.AgentK8s:     regexp.MustCompile(`pod|crash|oom|kube|k8s|deploy|rollout|node|evict|pending|image|container|restart|namespace`),
	tools.AgentMetrics: regexp.MustCompile(`latency|slow|error rate|5\d\d|cpu|memory|saturat|spike|alert|p99|throughput|timeout|metric`),
	tools.AgentAWS:     regexp.MustCompile(`aws|lambda|rds|cloudwatch|ec2|ecs|sqs|dynamo|s3|elb|alb|throttl`),
	tools.AgentCoding:  regexp.MustCompile(`code|commit|regression|bug|release|exception|stack|panic|feature flag|config`),
}

func relevanceScore(name, text string, ctx map[string]string) int {
	n := len(routeWords[name].FindAllString(text, -1))
	if name == tools.AgentK8s && ctx["namespace"] != "" {
		n++
	}
	return n
}

// integrationOf maps a tool to its integration through the built-in
// catalog ("" for tools it does not know).
var builtin = tools.Builtin()

func integrationOf(tool string) string {
	if t, ok := builtin.Get(tool); ok {
		return t.Integration
	}
	return ""
}

func configured(src *evidence.Sources, integration string) bool {
	if src == nil {
		return false
	}
	switch integration {
	case tools.IntegrationKubernetes:
		return src.Kubernetes != nil
	case tools.IntegrationPrometheus:
		return src.Metrics != nil
	case tools.IntegrationLogs:
		return src.Logs != nil
	case tools.IntegrationChanges:
		return src.Changes != nil
	case tools.IntegrationCloudWatch:
		return src.CloudWatch != nil
	case tools.IntegrationGitHub:
		return src.Code != nil
	case tools.IntegrationKnowledge:
		return src.Knowledge != nil
	}
	return false
}

func reachesSource(toolkit []string, src *evidence.Sources) bool {
	for _, t := range toolkit {
		if i := integrationOf(t); i != "" && i != tools.IntegrationKnowledge && configured(src, i) {
			return true
		}
	}
	return false
}

// ScopeOf reads the request's context: service, namespace, environment,
// hint and the time window ("1h", "last 30m", or "start/end" in RFC 3339;
// default the hour before now). The baseline is the same length just
// before the window (at least 30 minutes).
func ScopeOf(req *agent.Request, now time.Time) Scope {
	c := req.Context
	sc := Scope{Message: req.Message, Service: strings.TrimSpace(c["service"]), Namespace: strings.TrimSpace(c["namespace"]),
		Environment: c["environment"], Hint: c["hint"], Alert: c["related_alert"]}
	start, end := now.Add(-time.Hour), now
	given := false
	if tw := strings.TrimSpace(c["time_window"]); tw != "" {
		if s, e, ok := parseWindow(tw, now); ok {
			start, end, given = s, e, true
		}
	}
	length := max(end.Sub(start), 30*time.Minute)
	sc.Window = Window{BaselineStart: start.Add(-length), Start: start, End: end}
	if !given {
		sc.Window = widenToStatedOnset(sc.Window, req.Message, now)
	}
	return sc
}

func parseWindow(s string, now time.Time) (time.Time, time.Time, bool) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.ToLower(s), "last "))
	for _, sep := range []string{"/", ",", " to ", ".."} {
		if a, b, ok := strings.Cut(s, sep); ok {
			ta, err1 := time.Parse(time.RFC3339, strings.ToUpper(strings.TrimSpace(a)))
			tb, err2 := time.Parse(time.RFC3339, strings.ToUpper(strings.TrimSpace(b)))
			if err1 == nil && err2 == nil && ta.Before(tb) {
				return ta.UTC(), tb.UTC(), true
			}
		}
	}
	if t, err := time.Parse(time.RFC3339, strings.ToUpper(s)); err == nil && t.Before(now) {
		return t.UTC(), now, true
	}
	if strings.HasSuffix(s, "d") {
		var n int
		if _, err := fmt.Sscanf(s, "%dd", &n); err == nil && n > 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), now, true
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), now, true
	}
	return time.Time{}, time.Time{}, false
}

// runbooks searches the team's runbooks for the winning hypothesis.
func (g *gatherer) runbooks(ctx context.Context, plan []specialist, h *Hypothesis) []finding.RunbookRef {
	for _, sp := range plan {
		if !sp.run.Has("search_runbooks") || !configured(g.src, tools.IntegrationKnowledge) {
			continue
		}
		q := infoOf(h.Kind).label
		if h.Subject != "" && h.Subject != "*" {
			q += " " + h.Subject
		}
		out, err := sp.run.Call(ctx, "search_runbooks", map[string]any{"query": q, "limit": 3})
		if err != nil {
			g.gap("search_runbooks", err)
			return nil
		}
		ps, _ := as[[]evidence.Passage](out)
		var refs []finding.RunbookRef
		for _, p := range ps {
			if !slices.ContainsFunc(refs, func(r finding.RunbookRef) bool { return r.Location == p.Location }) {
				refs = append(refs, finding.RunbookRef{Title: p.Title, Location: p.Location})
			}
		}
		return refs
	}
	return nil
}

// askPeers calls the peer agents (A2A tools "a2a:<name>") in the agent's
// toolkit with the request's message and context, and turns each answer
// into a finding of modest weight: a peer's opinion corroborates, it does
// not decide.
func (e *Engine) askPeers(ctx context.Context, req *agent.Request, run agent.Run, sc Scope) []Finding {
	var out []Finding
	for _, t := range req.Agent.Tools {
		if !strings.HasPrefix(t, "a2a:") || !run.Has(t) || ctx.Err() != nil {
			continue
		}
		ans, err := run.Call(ctx, t, map[string]any{"message": req.Message, "context": req.Context})
		if err != nil {
			continue
		}
		if f, ok := PeerFinding(strings.TrimPrefix(t, "a2a:"), ans, sc); ok {
			out = append(out, f)
		}
	}
	return out
}

// PeerFinding reads a peer agent's answer (text, or a JSON object with
// summary / root_cause / description / answer) into a finding.
func PeerFinding(peer string, ans any, sc Scope) (Finding, bool) {
	text := ""
	switch v := ans.(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		var m map[string]any
		if mm, ok := as[map[string]any](ans); ok {
			m = mm
		}
		if r, ok := m["result"].(map[string]any); ok {
			m = r
		}
		if rc, ok := m["root_cause"].(map[string]any); ok {
			text, _ = rc["description"].(string)
		}
		for _, k := range []string{"root_cause", "summary", "answer", "text", "message", "description"} {
			if text != "" {
				break
			}
			if s, ok := m[k].(string); ok {
				text = s
			}
		}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return Finding{}, false
	}
	kind, _ := ClassifyLine(text)
	f := Finding{Kind: KindPeer, Subject: sc.Service, Object: "peer agent " + peer, Namespace: sc.Namespace, Time: sc.Window.Start,
		Severity: SevInfo, Weight: 0.5, Source: SrcPeer}
	f.Summary = fmt.Sprintf("peer agent %s reports: %s", peer, truncate(text, 160))
	f.Evidence = []string{fmt.Sprintf("peer agent %s (A2A) answered: %s", peer, quote(text, 300))}
	f.setFact("line", text)
	f.setFact("peer", peer)
	f.setFact("peer_kind", string(kind))
	return f, true
}
