package analyst

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Pods that resolve names through a node-local DNS cache on nodes where
// the cache does not run. NodeLocal DNSCache runs a node-local-dns
// DaemonSet that answers on a link-local address (169.254.20.10) on every
// node, and the kubelet's clusterDNS (or a node group's launch template,
// --cluster-dns) points the pods' resolv.conf at it. A node where the
// DaemonSet has no pod (its affinity or nodeSelector lists the old zones
// or node pools, a taint it does not tolerate) still hands pods that
// address: nothing answers there, every lookup times out ("Temporary
// failure in name resolution", EAI_AGAIN, "i/o timeout", dig's
// "communications error to 169.254.20.10#53: timed out"), and only the
// pods on those nodes fail, while the same workload's pods elsewhere and
// the cluster DNS itself (dig @<kube-dns ClusterIP>) answer. Read from
// the pods' resolv.conf or a dig that names the address, the
// node-local-dns pods' nodes, the failing pods' nodes and their labels,
// and the DaemonSet's affinity when a transcript shows it.

// KindNodeLocalDNSMissing is a node-local DNS cache the pods are pointed
// at that does not run on their nodes.
const KindNodeLocalDNSMissing Kind = "node_local_dns_missing"

var nodeLocalDNSMissing = &mechanism{
	kind:   KindNodeLocalDNSMissing,
	class:  classCause,
	label:  "node-local DNS cache not running on the pods' nodes",
	detect: detectNodeLocalDNSMissing,
	// The workload's failed lookups, its probe failures and restarts on
	// those nodes are what the missing cache produces.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.Subject || f.fact("caller") == h.Subject
	},
	// Only a change of the nodes (a new node group, zone or launch
	// template) or of the cache's DaemonSet explains it; the workload's
	// own deploy does not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(nodeLocalChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		addr := orWord(h.fact("address"), "a node-local address")
		d := fmt.Sprintf("the pods of %s on %s resolve names through the node-local DNS cache at %s%s, but no node-local-dns pod runs on %s (it runs on %s only)",
			h.Subject, orWord(h.fact("nodes"), "some nodes"), addr, h.wrapped(" (", "address_from", ")"), orWord(h.fact("where"), "those nodes"), orWord(h.fact("cache_nodes"), "other nodes"))
		d += ", so every lookup there times out"
		if h.fact("timeout_line") != "" {
			d += h.quoteClause(" (", "timeout_line", 140) + ")"
		}
		d += " and those pods fail"
		if s := h.fact("healthy"); s != "" {
			d += fmt.Sprintf(", while its pods on nodes with the cache (%s) are fine", s)
		}
		d += h.clause("; ", "cluster_dns")
		if a := h.fact("affinity"); a != "" {
			d += "; " + a
		}
		if c := h.Trigger; c != nil {
			d += fmt.Sprintf("; the change at %s brought those nodes: %s", hm(c.Time), truncate(c.fact("description"), 200))
		}
		return d + fmt.Sprintf(". %s's own code and the cluster DNS are not at fault", h.Subject)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Run node-local-dns on %s: widen the DaemonSet's affinity or nodeSelector (and tolerations) to those nodes, or point their kubelet's clusterDNS at the cluster DNS Service until it runs there", orWord(h.fact("where"), "every node its pods use"))
		r.med("Restart the failing pods of %s once the cache runs on their nodes, or cordon and drain those nodes meanwhile", h.Subject)
		r.low("Alert when node-local-dns's desired count is below the node count, and check it in every new node group, zone or launch template")
	},
}

var (
	// nodeLocalChangeRE is a change that brings nodes or changes the
	// node-local cache: node groups, launch templates, zones, pools.
	nodeLocalChangeRE = regexp.MustCompile(`(?i)node ?group|launch template|\bzone\b|eu-\w+-\d[a-z]|us-\w+-\d[a-z]|node ?pool|karpenter|node-local|nodelocal|cluster-?dns|kubelet`)
	// resolvNameserverRE is a resolv.conf nameserver line.
	resolvNameserverRE = regexp.MustCompile(`^\s*nameserver\s+([0-9a-f.:]+)\s*$`)
	// digTimeoutToRE is dig's or a resolver's timeout naming the server.
	digTimeoutToRE = regexp.MustCompile(`(?i)communications error to ([0-9.]+)#53: timed out|lookup \S+ on ([0-9.]+):53: (?:read udp \S+: )?i/o timeout|connection timed out; no servers could be reached`)
	// affinityValueRE is a value listed under an affinity term or a
	// nodeSelector in YAML ("- eu-central-1a").
	affinityValueRE = regexp.MustCompile(`^\s*-\s+([\w.-]+)\s*$`)
)

// isNodeLocalDNS reports whether a pod is NodeLocal DNSCache's.
func isNodeLocalDNS(p *corev1.Pod) bool {
	app := orWord(p.Labels["k8s-app"], orWord(p.Labels["app.kubernetes.io/name"], orWord(p.Labels["app"], workloadOfName(p.Name))))
	return app == "node-local-dns" || app == "nodelocaldns" || strings.HasPrefix(p.Name, "node-local-dns-") || strings.HasPrefix(p.Name, "nodelocaldns-")
}

// linkLocal reports whether an address is IPv4 link-local (169.254/16),
// the node-local cache's kind of address.
func linkLocal(a string) bool {
	ip, err := netip.ParseAddr(a)
	return err == nil && ip.Is4() && ip.IsLinkLocalUnicast()
}

func detectNodeLocalDNSMissing(ev *Gathered, found []Finding) []Finding {
	// The node-local cache's pods: from kube-system, or among the pods.
	cache := append([]corev1.Pod(nil), ev.K8s.NodeDNS...)
	for i := range ev.K8s.Pods {
		if isNodeLocalDNS(&ev.K8s.Pods[i]) {
			cache = append(cache, ev.K8s.Pods[i])
		}
	}
	if len(cache) == 0 {
		return nil
	}
	cacheNodes := map[string]bool{}
	var cacheShown []string
	for _, p := range cache {
		if p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == "") {
			cacheNodes[p.Spec.NodeName] = true
			cacheShown = appendNew(cacheShown, shortNode(p.Spec.NodeName))
		}
	}
	// The workloads whose lookups fail.
	var workloads []string
	for i := range found {
		f := &found[i]
		if f.Kind == KindDNS || Kind(f.fact("line_kind")) == KindDNS {
			workloads = appendNew(workloads, orWord(f.fact("caller"), f.Subject))
		}
	}
	var out []Finding
	for _, wl := range workloads {
		addr, from, timeout := nodeLocalAddress(ev.Commands, wl)
		if addr == "" {
			continue
		}
		var missing, healthy []string
		var failing bool
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if WorkloadOfPod(p) != wl || p.Spec.NodeName == "" {
				continue
			}
			if cacheNodes[p.Spec.NodeName] {
				healthy = appendNew(healthy, p.Name)
				continue
			}
			missing = appendNew(missing, p.Spec.NodeName)
			failing = failing || !podReady(p) || slices.ContainsFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.RestartCount > 0 }) || slices.ContainsFunc(ev.Commands, func(c evidence.CommandOutput) bool {
				return c.Pod == p.Name && matchLine(digTimeoutToRE, strings.Join(c.Lines, "\n"))
			})
		}
		if len(missing) == 0 || !failing {
			continue
		}
		f := Finding{Kind: KindNodeLocalDNSMissing, Subject: wl, Namespace: ev.Scope.Namespace, Severity: SevCritical, Weight: 0.93, Source: SrcKubernetes,
			Object: "node-local-dns", Time: ev.Window.Start}
		for i := range found {
			if g := &found[i]; (g.Kind == KindDNS || Kind(g.fact("line_kind")) == KindDNS) && orWord(g.fact("caller"), g.Subject) == wl && !g.Time.IsZero() {
				f.Time = earliest(f.Time, g.Time)
				f.Namespace = orWord(g.Namespace, f.Namespace)
			}
		}
		var shown []string
		for _, n := range missing {
			shown = append(shown, shortNode(n))
		}
		f.setFact("address", addr)
		f.setFact("address_from", from)
		f.setFact("nodes", strings.Join(shown, ", "))
		f.setFact("cache_nodes", strings.Join(cacheShown, ", "))
		f.setFact("timeout_line", timeout)
		if len(healthy) > 0 {
			f.setFact("healthy", strings.Join(healthy, ", "))
		}
		where := strings.Join(shown, ", ")
		if lv := sharedNodeLabel(ev.K8s.Nodes, missing, cacheNodes); lv != "" {
			where = "the " + lv + " nodes"
			f.setFact("node_label", lv)
		}
		f.setFact("where", where)
		if a := affinityExcludes(ev.Commands, f.fact("node_label")); a != "" {
			f.setFact("affinity", a)
		}
		if c := clusterDNSAnswers(ev.Commands, addr); c != "" {
			f.setFact("cluster_dns", c)
		}
		f.setFact("affected", wl)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s resolve through %s (%s)", wl, addr, from))
		f.Evidence = append(f.Evidence, fmt.Sprintf("node-local-dns runs on %s only; %s's pods on %s have none", strings.Join(cacheShown, ", "), wl, strings.Join(shown, ", ")))
		if timeout != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("a lookup from a pod there: %q", timeout))
		}
		if a := f.fact("affinity"); a != "" {
			f.Evidence = append(f.Evidence, a)
		}
		f.Summary = fmt.Sprintf("node-local-dns (%s) does not run on the nodes of %s's failing pods", addr, wl)
		out = append(out, f)
	}
	return out
}

// nodeLocalAddress is the link-local address a workload's pods resolve
// through (their resolv.conf, or a lookup that timed out against it), how
// it was read, and a timeout line naming it.
func nodeLocalAddress(cmds []evidence.CommandOutput, wl string) (addr, from, timeout string) {
	for _, c := range cmds {
		if c.Pod != "" && workloadOfName(c.Pod) != wl {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(resolvNameserverRE, l); m != nil && linkLocal(m[1]) && addr == "" {
				addr, from = m[1], "their /etc/resolv.conf: "+strings.TrimSpace(l)
			}
			if m := findSubmatch(digTimeoutToRE, l); m != nil {
				a := m[1] + m[2]
				if a != "" && linkLocal(a) && timeout == "" {
					timeout = strings.TrimLeft(strings.TrimSpace(l), "; ")
					if addr == "" {
						addr, from = a, "the lookups that time out name it"
					}
				}
			}
		}
	}
	return addr, from, timeout
}

// sharedNodeLabel is a label value (a zone, a node group or pool) that the
// nodes without the cache share and none of the nodes with it has.
func sharedNodeLabel(nodes []corev1.Node, missing []string, cacheNodes map[string]bool) string {
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	first := byName[missing[0]]
	if first == nil {
		return ""
	}
	for _, k := range []string{"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool", "cloud.google.com/gke-nodepool", "kubernetes.azure.com/agentpool", "node-pool", "nodepool"} {
		v := first.Labels[k]
		if v == "" {
			continue
		}
		ok := true
		for _, n := range missing[1:] {
			if m := byName[n]; m == nil || m.Labels[k] != v {
				ok = false
			}
		}
		for n := range cacheNodes {
			if m := byName[n]; m != nil && m.Labels[k] == v {
				ok = false
			}
		}
		if ok {
			return v
		}
	}
	return ""
}

// affinityExcludes reads a transcript's view of the node-local-dns
// DaemonSet's affinity or nodeSelector: the values it lists, when the
// nodes' shared label value is not among them.
func affinityExcludes(cmds []evidence.CommandOutput, label string) string {
	for _, c := range cmds {
		if !strings.Contains(c.Command, "node-local-dns") && !strings.Contains(c.Command, "nodelocaldns") {
			continue
		}
		var vals []string
		in := false
		for _, l := range c.Lines {
			t := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(t, "values:"):
				in = true
				continue
			case in:
				if m := findSubmatch(affinityValueRE, l); m != nil {
					vals = append(vals, m[1])
					continue
				}
				in = false
			}
		}
		if len(vals) == 0 || label != "" && slices.Contains(vals, label) {
			continue
		}
		a := fmt.Sprintf("the node-local-dns DaemonSet's node affinity lists only %s", strings.Join(vals, ", "))
		if label != "" {
			a += ", not " + label
		}
		return a
	}
	return ""
}

// clusterDNSAnswers is a lookup sent straight to another server (the
// cluster DNS Service) from a pod that got an answer.
func clusterDNSAnswers(cmds []evidence.CommandOutput, local string) string {
	for _, c := range cmds {
		m := findSubmatch(digServerRE, c.Run)
		if m == nil || m[1]+m[2] == local || m[1]+m[2] == "" {
			continue
		}
		if c.ExitCode > 0 || len(c.Lines) == 0 || matchLine(noAnswerRE, strings.Join(c.Lines, "\n")) {
			continue
		}
		return fmt.Sprintf("the same lookup sent to %s answers (%s)", m[1]+m[2], truncate(strings.TrimSpace(c.Lines[0]), 60))
	}
	return ""
}
