package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"

	"github.com/rootcause/rootcause/finding"
)

// Pods the scheduler cannot place (FailedScheduling): they stay Pending.
// The scheduler's message says why (insufficient CPU or memory, taints,
// node selectors or affinity no node satisfies).
var unschedulableM = &mechanism{
	kind:  KindUnschedulable,
	class: classCause,
	label: "unschedulable pods",
	pod:   pendingPod,
	detect: func(ev *Gathered, found []Finding) []Finding {
		explainAntiAffinity(ev, found)
		explainVolumeZone(ev, found)
		return detectSelectorUnmatched(ev, found)
	},
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "FailedScheduling"
	},
	eventCritical: true,
	// Where a pod may run is decided by its spec and the nodes: only a
	// change that names the port, label, taint or class the scheduler
	// refused triggers it, not a flag or a deploy that says nothing of it.
	contentTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return schedulingChangeFits(h.fact("message"), changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		msg := h.fact("message")
		if sel := h.fact("selector_unmatched"); sel != "" {
			d = fmt.Sprintf("%s pods are unschedulable and stay Pending: their node selector requires the node label %s, which no node carries — %s", s, sel, h.fact("selector_why"))
			d += h.clause(". The change that names the label: ", "selector_change")
			if msg != "" {
				d += fmt.Sprintf(". The scheduler: %s", quote(truncate(msg, 200), 210))
			}
			return d
		}
		d = fmt.Sprintf("%s pods are unschedulable and stay Pending (FailedScheduling): %s", s, truncate(msg, 220))
		if why := schedulingWhy(msg); why != "" {
			d += " — " + why
		} else if why := schedulingReason(msg); why != "" {
			d += " — " + why
		}
		d += antiAffinityClause(h)
		d += volumeZoneClause(h)
		if hp := h.fact("host_ports"); hp != "" && schedulingBlocks(msg, "free ports") {
			d += fmt.Sprintf(". The pods ask for host port %s", hp)
			if holder := h.fact("port_holder"); holder != "" {
				d += fmt.Sprintf(", already in use on those nodes by %s: two pods cannot bind one host port on the same node (hostPort conflict)", holder)
			} else {
				d += ", already in use on those nodes by another pod (hostPort conflict)"
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if hp := h.fact("host_ports"); hp != "" && schedulingBlocks(h.fact("message"), "free ports") {
			r.high("Free host port %s for %s: drop the hostPort from its pod spec (expose the port through a Service instead) or move it to a port no other pod on the nodes uses%s", hp, s, holderWords(h.fact("port_holder")))
			r.med("Check every hostPort and hostNetwork workload (DaemonSets first) for the ports a new workload asks for before rolling it out")
			r.low("Alert on pods Pending for more than a few minutes")
			return
		}
		if sel := h.fact("selector_unmatched"); sel != "" {
			if in := h.fact("selector_instead"); in != "" {
				r.high("Fix the node selector of %s: it requires %s, the nodes now carry %s; select on that label (or label the nodes again)", s, sel, in)
			} else {
				r.high("Fix the node selector of %s: it requires %s, which no node carries; select on a label the nodes carry, or label (or provision) nodes with it", s, sel)
			}
			r.med("Check node selectors and affinity of every workload against the labels of new node pools before replacing a node group")
			r.low("Alert on pods Pending for more than a few minutes")
			return
		}
		if z := h.fact("volume_zone"); z != "" && h.fact("node_zones") != "" {
			if h.fact("binding_mode") == "Immediate" {
				r.high("Set volumeBindingMode: WaitForFirstConsumer on StorageClass %s (a new class: the field cannot be changed), then recreate claim %s (delete it and its PersistentVolume if the volume holds nothing yet) so that it is provisioned where the pod is scheduled", h.fact("storage_class"), h.fact("volume_claim"))
			} else {
				r.high("Recreate claim %s in a zone the pods' nodes are in, or add nodes of their pool in zone %s", h.fact("volume_claim"), z)
			}
			r.med("Give the node pool of %s nodes in every zone its volumes may be in (%s), or restrict the StorageClass's allowedTopologies to the pool's zones", s, z)
			r.low("Alert on pods Pending for more than a few minutes")
			return
		}
		r.add(finding.PriorityHigh, fmt.Sprintf("Make room for %s: add nodes (or let the cluster autoscaler scale up) or lower the pods' resource requests", s))
		r.add(finding.PriorityMedium, "Review taints, tolerations, node selectors and affinity rules of the pending pods")
		r.add(finding.PriorityLow, "Alert on pods Pending for more than a few minutes and keep spare cluster capacity")
	},
}

// pendingPod judges a Pending pod the scheduler cannot place.
func pendingPod(p *corev1.Pod, base Finding) ([]Finding, bool) {
	if p.Status.Phase != corev1.PodPending {
		return nil, false
	}
	var out []Finding
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			f := base
			f.Kind, f.Severity, f.Weight = KindUnschedulable, SevCritical, 0.9
			f.Time = c.LastTransitionTime.Time
			if f.Time.IsZero() {
				f.Time = p.CreationTimestamp.Time
			}
			f.Summary = fmt.Sprintf("%s cannot be scheduled: %s", base.Object, c.Message)
			f.Evidence = []string{fmt.Sprintf("%s is Pending, PodScheduled=False (Unschedulable) since %s: %s", base.Object, ts(f.Time), quote(c.Message, 300))}
			f.setFact("message", c.Message)
			if schedulingBlocks(c.Message, "free ports") {
				f.setFact("host_ports", hostPortsOf(p))
			}
			out = append(out, f)
		}
	}
	return out, false
}

// schedReason is one reason of a scheduler's FailedScheduling message and
// the number of nodes it rules out ("3 node(s) didn't have free ports for
// the requested pod ports").
type schedReason struct {
	nodes int
	text  string
}

// schedItemRE starts one reason of the list after "0/N nodes are
// available: " (a count, then the reason up to the next count).
var schedItemRE = regexp.MustCompile(`(?:^|, )(\d+) `)

// schedulingReasons reads the reasons of a scheduler message, the
// preemption part left out, as the scheduler writes them (kube-scheduler
// 1.2x: "0/5 nodes are available: 2 node(s) had untolerated taint
// {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't have free
// ports for the requested pod ports. preemption: ...").
func schedulingReasons(msg string) []schedReason {
	i := strings.Index(msg, "are available: ")
	if i < 0 {
		return nil
	}
	list := msg[i+len("are available: "):]
	if j := strings.Index(list, " preemption:"); j >= 0 {
		list = list[:j]
	}
	list = strings.TrimSuffix(strings.TrimSpace(list), ".")
	idx := schedItemRE.FindAllStringSubmatchIndex(list, -1)
	var out []schedReason
	for k, m := range idx {
		end := len(list)
		if k+1 < len(idx) {
			end = idx[k+1][0]
		}
		n, _ := strconv.Atoi(list[m[2]:m[3]])
		text := strings.TrimSpace(strings.TrimPrefix(list[m[1]:end], "node(s) "))
		if text != "" {
			out = append(out, schedReason{nodes: n, text: text})
		}
	}
	return out
}

// controlPlaneReason reports whether a reason only says the control-plane
// nodes are reserved (their taint), which holds for every workload pod
// and explains nothing.
func controlPlaneReason(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "taint") && (strings.Contains(l, "node-role.kubernetes.io/control-plane") || strings.Contains(l, "node-role.kubernetes.io/master"))
}

// schedulingBlocks reports whether a scheduler message rules nodes out
// for a reason containing words.
func schedulingBlocks(msg, words string) bool {
	for _, r := range schedulingReasons(msg) {
		if strings.Contains(strings.ToLower(r.text), words) {
			return true
		}
	}
	return false
}

// schedulingWhy says why the scheduler placed the pods nowhere: the
// reasons that rule out worker nodes, the one covering the most nodes
// first; the control-plane nodes' taint is left out when other reasons
// are given, as it holds for every workload.
func schedulingWhy(msg string) string {
	rs := schedulingReasons(msg)
	var kept []schedReason
	for _, r := range rs {
		if !controlPlaneReason(r.text) || len(rs) == 1 {
			kept = append(kept, r)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].nodes > kept[j].nodes })
	var parts []string
	for _, r := range kept {
		parts = append(parts, fmt.Sprintf("on %s %s", plural(r.nodes, "node", "nodes"), schedReasonWords(r.text)))
	}
	return strings.Join(parts, "; ")
}

// schedReasonWords says what one scheduler reason means.
func schedReasonWords(text string) string {
	l := strings.ToLower(text)
	switch {
	case strings.Contains(l, "didn't have free ports"):
		return "the host port the pods ask for is already in use (didn't have free ports)"
	case strings.HasPrefix(l, "insufficient "):
		return fmt.Sprintf("%s for the pods' requests (%s)", strings.Replace(l, "insufficient ", "there is not enough ", 1)+" left", l)
	case strings.Contains(l, "were unschedulable") || strings.Contains(l, "unschedulable"):
		return "the nodes are cordoned (unschedulable)"
	case strings.Contains(l, "topology spread"):
		return "a pod would break the pods' topology spread constraints (didn't match pod topology spread constraints)"
	case strings.Contains(l, "volume node affinity conflict"):
		return "the pods' volume is bound to another zone (volume node affinity conflict)"
	case strings.Contains(l, "anti-affinity"):
		return "the pods' anti-affinity rules exclude them"
	case strings.Contains(l, "taint"):
		return "the nodes carry a taint the pods do not tolerate (" + text + ")"
	case strings.Contains(l, "affinity") || strings.Contains(l, "selector"):
		return "the nodes do not match the pods' node affinity/selector"
	case strings.Contains(l, "too many pods"):
		return "the nodes hold their maximum number of pods (too many pods)"
	}
	return text
}

// hostPortsOf lists the host ports a pod's containers ask for
// ("9100/TCP").
func hostPortsOf(p *corev1.Pod) string {
	var ports []string
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort != 0 {
				ports = append(ports, fmt.Sprintf("%d/%s", cp.HostPort, orWord(string(cp.Protocol), "TCP")))
			}
		}
	}
	return strings.Join(ports, ", ")
}

// holderWords says who holds a host port, for a recommendation.
func holderWords(holder string) string {
	if holder == "" {
		return ""
	}
	return " (" + holder + " holds it)"
}

// portHolder is a workload that binds a host port on the nodes.
type portHolder struct {
	kind, namespace, name, container string
	hostNetwork                      bool
}

func (h portHolder) String() string {
	s := fmt.Sprintf("%s %s/%s", h.kind, h.namespace, h.name)
	if h.container != "" {
		s += fmt.Sprintf(" (container %s", h.container)
		if h.hostNetwork {
			s += ", hostNetwork"
		}
		s += ")"
	}
	return s
}

// holdsPort reports which container of a pod template binds port on its
// node: a hostPort, or a container port of a pod on the host network.
func holdsPort(spec *corev1.PodSpec, port int32, proto corev1.Protocol) (string, bool) {
	for _, c := range spec.Containers {
		for _, cp := range c.Ports {
			if orWord(string(cp.Protocol), "TCP") != orWord(string(proto), "TCP") {
				continue
			}
			if cp.HostPort == port || spec.HostNetwork && cp.ContainerPort == port {
				return c.Name, true
			}
		}
	}
	return "", false
}

// explainPortConflicts follows pods the scheduler places nowhere because
// the host port they ask for is taken ("didn't have free ports for the
// requested pod ports") to what holds that port: the DaemonSets of every
// namespace (a node agent runs on every node, so its port is taken
// everywhere), then the running pods of the nodes, whose hostPort or host
// network binds the same port. The holder joins the finding as its
// port_holder fact and evidence.
func (g *gatherer) explainPortConflicts(ctx context.Context, findings []Finding) []Finding {
	var want []int
	var pods []corev1.Pod
	for i := range findings {
		f := &findings[i]
		if f.Kind != KindUnschedulable || f.fact("port_holder") != "" {
			continue
		}
		// The scheduler's event names no port: the pending pod's spec
		// does (a describe's "Host Port: 9100/TCP").
		if f.fact("host_ports") == "" && schedulingBlocks(f.fact("message"), "free ports") {
			if pods == nil {
				pods = g.allPods(ctx)
			}
			if p := podOfObject(pods, f.Object); p != nil {
				f.setFact("host_ports", hostPortsOf(p))
			}
		}
		if f.fact("host_ports") != "" {
			want = append(want, i)
		}
	}
	if len(want) == 0 || g.src == nil || g.src.Kubernetes == nil {
		return findings
	}
	dss, _ := evidence.List[appsv1.DaemonSet](ctx, g.src.Kubernetes, "", "")
	var holderCache = map[string]string{}
	for _, i := range want {
		f := &findings[i]
		hp := strings.Split(f.fact("host_ports"), ", ")[0]
		if h, ok := holderCache[hp]; ok {
			if h != "" {
				setPortHolder(f, h, hp)
			}
			continue
		}
		num, proto, _ := strings.Cut(hp, "/")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		var holders []string
		for _, d := range dss {
			if c, ok := holdsPort(&d.Spec.Template.Spec, int32(n), corev1.Protocol(proto)); ok && WorkloadOfPod(&corev1.Pod{ObjectMeta: d.Spec.Template.ObjectMeta}) != f.Subject && d.Name != f.Subject {
				holders = append(holders, portHolder{kind: "DaemonSet", namespace: d.Namespace, name: d.Name, container: c, hostNetwork: d.Spec.Template.Spec.HostNetwork}.String())
			}
		}
		if len(holders) == 0 {
			if pods == nil {
				pods = g.allPods(ctx)
			}
			seen := map[string]bool{}
			for i := range pods {
				p := &pods[i]
				if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || WorkloadOfPod(p) == f.Subject {
					continue
				}
				if c, ok := holdsPort(&p.Spec, int32(n), corev1.Protocol(proto)); ok {
					wl := WorkloadOfPod(p)
					if seen[p.Namespace+"/"+wl] {
						continue
					}
					seen[p.Namespace+"/"+wl] = true
					holders = append(holders, portHolder{kind: "workload", namespace: p.Namespace, name: wl, container: c, hostNetwork: p.Spec.HostNetwork}.String())
				}
			}
		}
		if len(holders) == 0 {
			// A workload whose spec a transcript printed only in part
			// (kubectl get ds NAME -o jsonpath='{...ports}').
			holders = portHoldersInCommands(g.commands, n, f.Subject)
		}
		slices.Sort(holders)
		h := strings.Join(holders, " and ")
		holderCache[hp] = h
		if h != "" {
			setPortHolder(f, h, hp)
		}
	}
	return findings
}

func setPortHolder(f *Finding, holder, port string) {
	f.setFact("port_holder", holder)
	f.setFact("why", "host port "+port+" is bound on the nodes by "+holder)
	// The chain reached what holds the port: direct evidence of why the
	// scheduler refuses every node.
	f.Weight = max(f.Weight, 0.95)
	f.Evidence = append(f.Evidence, fmt.Sprintf("host port %s, which the pending pods ask for, is bound on the nodes by %s", port, holder))
}

// allPods lists the pods of every namespace (none: an empty list).
func (g *gatherer) allPods(ctx context.Context) []corev1.Pod {
	if g.src == nil || g.src.Kubernetes == nil {
		return []corev1.Pod{}
	}
	pods, _ := evidence.List[corev1.Pod](ctx, g.src.Kubernetes, "", "")
	if pods == nil {
		pods = []corev1.Pod{}
	}
	return pods
}

// podOfObject is the pod a finding's object names ("pod ns/name ...").
func podOfObject(pods []corev1.Pod, object string) *corev1.Pod {
	ref, _, _ := strings.Cut(strings.TrimPrefix(object, "pod "), " ")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return nil
	}
	for i := range pods {
		if pods[i].Name == name && (pods[i].Namespace == ns || pods[i].Namespace == "") {
			return &pods[i]
		}
	}
	return nil
}

var (
	// kubectlGetRE is a kubectl get of one named object: its kind and
	// name ("get ds node-exporter", "get daemonset/node-exporter").
	kubectlGetRE = regexp.MustCompile(`\bkubectl\b.*?\bget\s+([a-z.]+)(?:/|\s+)([a-z0-9][-a-z0-9.]*)`)
	kubectlNSRE  = regexp.MustCompile(`(?:\s-n\s*|--namespace[=\s])([a-z0-9][-a-z0-9]*)`)
	// hostPortRE is a hostPort in JSON or YAML ("hostPort":9100,
	// hostPort: 9100).
	hostPortRE = regexp.MustCompile(`"?hostPort"?\s*:\s*(\d+)`)
	// hostNetworkRE: the pod template is on the host network (a jsonpath
	// printing .spec.template.spec.hostNetwork, or its YAML).
	hostNetworkRE      = regexp.MustCompile(`^true\b|"?hostNetwork"?\s*:\s*true`)
	containerPortRE    = regexp.MustCompile(`"?containerPort"?\s*:\s*(\d+)`)
	workloadKindByWord = map[string]string{"ds": "DaemonSet", "daemonset": "DaemonSet", "daemonsets": "DaemonSet", "daemonset.apps": "DaemonSet",
		"deploy": "Deployment", "deployment": "Deployment", "deployments": "Deployment", "deployment.apps": "Deployment",
		"sts": "StatefulSet", "statefulset": "StatefulSet", "statefulsets": "StatefulSet", "po": "Pod", "pod": "Pod", "pods": "Pod"}
)

// portHoldersInCommands finds, in the outputs of kubectl gets of one
// named workload, those that bind port on their nodes: a hostPort of that
// number, or a container port of it on the host network. The workload
// asking for the port (subject) is not its own holder.
func portHoldersInCommands(cmds []evidence.CommandOutput, port int, subject string) []string {
	var out []string
	seen := map[string]bool{}
	want := strconv.Itoa(port)
	for _, c := range cmds {
		m := findSubmatch(kubectlGetRE, c.Command)
		if m == nil || c.Exec {
			continue
		}
		kind := workloadKindByWord[strings.ToLower(m[1])]
		name := m[2]
		if kind == "" || name == subject || strings.HasPrefix(name, subject+"-") {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		held := false
		for _, hp := range findAllSubmatch(hostPortRE, text, -1) {
			held = held || hp[1] == want
		}
		hostNet := matchLine(hostNetworkRE, strings.TrimSpace(text))
		if !held && hostNet {
			for _, cp := range findAllSubmatch(containerPortRE, text, -1) {
				held = held || cp[1] == want
			}
		}
		if !held {
			continue
		}
		ns := c.Namespace
		if n := findSubmatch(kubectlNSRE, c.Command); n != nil {
			ns = n[1]
		}
		h := portHolder{kind: kind, namespace: orWord(ns, "default"), name: name, hostNetwork: hostNet}.String()
		if hostNet {
			h += " (hostNetwork)"
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// schedulingChanges are, for each reason a scheduler gives, the words of
// a change that alters it: a pod's requests for "Insufficient cpu", its
// host ports for "didn't have free ports", its tolerations, selector or
// affinity, or the node pools, for a taint or a selector no node matches.
var schedulingChanges = []struct {
	reason string
	change *regexp.Regexp
}{
	{"insufficient", regexp.MustCompile(`\brequests?\b|\bresources?\b|\bcpu\b|\bmemory\b|\bgpus?\b|nvidia\.com|\breplicas?\b|\blimits?\b`)},
	{"free ports", regexp.MustCompile(`host ?ports?|hostnetwork|\bports?\b`)},
	{"taint", regexp.MustCompile(`taint|tolerat|scheduling|node ?pools?|node ?groups?`)},
	{"affinity", regexp.MustCompile(`affinity|selector|scheduling|node ?pools?|node ?groups?|\blabels?\b|\bzones?\b`)},
	{"selector", regexp.MustCompile(`affinity|selector|scheduling|node ?pools?|node ?groups?|\blabels?\b`)},
	{"volume", regexp.MustCompile(`storage|volume|\bpvc|\bzones?\b`)},
	{"persistentvolumeclaim", regexp.MustCompile(`storage|volume|\bpvc`)},
	{"topology spread", regexp.MustCompile(`topology|spread|\breplicas?\b|\bzones?\b`)},
	{"unschedulable", regexp.MustCompile(`cordon|drain|node ?pools?|node ?groups?|upgrade`)},
}

// schedulingChangeFits reports whether a change (its text, lower-cased)
// alters what the scheduler's message says refused the pods.
func schedulingChangeFits(msg, change string) bool {
	m := strings.ToLower(msg)
	for _, sc := range schedulingChanges {
		if strings.Contains(m, sc.reason) && matchLine(sc.change, change) {
			return true
		}
	}
	return false
}
