package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindNodeLimit is a node autoscaler that adds no node for pending pods
// because the limit it was configured with is reached.
const KindNodeLimit Kind = "node_limit"

// A node autoscaler at its configured limit: the pods stay Pending, and it
// is not broken. Karpenter launches no node for a NodePool (a Provisioner
// before v1beta1) whose spec.limits the nodes it already runs use up
// ("all available instance types exceed limits for nodepool: \"gpu\"", on
// the pod as a FailedScheduling event from karpenter and in its log as
// "could not schedule pod"); the cluster autoscaler adds none to a node
// group at its maximum size ("pod didn't trigger scale-up: 2 max node group
// size reached"), nor beyond --max-nodes-total ("Max total nodes in cluster
// reached: 50") or --cores-total / --memory-total ("max cluster cpu, memory
// limit reached"). The scheduler says only that no node fits; the limit is
// why no node came, and the NodePool's limits against its
// status.resources say how much of it is used. What used it up is the
// demand put on the pool: the replicas added before the pods went Pending
// (the changes), besides the pending workload's own.
var nodeLimitM = &mechanism{
	kind:   KindNodeLimit,
	class:  classCause,
	label:  "node autoscaler at its configured limit",
	detect: detectNodeLimits,
	related: func(h *Hypothesis, f *Finding) bool {
		// The pods that stay Pending, and the autoscaler's own errors
		// about them, are what the limit leaves.
		if f.Kind == KindUnschedulable && strings.EqualFold(f.Subject, h.Subject) {
			return true
		}
		return matchLine(autoscalerNameRE, f.Subject) && matchLine(nodeLimitRE, f.fact("line")+" "+f.fact("template")+" "+f.Summary)
	},
	// A change of the pending workload's code does not use up a pool's
	// limit; only added demand (replicas, requests) or a changed limit
	// does.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(replicasUpRE, t) || matchLine(replicasNewRE, t) || matchLine(requestsUpRE, t) || matchLine(workloadCreatedRE, t) || strings.Contains(t, "limits") && matchLine(capacityChangeRE, t) || strings.Contains(t, "max-nodes-total") || strings.Contains(t, "max size")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods stay Pending because %s is at its limit", h.Subject, h.fact("limiter"))
		d += h.clause(": ", "limit")
		d += fmt.Sprintf(", so it adds no node for them (%s)", quote(truncate(h.fact("line"), 180), 190))
		if m := h.fact("scheduler"); m != "" {
			d += fmt.Sprintf(". No node running has room for them either: %s", quote(truncate(m, 200), 210))
			if why := schedulingWhy(m); why != "" {
				d += " — " + why
			}
		}
		d += fmt.Sprintf(". %s works as configured: the limit, not a failure, holds the pods", orWord(h.fact("autoscaler"), "The autoscaler"))
		d += h.clause("; the capacity under it went to ", "demand")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch {
		case strings.HasPrefix(h.fact("limiter"), "Karpenter"):
			r.high("Raise the limits of %s (spec.limits%s) to what %s needs, or free capacity under them: scale down what else runs on its nodes", strings.TrimPrefix(h.fact("limiter"), "Karpenter "), limitKeyWords(h.fact("limit_key")), h.Subject)
		case strings.Contains(h.fact("limiter"), "max-nodes-total") || strings.Contains(h.fact("limiter"), "cluster's"):
			r.high("Raise the cluster autoscaler's cluster-wide limit (--max-nodes-total, --cores-total, --memory-total) or free nodes elsewhere for %s", h.Subject)
		default:
			r.high("Raise the maximum size of %s (the node group's max, the autoscaling group's MaxSize) or free nodes in it for %s", h.fact("limiter"), h.Subject)
		}
		r.med("Before scaling %s out, check the headroom of the node pool it runs on against its limits", h.Subject)
		r.low("Alert when a node pool's usage nears its limits (Karpenter's karpenter_nodepools_usage against karpenter_nodepools_limit; the autoscaler's node group max size)")
	},
}

func limitKeyWords(k string) string {
	if k == "" {
		return ""
	}
	return "." + k
}

var (
	// nodeLimitRE is an autoscaler's word that a limit holds it back:
	// Karpenter's limits of a NodePool (or Provisioner), the cluster
	// autoscaler's node group maximum and cluster-wide limits.
	nodeLimitRE = regexp.MustCompile(`(?i)exceeds? limits for (?:nodepool|provisioner)|max node group size reached|max size reached|max total nodes in cluster reached|max cluster (?:cpu|memory|cpu, memory) limits? reached|node ?pool .{0,40}limits? (?:exceeded|reached)`)
	// karpenterPoolRE reads the NodePool or Provisioner a Karpenter message
	// names ("exceed limits for nodepool: \"gpu\"").
	karpenterPoolRE = regexp.MustCompile(`(?i)limits for (nodepool|provisioner):? \\?"?([a-z0-9][a-z0-9.-]*)`)
	// groupMaxRE reads the node group the cluster autoscaler skips
	// ("Skipping node group eks-gpu-… - max size reached").
	groupMaxRE = regexp.MustCompile(`(?i)node ?group ([A-Za-z0-9][\w.-]+) - max size reached`)
	// totalNodesRE reads the cluster-wide node limit ("Max total nodes in
	// cluster reached: 50").
	totalNodesRE = regexp.MustCompile(`(?i)max total nodes in cluster reached:? (\d+)`)
	// limitPodRE reads the pod a provisioner's log line is about
	// (Karpenter's JSON "Pod":{"name":…,"namespace":…}, klog pod="ns/name").
	limitPodRE = regexp.MustCompile(`"Pod":\{"name":"([^"]+)"(?:,"namespace":"([^"]+)")?|\bpod[= ]"?([a-z0-9-]+)/([a-z0-9.-]+)"?`)
	// autoscalerNameRE is the workload of a node autoscaler.
	autoscalerNameRE = regexp.MustCompile(`(?i)^(?:karpenter|cluster-autoscaler|aws-cluster-autoscaler)$`)
	// replicasUpRE is a change that raises a workload's replicas
	// ("replicas 6 -> 10", "scaled to 10").
	replicasUpRE = regexp.MustCompile(`(?i)replicas:? *(\d+) *(?:->|→|to) *(\d+)`)
	// replicasNewRE is a change that puts a number of replicas on the
	// cluster ("40 replicas", "replicas: 40", "scaled to 12", "12 pods").
	replicasNewRE = regexp.MustCompile(`(?i)\b(\d+) *(?:x )?(?:replicas|pods|instances of)\b|\breplicas[:=] *(\d+)\b|\bscaled? (?:up |out )?to (\d+)\b`)
	// workloadCreatedRE is a change that puts new pods on the cluster: an
	// environment or a workload created.
	workloadCreatedRE = regexp.MustCompile(`(?i)\b(?:environment|namespace|deployment|statefulset|workload|stack|release)s? (?:was )?(?:created|installed|provisioned)\b|\b(?:create|install|provision)(?:d|s)? (?:a |the )?(?:new )?(?:environment|namespace|deployment|statefulset|workload|stack|release)\b`)
	// requestsUpRE is a change that raises a workload's resource requests.
	requestsUpRE = regexp.MustCompile(`(?i)requests?[\w.]*:? *(?:cpu|memory)?:? *[\d.]+(?:m|Mi|Gi)? *(?:->|→|to) *[\d.]+`)
)

// nodeLimitHit is what one line or event says of a limit.
type nodeLimitHit struct {
	when             time.Time
	line, from       string
	workload, ns     string
	limiter, groupID string
	autoscaler       string
}

// detectNodeLimits reads the autoscalers' words that a limit holds pods
// Pending (events on the pods, the autoscaler's log, outputs handed over),
// one finding per pending workload, with the limit and its use read from
// the NodePool's YAML and the changes that added demand.
func detectNodeLimits(ev *Gathered, found []Finding) []Finding {
	var hits []nodeLimitHit
	for i := range ev.K8s.Events {
		e := &ev.K8s.Events[i]
		if !matchLine(nodeLimitRE, e.Message) || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		if ev.Scope.Namespace != "" && e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != ev.Scope.Namespace {
			continue
		}
		t, _ := eventTime(e)
		hits = append(hits, nodeLimitHit{when: t, line: strings.TrimSpace(e.Message), from: "event " + e.Reason + " from " + orWord(e.Source.Component, "the autoscaler"),
			workload: workloadOfName(e.InvolvedObject.Name), ns: e.InvolvedObject.Namespace, autoscaler: e.Source.Component})
	}
	for _, l := range eventLines(ev, nodeLimitRE) {
		h := nodeLimitHit{when: l.Time, line: l.Text, from: l.From}
		if m := findSubmatch(limitPodRE, l.Text); m != nil {
			if m[1] != "" {
				h.workload, h.ns = workloadOfName(m[1]), m[2]
			} else {
				h.workload, h.ns = workloadOfName(m[4]), m[3]
			}
		}
		if ev.Scope.Namespace != "" && h.ns != "" && h.ns != ev.Scope.Namespace {
			continue
		}
		hits = append(hits, h)
	}
	if len(hits) == 0 {
		return nil
	}
	// The pending workloads the scheduler reports, for lines that name
	// no pod (the cluster autoscaler's klog).
	var pending []string
	schedulerSaid := map[string]string{}
	for i := range found {
		if f := &found[i]; f.Kind == KindUnschedulable && !slices.Contains(pending, f.Subject) {
			pending = append(pending, f.Subject)
			if m := f.fact("message"); m != "" && !matchLine(nodeLimitRE, m) {
				schedulerSaid[f.Subject] = m
			}
		}
	}
	byWL := map[string]*Finding{}
	var order []string
	for _, h := range hits {
		wls := []string{h.workload}
		if h.workload == "" {
			wls = pending
			if len(wls) == 0 && ev.Scope.Service != "" {
				wls = []string{ev.Scope.Service}
			}
		}
		for _, wl := range wls {
			if wl == "" || matchLine(autoscalerNameRE, wl) {
				continue
			}
			f := byWL[wl]
			if f == nil {
				f = &Finding{Kind: KindNodeLimit, Subject: wl, Object: "workload " + wl, Namespace: orWord(h.ns, ev.Scope.Namespace),
					Severity: SevCritical, Weight: 0.9, Source: SrcEvents, Time: h.when}
				if !strings.HasPrefix(h.from, "event") {
					f.Source = SrcLogs
				}
				byWL[wl] = f
				order = append(order, wl)
			}
			if !h.when.IsZero() && (f.Time.IsZero() || h.when.Before(f.Time)) {
				f.Time = h.when
			}
			if f.fact("line") == "" || strings.HasPrefix(h.from, "event") && !strings.Contains(f.fact("from"), "event") {
				f.setFact("line", h.line)
				f.setFact("from", h.from)
			}
			if len(f.Evidence) < 3 && !slices.ContainsFunc(f.Evidence, func(s string) bool { return strings.Contains(s, h.line) }) {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s at %s: %s", h.from, ts(h.when), quote(h.line, 220)))
			}
		}
	}
	limits := nodePoolLimits(ev.Commands)
	var out []Finding
	for _, wl := range order {
		f := byWL[wl]
		line := f.fact("line")
		limiter, auto := "the cluster autoscaler's node group", "The cluster autoscaler"
		pool := ""
		switch m := findSubmatch(karpenterPoolRE, line); {
		case m != nil:
			pool = m[2]
			kind := "NodePool"
			if strings.EqualFold(m[1], "provisioner") {
				kind = "Provisioner"
			}
			limiter, auto = fmt.Sprintf("Karpenter %s %s", kind, pool), "Karpenter"
		case matchLine(groupMaxRE, line):
			limiter = "node group " + findSubmatch(groupMaxRE, line)[1] + " (at its max size)"
		case matchLine(totalNodesRE, line):
			limiter = fmt.Sprintf("the cluster autoscaler's --max-nodes-total (%s nodes)", findSubmatch(totalNodesRE, line)[1])
		case strings.Contains(strings.ToLower(line), "max cluster"):
			limiter = "the cluster's cpu/memory totals (--cores-total, --memory-total)"
		case strings.Contains(strings.ToLower(line), "max node group size"):
			limiter = "every node group it could use (at its max size)"
		}
		f.setFact("limiter", limiter)
		f.setFact("autoscaler", auto)
		why := fmt.Sprintf("%s is at its limit", limiter)
		if pl, ok := limits[pool]; ok && pool != "" {
			if used := pl.reached(); len(used) > 0 {
				f.setFact("limit", strings.Join(used, "; "))
				f.setFact("limit_key", pl.firstReached)
				why += ": " + strings.Join(used, "; ")
				f.Evidence = append(f.Evidence, fmt.Sprintf("NodePool %s: spec.limits %s against status.resources %s (%s)", pool, pl.limitsWords(), pl.usedWords(), pl.from))
			}
		}
		f.setFact("why", why)
		if m := schedulerSaid[wl]; m != "" {
			f.setFact("scheduler", m)
		}
		if d := demandChanges(ev, wl, f.Time); d != "" {
			f.setFact("demand", d)
		}
		f.Summary = fmt.Sprintf("%s pods Pending: %s", wl, why)
		out = append(out, *f)
	}
	return out
}

// poolLimits is a NodePool's limits and the resources its nodes use.
type poolLimits struct {
	limits, used map[string]string
	keys         []string
	firstReached string
	from         string
}

// reached says each limit the used resources meet or pass ("nvidia.com/gpu
// 8 of 8 used").
func (p *poolLimits) reached() []string {
	var out []string
	for _, k := range p.keys {
		l, u := p.limits[k], p.used[k]
		if u == "" {
			continue
		}
		lq, err1 := resource.ParseQuantity(l)
		uq, err2 := resource.ParseQuantity(u)
		if err1 != nil || err2 != nil || uq.Cmp(lq) < 0 {
			continue
		}
		if p.firstReached == "" {
			p.firstReached = k
		}
		w := fmt.Sprintf("limit %s: %s, %s in use", k, l, u)
		if n := p.used["nodes"]; n != "" {
			w += " by " + plural(nodeCount(n), "node", "nodes")
		}
		out = append(out, w)
	}
	return out
}

func nodeCount(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func (p *poolLimits) limitsWords() string {
	var ws []string
	for _, k := range p.keys {
		ws = append(ws, k+"="+p.limits[k])
	}
	return strings.Join(ws, ", ")
}

func (p *poolLimits) usedWords() string {
	var ws []string
	for _, k := range p.keys {
		if u := p.used[k]; u != "" {
			ws = append(ws, k+"="+u)
		}
	}
	return strings.Join(ws, ", ")
}

// nodePoolGetRE is a get of Karpenter NodePools or Provisioners.
var nodePoolGetRE = regexp.MustCompile(`(?i)\bget\s+(?:nodepools?(?:\.karpenter\.sh)?|provisioners?(?:\.karpenter\.sh)?)(?:/|\s+)([a-z0-9][a-z0-9.-]*)`)

// nodePoolLimits reads NodePools' limits and used resources from their
// YAML handed over as text (kubectl get nodepool NAME -o yaml, whole or
// cut by yq): the keys under "limits:" (spec.limits) and under the
// status's "resources:" (or a "status:" that holds them directly).
func nodePoolLimits(outs []evidence.CommandOutput) map[string]*poolLimits {
	m := map[string]*poolLimits{}
	for _, o := range outs {
		run := o.Run
		if run == "" {
			run = o.Command
		}
		g := findSubmatch(nodePoolGetRE, run)
		if g == nil {
			continue
		}
		name := g[1]
		p := &poolLimits{limits: map[string]string{}, used: map[string]string{}, from: o.Command}
		section, indent := "", -1
		for _, l := range o.Lines {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			ind := len(l) - len(strings.TrimLeft(l, " "))
			if strings.HasPrefix(t, "name:") && ind <= 2 && name == "" {
				name = strings.TrimSpace(strings.TrimPrefix(t, "name:"))
			}
			if section != "" && ind <= indent {
				section = ""
			}
			switch {
			case t == "limits:":
				section, indent = "limits", ind
				continue
			case t == "resources:" || t == "status:":
				section, indent = "used", ind
				continue
			}
			k, v, ok := strings.Cut(t, ":")
			if !ok || section == "" || strings.HasPrefix(t, "- ") {
				continue
			}
			k, v = strings.Trim(strings.TrimSpace(k), `"'`), strings.Trim(strings.TrimSpace(v), `"'`)
			if v == "" {
				continue
			}
			if section == "limits" {
				if _, seen := p.limits[k]; !seen {
					p.keys = append(p.keys, k)
				}
				p.limits[k] = v
			} else {
				p.used[k] = v
			}
		}
		if len(p.limits) > 0 {
			m[name] = p
		}
	}
	return m
}

// demandChanges says which changes before the pods went Pending raised
// replicas (the pending workload's own and others'): the demand that used
// up the limit.
func demandChanges(ev *Gathered, wl string, onset time.Time) string {
	var own, others []string
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		m := findSubmatch(replicasUpRE, c.Description)
		if m == nil {
			// Another workload put on the cluster with its replicas in
			// the days before (a load test, a backfill, a new fleet):
			// its pods hold the capacity under the limit while they run.
			if n := replicasNew(c.Description); n >= minDemandReplicas && !strings.EqualFold(c.Service, wl) &&
				(onset.IsZero() || !c.Timestamp.After(onset) && onset.Sub(c.Timestamp) <= demandLookback) {
				others = append(others, fmt.Sprintf("%s (%s) at %s", orWord(c.Service, "a workload"), truncate(c.Description, 140), ts(c.Timestamp)))
			}
			continue
		}
		from, _ := strconv.Atoi(m[1])
		to, _ := strconv.Atoi(m[2])
		if to <= from || !onset.IsZero() && c.Timestamp.After(onset) {
			continue
		}
		w := fmt.Sprintf("%s replicas %d -> %d at %s", orWord(c.Service, "a workload"), from, to, ts(c.Timestamp))
		if strings.EqualFold(c.Service, wl) {
			own = append(own, w)
		} else {
			others = append(others, w)
		}
	}
	if len(own)+len(others) == 0 {
		return ""
	}
	return strings.Join(append(others, own...), ", ")
}

// minDemandReplicas is the fewest replicas a change of another workload
// puts on the cluster for it to count as demand on a pool's limit, and
// demandLookback how long before the pods went Pending it may have come.
const (
	minDemandReplicas = 5
	demandLookback    = 72 * time.Hour
)

// replicasNew is the number of replicas a change says it puts on the
// cluster, 0 when it says none.
func replicasNew(desc string) int {
	m := findSubmatch(replicasNewRE, desc)
	if m == nil {
		return 0
	}
	for _, g := range m[1:] {
		if n, err := strconv.Atoi(g); err == nil {
			return n
		}
	}
	return 0
}
