package analyst

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A question that asks for resource use: "which node is the busiest
// cpu-wise, and what's eating it?", "which pods use the most memory in
// prod?", "what's the memory usage of the api container compared to its
// limit?". Nothing need be failing: the answer is the readings handed
// over (kubectl top node, kubectl top pod, kubectl top pod --containers),
// ranked or compared as asked, with the objects named and their limits
// when the pod specs, the Deployment or a jsonpath print of
// .spec.containers[*].resources say them. A louder failure elsewhere (a
// Job's pod OOMKilled, a crash-looping worker) is not the answer to a
// question about how much something uses; it is named beside it.
//
// kubectl top reports the working set for memory (what the OOM killer
// judges), the CPU in use over the last scrape window, and a node's use
// against its allocatable (CPU%, MEMORY%).

// KindAskedUsage is the resource use a question asks for, read from the
// usage readings handed over.
const KindAskedUsage Kind = "asked_usage"

var (
	// usageCPURE and usageMemRE name the resource a question asks about.
	usageCPURE = regexp.MustCompile(`(?i)\bcpu\b|cpu-wise|\bcores?\b|\bbusiest\b|\bmillicores?\b`)
	usageMemRE = regexp.MustCompile(`(?i)\bmemory\b|memory-wise|\bmem\b|\bram\b|working set|\brss\b`)
	// usageRankRE is a question asking for a ranking: which objects use
	// the most, the top N, the busiest.
	usageRankRE = regexp.MustCompile(`(?i)\b(?:which|what|who|list|show|top|find)\b[^?.!]{0,60}?\b(?:most|busiest|highest|biggest|heaviest|hungriest|largest|hottest|top\s*\d*|greediest)\b|\btop\s+\d+\b|\b(?:rank|sort)(?:ed)?\s+by\b`)
	// usageValueRE is a question asking for the value of a use: how much
	// X uses, X's usage compared to its limit or request.
	usageValueRE = regexp.MustCompile(`(?i)\b(?:usage|use|uses|using|used|consumption|consumes?|consuming)\b[^?.!]{0,60}?\b(?:compared (?:to|with)|vs\.?|versus|against|relative to|out of|of its|to its)\s+(?:its\s+|the\s+|their\s+)?(?:memory\s+|cpu\s+)?(?:limits?|requests?)\b|\bhow much (?:memory|cpu|ram)\b|\bwhat(?:'s| is| are)\s+(?:the\s+)?(?:memory|cpu|ram)\s+(?:usage|use|consumption)\b`)
	// usageNodeRE and usageContainerRE name the objects a ranking is of.
	usageNodeRE      = regexp.MustCompile(`(?i)\bnodes?\b|\bhosts?\b|\binstances?\b|\bmachines?\b`)
	usageContainerRE = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9-]*)\s+containers?\b|\bcontainers?\s+([a-z0-9][a-z0-9-]*)\b`)
	// quotedRE is text quoted in a question.
	quotedRE = regexp.MustCompile(`'[^']{8,}'|"[^"]{8,}"|“[^”]{8,}”|` + "`[^`]{8,}`")
	// usageOnNodeRE is a ranking of the pods on one node.
	usageOnNodeRE = regexp.MustCompile(`(?i)\bpods?\b[^?.!]{0,60}\bon (?:that|the|this|node|each|every)\b`)
	// resourcesLineRE is a line of a jsonpath print of containers'
	// resources: an optional container name and a tab, then the JSON.
	resourcesLineRE = regexp.MustCompile(`^\s*(?:([a-z0-9][a-z0-9-]*)\s+)?(\{.*"(?:limits|requests)".*\})\s*$`)
	// resourcesCmdRE is the get that printed them, naming a pod or a
	// workload.
	resourcesCmdRE = regexp.MustCompile(`(?i)\bget\s+(pods?|po|deploy(?:ments?)?|statefulsets?|sts|daemonsets?|ds)(?:/|\s+)([a-z0-9][a-z0-9.-]*)`)
)

var askedUsage = &mechanism{
	kind:           KindAskedUsage,
	class:          classCause,
	label:          "resource use, as asked",
	detect:         detectAskedUsage,
	fitsChange:     func(h *Hypothesis, c *Finding) bool { return false },
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		if a := h.fact("answer"); a != "" {
			return a
		}
		return fmt.Sprintf("resource use of %s, as asked: no reading of it was read", orWord(h.Subject, "the workload"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("form") {
		case "node":
			r.high("Look at what %s runs on node %s (kubectl top pod -A --sort-by=%s, filtered by the node): if it is expected load, give it a request that matches its use so the scheduler spreads it; if not, find why it rose (its changes and traffic)", h.Subject, h.fact("node"), h.fact("resource_flag"))
			r.med("Compare each node's use with its requests (kubectl describe node, Allocated resources): requests far from use mislead the scheduler and the autoscaler")
		case "container":
			r.high("Watch the %s use of %s against its limit over a day (container_memory_working_set_bytes / kube_pod_container_resource_limits): raise the limit or fix the growth before it reaches it", h.fact("resource"), h.Subject)
			r.med("Alert when a container's working set stays above 90%% of its limit for 15 minutes")
		default:
			r.high("Check that the %s use of %s matches its requests and limits (kubectl describe pod): set requests from the observed use, and a limit with headroom", h.fact("resource"), h.Subject)
			r.med("Track the top consumers over time (topk over container_memory_working_set_bytes or container_cpu_usage_seconds_total) rather than from one reading")
		}
		r.low("kubectl top shows one reading of the metrics server; read the trend over hours from Prometheus before resizing")
	},
}

// usageQuestion is what a question asks of resource use.
type usageQuestion struct {
	resource  string // "cpu" or "memory"
	form      string // "node", "pod", "container"
	container string // the container named, for a container's use
}

// askedUsageQuestion reads a question asking for resource use; ok is
// false when it asks something else (whether something runs out of
// memory is a question about a failure, not a reading).
func askedUsageQuestion(msg string) (q usageQuestion, ok bool) {
	// The asker's own words: an alert's or a log's text quoted in the
	// question says a value, it does not ask for one.
	msg = quotedRE.ReplaceAllString(msg, " ")
	cpu, mem := matchLine(usageCPURE, msg), matchLine(usageMemRE, msg)
	switch {
	case cpu && !mem:
		q.resource = "cpu"
	case mem && !cpu:
		q.resource = "memory"
	case cpu && mem:
		// The first named.
		if usageCPURE.FindStringIndex(msg)[0] < usageMemRE.FindStringIndex(msg)[0] {
			q.resource = "cpu"
		} else {
			q.resource = "memory"
		}
	default:
		return q, false
	}
	rank, value := matchLine(usageRankRE, msg), matchLine(usageValueRE, msg)
	if !rank && !value {
		return q, false
	}
	if m := findSubmatch(usageContainerRE, msg); m != nil {
		q.container = strings.ToLower(orWord(m[1], m[2]))
		switch q.container {
		case "the", "a", "its", "my", "our", "their", "which", "what", "each", "every", "all", "of", "in", "this", "that", "those", "these":
			q.container = ""
		}
	}
	switch {
	case rank && matchLine(usageOnNodeRE, msg):
		q.form = "pod"
	case rank && matchLine(usageNodeRE, msg):
		q.form = "node"
	case value && q.container != "" || value && !rank:
		q.form = "container"
	default:
		q.form = "pod"
	}
	return q, true
}

// detectAskedUsage answers a question asking for resource use from the
// readings handed over.
func detectAskedUsage(ev *Gathered, found []Finding) []Finding {
	q, ok := askedUsageQuestion(ev.Scope.Message)
	if !ok {
		return nil
	}
	var f *Finding
	switch q.form {
	case "node":
		f = nodeUsageAnswer(ev, q)
	case "container":
		f = containerUsageAnswer(ev, q)
		if f == nil {
			f = podUsageAnswer(ev, q)
		}
	default:
		f = podUsageAnswer(ev, q)
	}
	if f == nil {
		return nil
	}
	f.Kind, f.Source, f.Severity, f.Weight = KindAskedUsage, SrcKubernetes, SevInfo, 0.9
	if f.Time.IsZero() {
		f.Time = ev.Window.End
	}
	f.setFact("resource", q.resource)
	f.setFact("form", q.form)
	f.setFact("resource_flag", q.resource)
	return []Finding{*f}
}

// usageOf is the reading of the resource asked, in its base unit
// (cores, bytes).
func usageOf(u evidence.Usage, res string) float64 {
	if res == "cpu" {
		return u.CPU.AsApproximateFloat64()
	}
	return u.Memory.AsApproximateFloat64()
}

// usageText prints a reading as kubectl top printed it.
func usageText(u evidence.Usage, res string) string {
	if res == "cpu" {
		return u.CPU.String()
	}
	return u.Memory.String()
}

// usageWord names the resource as a reading of it.
func usageWord(res string) string {
	if res == "cpu" {
		return "CPU"
	}
	return "memory (working set)"
}

// nodeUsageAnswer ranks the nodes by the resource and names the pods
// that use most of it on the first.
func nodeUsageAnswer(ev *Gathered, q usageQuestion) *Finding {
	nodes := slices.Clone(ev.K8s.NodeUsage)
	if len(nodes) == 0 {
		return nil
	}
	slices.SortStableFunc(nodes, func(a, b evidence.Usage) int { return -cmpFloat(usageOf(a, q.resource), usageOf(b, q.resource)) })
	top := nodes[0]
	pct := top.CPUPercent
	if q.resource == "memory" {
		pct = top.MemoryPercent
	}
	d := fmt.Sprintf("the busiest node by %s is %s: %s", usageWord(q.resource), top.Name, usageText(top, q.resource))
	if pct >= 0 {
		d += fmt.Sprintf(" (%d%% of its allocatable)", pct)
	}
	d += " in kubectl top node"
	var rest []string
	for _, n := range nodes[1:min(len(nodes), 4)] {
		rest = append(rest, fmt.Sprintf("%s %s", n.Name, usageText(n, q.resource)))
	}
	if len(rest) > 0 {
		d += "; next " + strings.Join(rest, ", ")
	}
	f := &Finding{Object: "node " + top.Name, Time: top.Time}
	f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl top node (%s): %s %s %s", top.Source, top.Name, top.CPU.String(), top.Memory.String()))
	// The pods on it, by the same resource.
	var on []PodUsage
	short, _, _ := strings.Cut(top.Name, ".")
	for _, u := range ev.K8s.Usage {
		if n := u.Node; n != "" && (strings.EqualFold(n, top.Name) || strings.EqualFold(strings.SplitN(n, ".", 2)[0], short)) {
			on = append(on, u)
		}
	}
	slices.SortStableFunc(on, func(a, b PodUsage) int { return -cmpFloat(usageOf(a.Usage, q.resource), usageOf(b.Usage, q.resource)) })
	f.Subject = top.Name
	if len(on) > 0 {
		p := on[0]
		f.Subject = workloadOfPodName(p.Name)
		f.Namespace = p.Namespace
		share := ""
		if t := usageOf(top, q.resource); t > 0 {
			share = fmt.Sprintf(", %.0f%% of the node's use", 100*usageOf(p.Usage, q.resource)/t)
		}
		d += fmt.Sprintf(". On it, pod %s/%s (%s) uses the most %s: %s%s", p.Namespace, p.Name, f.Subject, strings.ToLower(usageWord(q.resource)), usageText(p.Usage, q.resource), share)
		if lim := resourcesText(ev, p.Namespace, p.Name, "", q.resource); lim != "" {
			d += " (" + lim + ")"
		}
		var others []string
		for _, o := range on[1:min(len(on), 3)] {
			others = append(others, fmt.Sprintf("%s %s", o.Name, usageText(o.Usage, q.resource)))
		}
		if len(others) > 0 {
			d += "; then " + strings.Join(others, ", ")
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl top pod (%s): %s/%s on node %s uses %s CPU, %s memory", p.Source, p.Namespace, p.Name, top.Name, p.CPU.String(), p.Memory.String()))
		f.Related = append(f.Related, top.Name)
	}
	f.setFact("node", top.Name)
	f.setFact("answer", d)
	f.Summary = fmt.Sprintf("busiest node by %s: %s (%s)", strings.ToLower(usageWord(q.resource)), top.Name, usageText(top, q.resource))
	return f
}

// podUsageAnswer ranks the pods of the namespace asked (any when none)
// by the resource.
func podUsageAnswer(ev *Gathered, q usageQuestion) *Finding {
	ns := ev.Scope.Namespace
	where := ""
	if ns != "" {
		where = " in namespace " + ns
	}
	var pods []PodUsage
	for _, u := range ev.K8s.Usage {
		if ns == "" || u.Namespace == "" || strings.EqualFold(u.Namespace, ns) {
			pods = append(pods, u)
		}
	}
	if len(pods) == 0 {
		pods = slices.Clone(ev.K8s.Usage)
	}
	// The pods of the node the question names, when it names one.
	low := strings.ToLower(ev.Scope.Message)
	var onNode []PodUsage
	for _, u := range pods {
		if short, _, _ := strings.Cut(strings.ToLower(u.Node), "."); short != "" && strings.Contains(low, short) {
			onNode = append(onNode, u)
		}
	}
	if len(onNode) > 0 {
		pods = onNode
		where = " on node " + onNode[0].Node
	}
	if len(pods) == 0 {
		return nil
	}
	slices.SortStableFunc(pods, func(a, b PodUsage) int { return -cmpFloat(usageOf(a.Usage, q.resource), usageOf(b.Usage, q.resource)) })
	top := pods[0]
	f := &Finding{Subject: workloadOfPodName(top.Name), Namespace: top.Namespace, Object: "pod " + top.Namespace + "/" + top.Name, Time: top.Time}
	d := fmt.Sprintf("the pod using the most %s%s is %s (%s): %s", strings.ToLower(usageWord(q.resource)), where, top.Name, f.Subject, usageText(top.Usage, q.resource))
	if lim := resourcesText(ev, top.Namespace, top.Name, "", q.resource); lim != "" {
		d += " (" + lim + ")"
	}
	var rest []string
	for _, p := range pods[1:min(len(pods), 5)] {
		rest = append(rest, fmt.Sprintf("%s %s", p.Name, usageText(p.Usage, q.resource)))
	}
	if len(rest) > 0 {
		d += "; then " + strings.Join(rest, ", ")
	}
	d += " (kubectl top pod, one reading of the metrics server)"
	for _, p := range pods[:min(len(pods), 2)] {
		f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl top pod (%s): %s/%s uses %s CPU, %s memory", p.Source, p.Namespace, p.Name, p.CPU.String(), p.Memory.String()))
	}
	f.setFact("answer", d)
	f.Summary = fmt.Sprintf("most %s%s: pod %s (%s)", strings.ToLower(usageWord(q.resource)), where, top.Name, usageText(top.Usage, q.resource))
	return f
}

// containerUsageAnswer compares the use of the container asked (or of the
// subject's containers) with its limit, pod by pod.
func containerUsageAnswer(ev *Gathered, q usageQuestion) *Finding {
	subject := strings.ToLower(ev.Scope.Service)
	var cs []PodUsage
	for _, u := range ev.K8s.ContainerUsage {
		if ns := ev.Scope.Namespace; ns != "" && u.Namespace != "" && !strings.EqualFold(u.Namespace, ns) {
			continue
		}
		switch {
		case q.container != "" && strings.EqualFold(u.Container, q.container):
		case q.container == "" && subject != "" && workloadOfPodName(u.Name) == subject:
		default:
			continue
		}
		if subject != "" && q.container != "" && workloadOfPodName(u.Name) != subject && slices.ContainsFunc(ev.K8s.ContainerUsage, func(o PodUsage) bool {
			return strings.EqualFold(o.Container, q.container) && workloadOfPodName(o.Name) == subject
		}) {
			continue
		}
		cs = append(cs, u)
	}
	if len(cs) == 0 {
		return nil
	}
	slices.SortStableFunc(cs, func(a, b PodUsage) int { return -cmpFloat(usageOf(a.Usage, q.resource), usageOf(b.Usage, q.resource)) })
	top := cs[0]
	wl := workloadOfPodName(top.Name)
	f := &Finding{Subject: wl, Namespace: top.Namespace, Object: "pod " + top.Namespace + "/" + top.Name, Time: top.Time}
	d := fmt.Sprintf("the %s container of %s uses at most %s of %s, in pod %s", top.Container, wl, usageText(top.Usage, q.resource), strings.ToLower(usageWord(q.resource)), top.Name)
	if lim := resourcesText(ev, top.Namespace, top.Name, top.Container, q.resource); lim != "" {
		d += " (" + lim + ")"
	} else {
		d += " (no limit read for it)"
	}
	var rest []string
	for _, c := range cs[1:min(len(cs), 5)] {
		s := fmt.Sprintf("%s %s", c.Name, usageText(c.Usage, q.resource))
		if p := limitPercent(ev, c, q.resource); p != "" {
			s += " (" + p + ")"
		}
		rest = append(rest, s)
	}
	if len(rest) > 0 {
		d += "; its other pods: " + strings.Join(rest, ", ")
	}
	d += " (kubectl top pod --containers, one reading of the metrics server)"
	for _, c := range cs[:min(len(cs), 2)] {
		f.Evidence = append(f.Evidence, fmt.Sprintf("kubectl top pod --containers (%s): %s/%s container %s uses %s CPU, %s memory", c.Source, c.Namespace, c.Name, c.Container, c.CPU.String(), c.Memory.String()))
	}
	if lim, src := containerLimit(ev, top.Namespace, top.Name, top.Container, q.resource); !lim.IsZero() {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s limit of container %s: %s (%s)", q.resource, top.Container, lim.String(), src))
	}
	f.setFact("answer", d)
	f.Summary = fmt.Sprintf("%s use of container %s of %s: %s", q.resource, top.Container, wl, usageText(top.Usage, q.resource))
	return f
}

// limitPercent is a reading's share of its container's limit ("" when no
// limit is read).
func limitPercent(ev *Gathered, u PodUsage, res string) string {
	lim, _ := containerLimit(ev, u.Namespace, u.Name, u.Container, res)
	if lim.IsZero() {
		return ""
	}
	return fmt.Sprintf("%.0f%% of its %s limit", math.Round(100*usageOf(u.Usage, res)/lim.AsApproximateFloat64()), lim.String())
}

// resourcesText says a container's reading against its limit and
// request: "84% of its 2Gi limit, request 1536Mi"; "" when none is read.
func resourcesText(ev *Gathered, ns, pod, container, res string) string {
	rr, _, ok := containerResources(ev, ns, pod, container)
	if !ok {
		return ""
	}
	name := corev1.ResourceName(res)
	var use float64
	if container != "" {
		for _, u := range ev.K8s.ContainerUsage {
			if u.Namespace == ns && u.Name == pod && u.Container == container {
				use = usageOf(u.Usage, res)
			}
		}
	} else {
		for _, u := range ev.K8s.Usage {
			if u.Namespace == ns && u.Name == pod {
				use = usageOf(u.Usage, res)
			}
		}
	}
	var parts []string
	if lim, ok := rr.Limits[name]; ok && !lim.IsZero() {
		if use > 0 {
			parts = append(parts, fmt.Sprintf("%.0f%% of its %s %s limit", math.Round(100*use/lim.AsApproximateFloat64()), lim.String(), res))
		} else {
			parts = append(parts, fmt.Sprintf("%s limit %s", res, lim.String()))
		}
	} else {
		parts = append(parts, "no "+res+" limit")
	}
	if req, ok := rr.Requests[name]; ok && !req.IsZero() {
		parts = append(parts, fmt.Sprintf("request %s", req.String()))
	}
	return strings.Join(parts, ", ")
}

// containerLimit is a container's limit of the resource and where it was
// read.
func containerLimit(ev *Gathered, ns, pod, container, res string) (resource.Quantity, string) {
	rr, src, ok := containerResources(ev, ns, pod, container)
	if !ok {
		return resource.Quantity{}, ""
	}
	return rr.Limits[corev1.ResourceName(res)], src
}

// containerResources finds a container's requests and limits (the pod's
// first container when container is ""): from the pod's spec, its
// Deployment's template, or a jsonpath print of the resources of the pod
// or its workload.
func containerResources(ev *Gathered, ns, pod, container string) (corev1.ResourceRequirements, string, bool) {
	pick := func(cs []corev1.Container) (corev1.ResourceRequirements, bool) {
		for i, c := range cs {
			if (container == "" && i == 0 || c.Name == container) && (len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0) {
				return c.Resources, true
			}
		}
		return corev1.ResourceRequirements{}, false
	}
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if p.Name == pod && (ns == "" || p.Namespace == "" || p.Namespace == ns) {
			if rr, ok := pick(p.Spec.Containers); ok {
				return rr, "pod " + p.Name + " spec", true
			}
		}
	}
	wl := workloadOfPodName(pod)
	for i := range ev.K8s.Deployments {
		d := &ev.K8s.Deployments[i]
		if d.Name == wl && (ns == "" || d.Namespace == "" || d.Namespace == ns) {
			if rr, ok := pick(d.Spec.Template.Spec.Containers); ok {
				return rr, "deployment " + d.Name + " template", true
			}
		}
	}
	// A jsonpath print: the pod's own first, then its workload's.
	var fromWorkload *corev1.ResourceRequirements
	var wlSrc string
	for _, c := range ev.Commands {
		m := findSubmatch(resourcesCmdRE, c.Command)
		if m == nil || !strings.Contains(c.Command, "resources") {
			continue
		}
		isPod := strings.HasPrefix(strings.ToLower(m[1]), "po")
		if isPod && m[2] != pod || !isPod && m[2] != wl {
			continue
		}
		for i, l := range c.Lines {
			lm := findSubmatch(resourcesLineRE, l)
			if lm == nil || container != "" && lm[1] != "" && lm[1] != container || container != "" && lm[1] == "" && i > 0 || container == "" && i > 0 {
				continue
			}
			var rr corev1.ResourceRequirements
			if json.Unmarshal([]byte(lm[2]), &rr) != nil {
				continue
			}
			if isPod {
				return rr, c.Source, true
			}
			if fromWorkload == nil {
				fromWorkload, wlSrc = &rr, c.Source
			}
		}
	}
	if fromWorkload != nil {
		return *fromWorkload, wlSrc, true
	}
	return corev1.ResourceRequirements{}, "", false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// answersQuestion reports whether h is the reading a question asked for:
// it bears on the question whatever subject the question names.
func answersQuestion(h *Hypothesis) bool { return h.Kind == KindAskedUsage }

// usageAsked puts the answer to a question asking for resource use first:
// what else fails nearby is named beside it, not instead of it. The
// answer reads values, it does not diagnose: its confidence stays at 70.
func usageAsked(hs []*Hypothesis, sc Scope) {
	var ans *Hypothesis
	for _, h := range hs {
		if h.Kind == KindAskedUsage {
			ans = h
		}
	}
	if ans == nil {
		return
	}
	// A cause diagnosed on the object the reading points at (the node
	// under memory pressure its top pod fills) answers the question
	// with its why: the reading stays beside it.
	for _, h := range hs {
		if h != ans && h.class() == classCause && h.Score >= healthyBar && bearsOn(h, []string{ans.Subject}) {
			return
		}
	}
	ans.Score = 0.7
	for _, h := range hs {
		if h != ans && h.Score > 0.5 {
			h.Score = 0.5
		}
	}
}
