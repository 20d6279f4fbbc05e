package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/analysis"
)

// A pod network that cannot set up new pods. Before a pod's containers
// start, the kubelet asks the runtime for a sandbox and the CNI plugin for
// its network; when the plugin fails, the pod stays in ContainerCreating
// with FailedCreatePodSandBox events ("failed to setup network for
// sandbox … plugin type=… failed (add): …") while the pods that already
// run are untouched, so a scale-up or a rollout half-happens. The most
// common failure is running out of pod IP addresses: the AWS VPC CNI
// cannot assign an IP because the node's ENIs are full and the subnet
// has no free addresses left for more (ipamd's
// InsufficientFreeAddressesInSubnet, describe-subnets'
// AvailableIpAddressCount 0); host-local and Calico IPAM report a range
// with no addresses left, Cilium a full range. What exhausts a subnet is
// usually something else launched into it (instances, a fleet, ENIs of
// another cluster), a change that names the subnet or its capacity.

// KindPodNetwork is a pod network that cannot set up new pods.
const KindPodNetwork Kind = "pod_network"

var podNetwork = &mechanism{
	kind:          KindPodNetwork,
	class:         classCause,
	label:         "pod network cannot set up new pods",
	event:         podNetworkEvent,
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		if m := findSubmatch(cniPluginRE, e.Message); m != nil {
			f.setFact("plugin", m[1])
		}
		if m := findSubmatch(cniErrorRE, e.Message); m != nil {
			f.setFact("cni_error", strings.TrimSpace(m[1]))
		}
		if matchLine(podIPExhaustedRE, e.Message) {
			f.setFact("no_ip", "true")
		}
	},
	detect: refinePodNetwork,
	related: func(h *Hypothesis, f *Finding) bool {
		// Pods not ready while their network is not set up.
		return (f.Kind == KindProbeFailure || f.Kind == KindRolloutStuck) && f.Subject == h.Subject
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		if s := h.fact("subnet"); s != "" && strings.Contains(t, s) {
			return true
		}
		return matchLine(podAddressChangeRE, t)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		pods := podNetworkPods(h)
		plugin := orWord(h.fact("plugin"), "the CNI plugin")
		d := fmt.Sprintf("new %s pods stay in ContainerCreating: the pod network cannot set them up — %s fails to add their network (%s)", h.Subject, plugin, quote(orWord(h.fact("cni_error"), h.fact("message")), 160))
		if len(pods) > 0 {
			d += fmt.Sprintf(" for %s", plural(len(pods), "pod", "pods"))
			if nodes := podNetworkNodes(h); len(nodes) > 0 {
				d += " on " + strings.Join(nodes, ", ")
			}
		}
		if h.fact("no_ip") != "" {
			d += "; no IP address is left to give them"
		}
		if a := h.fact("agent_pod"); a != "" {
			d += fmt.Sprintf(". The node's CNI agent %s on %s does not run (%s), so nothing there can get a pod network", a, h.fact("agent_node"), h.fact("agent_state"))
			if said := h.fact("agent_said"); said != "" {
				d += fmt.Sprintf(": it fails to start because %s", quote(said, 320))
			}
		}
		d += h.clause(": ", "subnet_said")
		if l := h.fact("ipam_line"); l != "" {
			d += fmt.Sprintf("; the IPAM daemon reports %s", quote(l, 160))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if s := h.fact("subnet"); s != "" {
			r.high("Free addresses in subnet %s (terminate or move what was launched into it) or give the pods more: add a secondary CIDR / larger subnets for pods (VPC CNI custom networking), or enable prefix delegation", s)
		} else if h.fact("no_ip") != "" {
			r.high("Give the pod network more addresses: a larger pod CIDR or IP pool, more subnets for pods, or prefix delegation; free the addresses held by what took them")
		} else if a := h.fact("agent_pod"); a != "" {
			r.high("Fix what stops CNI agent %s on %s (its log: %s), e.g. an address autodetection method or interface name that does not match the node's NICs, then restart the pod; pods there get their network once it runs", a, h.fact("agent_node"), truncate(h.fact("agent_said"), 160))
			r.med("Cordon %s until its CNI agent runs, so that new pods are scheduled onto nodes whose pod network works", h.fact("agent_node"))
		} else {
			r.high("Fix the CNI plugin on the affected nodes (its DaemonSet pods' logs, /var/log/aws-routed-eni, /etc/cni/net.d) so that new pods get their network")
		}
		if t := h.Trigger; t != nil {
			r.med("Review %s (%s): it took the addresses the pods need", t.Subject, truncate(t.fact("description"), 100))
		}
		if h.fact("agent_pod") == "" {
			r.med("Meanwhile schedule %s onto nodes in other zones or subnets that still have addresses (cordon the affected nodes)", h.Subject)
		}
		r.low("Alert on FailedCreatePodSandBox events and on free subnet addresses (AvailableIpAddressCount, awscni_ip_max - awscni_assigned_ip_addresses)")
	},
}

var (
	// sandboxNetworkRE is a sandbox that failed on its network.
	sandboxNetworkRE = regexp.MustCompile(`(?i)failed to (?:set ?up|setup) network for sandbox|networkPlugin cni failed|failed to set up sandbox container .* network|plugin type="[^"]+".* failed \(add\)|cni plugin not initialized`)
	// podIPExhaustedRE is an IPAM out of addresses, as the CNI plugins
	// say it.
	podIPExhaustedRE = regexp.MustCompile(`(?i)failed to assign an IP address|no (?:more )?(?:free )?IP(?:v4|v6)? addresses? (?:available|left)|no IP addresses available in range|no available IP|range is full|failed to allocate (?:for range|IP|an IP)|no more free affinity blocks|InsufficientFreeAddressesInSubnet|address pool (?:is )?exhausted|IP ?pool (?:is )?exhausted|no IPs available`)
	cniPluginRE      = regexp.MustCompile(`plugin type="([^"]+)"`)
	cniErrorRE       = regexp.MustCompile(`failed \((?:add|ADD)\): (.+)$`)
	// subnetRowRE reads a subnet id with its zone, CIDR and free address
	// count from a row of aws ec2 describe-subnets (table or text).
	subnetRowRE = regexp.MustCompile(`\b(subnet-[0-9a-f]+)\b.*?\b([a-z]{2}-[a-z]+-\d[a-z])\b.*?\b(\d+\.\d+\.\d+\.\d+/\d+)\b[\s|]+(\d+)\b`)
	// podAddressChangeRE is a change that takes or limits pod addresses.
	podAddressChangeRE = regexp.MustCompile(`(?i)\bsubnet|\bfleet\b|\d+ x [a-z]+\d|\beni\b|prefix delegation|WARM_(?:IP|ENI|PREFIX)_TARGET|MINIMUM_IP_TARGET|ip ?pool|\bcidr\b|\bipam\b|secondary ip`)
)

// podNetworkEvent claims a sandbox that failed on its network.
func podNetworkEvent(e *corev1.Event) (float64, bool) {
	if e.Reason != "FailedCreatePodSandBox" || !matchLine(sandboxNetworkRE, e.Message) {
		return 0, false
	}
	return 0.88, true
}

// refinePodNetwork adds to the pods' network failures what the cloud and
// the IPAM say of the addresses: a subnet of the pods' nodes with no free
// address left (aws ec2 describe-subnets), the IPAM daemon's own line
// (ipamd's InsufficientFreeAddressesInSubnet, a range set full).
func refinePodNetwork(ev *Gathered, found []Finding) []Finding {
	var idx []int
	for i := range found {
		if found[i].Kind == KindPodNetwork {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	subnet, said := exhaustedSubnet(ev)
	ipam := ipamLine(ev)
	for _, i := range idx {
		f := &found[i]
		if a := cniAgentDown(ev, podNetworkNode(ev, f)); a.pod != "" {
			f.setFact("agent_pod", a.pod)
			f.setFact("agent_node", a.node)
			f.setFact("agent_state", a.state)
			f.setFact("agent_said", strings.Join(a.said, "; "))
			e := fmt.Sprintf("CNI agent pod %s on node %s is not ready (%s)", a.pod, a.node, a.state)
			if len(a.said) > 0 {
				e += ": its log says " + quote(strings.Join(a.said, " / "), 320)
			}
			f.Evidence = append(f.Evidence, e)
			f.Weight = max(f.Weight, 0.93)
		}
		if subnet != "" {
			f.setFact("subnet", subnet)
			f.setFact("subnet_said", said)
			f.setFact("no_ip", "true")
			f.Evidence = append(f.Evidence, "aws ec2 describe-subnets: "+said)
			f.Weight = max(f.Weight, 0.95)
		}
		if ipam != "" {
			f.setFact("ipam_line", ipam)
			f.setFact("no_ip", "true")
			f.Evidence = append(f.Evidence, "IPAM log: "+quote(ipam, 240))
			f.Weight = max(f.Weight, 0.95)
		}
	}
	return nil
}

// exhaustedSubnet finds, in describe-subnets output, a subnet with no free
// address (or the fewest, under 8) and says so.
func exhaustedSubnet(ev *Gathered) (id, said string) {
	best := -1
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "describe-subnets") {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		for _, l := range c.Lines {
			m := findSubmatch(subnetRowRE, l)
			if m == nil {
				continue
			}
			n := atoiOr(m[4])
			if n < 8 && (best < 0 || n < best) {
				best, id = n, m[1]
				said = fmt.Sprintf("subnet %s (%s, %s) has %s", m[1], m[2], m[3], plural(n, "free IP address", "free IP addresses"))
			}
		}
		// JSON: one object per subnet.
		for _, obj := range strings.Split(text, "}") {
			sm := regexp.MustCompile(`"SubnetId":\s*"(subnet-[0-9a-f]+)"`).FindStringSubmatch(obj)
			am := regexp.MustCompile(`"AvailableIpAddressCount":\s*(\d+)`).FindStringSubmatch(obj)
			if sm == nil || am == nil {
				continue
			}
			if n := atoiOr(am[1]); n < 8 && (best < 0 || n < best) {
				best, id = n, sm[1]
				said = fmt.Sprintf("subnet %s has %s", sm[1], plural(n, "free IP address", "free IP addresses"))
			}
		}
	}
	return id, said
}

// ipamLine is the first line of an IPAM daemon's log (or a command's
// output) that reports addresses exhausted.
func ipamLine(ev *Gathered) string {
	for _, s := range ev.Logs {
		for _, t := range s.Templates {
			if t.Incident > 0 && matchLine(podIPExhaustedRE, t.Example) {
				return ReadableLine(t.Example)
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if matchLine(podIPExhaustedRE, l) && !strings.Contains(l, "FailedCreatePodSandBox") {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

// podNetworkPods are the pods of a hypothesis's findings.
func podNetworkPods(h *Hypothesis) []string {
	var out []string
	for _, f := range h.Primary {
		if p, ok := strings.CutPrefix(f.Object, "pod "); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// podNetworkNodes are the nodes the pods of a hypothesis were put on.
func podNetworkNodes(h *Hypothesis) []string {
	var out []string
	for _, f := range h.Primary {
		for _, r := range f.Related {
			if strings.Contains(r, ".") && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// gatherCNIAgents reads the pods of the pod network's node agents in
// kube-system (calico-node, aws-node, cilium, flannel…) when a pod's
// sandbox failed on its network: an agent that does not run on the pod's
// node is why.
func (g *gatherer) gatherCNIAgents(ctx context.Context, plan []specialist) {
	if g.sc.Namespace == "kube-system" {
		return
	}
	seen := false
	for i := range g.k8s.Events {
		if _, ok := podNetworkEvent(&g.k8s.Events[i]); ok {
			seen = true
		}
	}
	if !seen {
		return
	}
	_, pods, ok := g.kubeSystemPods(ctx, plan)
	if !ok {
		return
	}
	for i := range pods {
		if matchLine(cniAgentRE, cniAgentApp(&pods[i])) {
			g.k8s.NodeAgents = append(g.k8s.NodeAgents, pods[i])
		}
	}
}

// cniAgentApp is the app a pod belongs to, by its labels or its name.
func cniAgentApp(p *corev1.Pod) string {
	return orWord(p.Labels["k8s-app"], orWord(p.Labels["app.kubernetes.io/name"], orWord(p.Labels["app"], workloadOfName(p.Name))))
}

// cniAgentRE names the node agents of the common CNI plugins (their
// DaemonSet pods), by pod name or app label.
var cniAgentRE = regexp.MustCompile(`^(?:calico-node|aws-node|cilium|cilium-agent|kube-flannel(?:-ds)?|flannel|canal|weave-net|antrea-agent|kube-router|kube-ovn-cni|ovnkube-node|azure-cns|cilium-node)$`)

// agentFailRE is a line of a CNI agent's log that says why it stops:
// warnings, errors and fatal lines, as calico/node, the VPC CNI, Cilium
// and flannel print them.
// A line with no level is read by its words; an INFO line is not read.
var (
	agentFailRE  = regexp.MustCompile(`(?i)\[(?:WARNING|ERROR|FATAL|PANIC)\]|\blevel=(?:warn(?:ing)?|error|fatal|panic)\b|"level":"(?:warn(?:ing)?|error|fatal|panic)"|^[EWF]\d{4} `)
	agentInfoRE  = regexp.MustCompile(`(?i)\[(?:INFO|DEBUG)\]|\blevel=(?:info|debug)\b|"level":"(?:info|debug)"|^[ID]\d{4} `)
	agentWordsRE = regexp.MustCompile(`(?i)\b(?:failed to start|couldn't|unable to|cannot|could not)\b`)
)

// downAgent is a CNI agent pod that is not ready on a node, with the
// lines of its log that say why.
type downAgent struct {
	pod, node, state string
	said             []string
}

// podNetworkNode is the node the pods of a pod-network finding were put
// on ("" when not known).
func podNetworkNode(ev *Gathered, f *Finding) string {
	name, ok := strings.CutPrefix(f.Object, "pod ")
	if !ok {
		return ""
	}
	if _, n, cut := strings.Cut(name, "/"); cut {
		name = n
	}
	for i := range ev.K8s.Pods {
		if ev.K8s.Pods[i].Name == name {
			return ev.K8s.Pods[i].Spec.NodeName
		}
	}
	return ""
}

// cniAgentDown finds the CNI agent pod that is not ready on node (on any
// node when node is "" and only one agent is down), with what its log
// says before it stops.
func cniAgentDown(ev *Gathered, node string) downAgent {
	var down []downAgent
	pods := append(append([]corev1.Pod{}, ev.K8s.Pods...), ev.K8s.NodeAgents...)
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if seen[p.Namespace+"/"+p.Name] {
			continue
		}
		seen[p.Namespace+"/"+p.Name] = true
		if !matchLine(cniAgentRE, cniAgentApp(p)) || podStateUnknown(p) || podHealthy(p) {
			continue
		}
		if node != "" && p.Spec.NodeName != node {
			continue
		}
		a := downAgent{pod: p.Name, node: orWord(p.Spec.NodeName, "its node"), state: string(p.Status.Phase)}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				a.state = w.Reason
			}
			if cs.RestartCount > 0 {
				a.state += fmt.Sprintf(", %s", plural(int(cs.RestartCount), "restart", "restarts"))
			}
		}
		for _, s := range ev.Logs {
			if s.Source != p.Name && !strings.HasSuffix(s.Source, "/"+p.Name) {
				continue
			}
			var ts []analysis.LogTemplate
			for _, t := range s.Templates {
				if matchLine(agentFailRE, t.Example) || !matchLine(agentInfoRE, t.Example) && matchLine(agentWordsRE, t.Example) {
					ts = append(ts, t)
				}
			}
			slices.SortStableFunc(ts, func(x, y analysis.LogTemplate) int { return x.FirstSeen.Compare(y.FirstSeen) })
			for _, t := range ts {
				if len(a.said) < 2 {
					a.said = append(a.said, agentLine(t.Example))
				}
			}
		}
		down = append(down, a)
	}
	if len(down) == 1 || node != "" && len(down) > 0 {
		return down[0]
	}
	return downAgent{}
}

// agentLine is a CNI agent's log line without its timestamp, level and
// source location.
func agentLine(l string) string {
	l = ReadableLine(l)
	if i := strings.Index(l, ": "); i > 0 && strings.Contains(l[:i], ".go ") {
		l = l[i+2:]
	}
	return strings.TrimSpace(l)
}
