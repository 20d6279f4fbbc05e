package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A node that was NotReady and is Ready again: the page (KubeNodeNotReady,
// a NodeNotReady event) tells of an episode that is over. The node's Ready
// condition is True since a transition after the NotReady event (a
// NodeReady event says so too), its pods run, and what took it down for a
// while is in its own journal: the container runtime stopped (containerd
// or CRI-O restarted by a package upgrade, kubelet "container runtime is
// down", "PLEG is not healthy"), the kubelet restarted, the network plugin
// came back. The answer to "is it still a problem, do I replace it?" is no:
// it recovered, and what to change is how the maintenance ran (drain
// before patching the runtime), not the node.

// KindNodeRecovered is a node NotReady for a while and Ready again since.
const KindNodeRecovered Kind = "node_recovered"

// nodeStableFor is how long a node must have been Ready again to count as
// recovered rather than flapping.
const nodeStableFor = 10 * time.Minute

var (
	// nodeDownLineRE is a node's journal saying why its kubelet could not
	// run pods: the container runtime down or restarting, the kubelet's
	// pod lifecycle stalled, the network plugin not ready.
	nodeDownLineRE = regexp.MustCompile(`(?i)container runtime is down|Container runtime sanity check failed|container runtime (?:status check may not have completed|not ready)|(?:containerd|crio|dockershim|cri-dockerd)\.sock[^\n]{0,80}(?:connection refused|no such file)|PLEG is not healthy|Stopping (?:containerd|crio|docker|kubelet)(?:\.service)?|Stopped (?:containerd|crio|docker|kubelet)(?:\.service)?|NetworkPluginNotReady|network plugin is not ready|cni plugin not initialized`)
	// nodeBackLineRE is the runtime or kubelet starting again.
	nodeBackLineRE = regexp.MustCompile(`(?i)Started (?:containerd|crio|docker|kubelet)(?:\.service)?|containerd successfully booted|starting containerd|Started Container Runtime|event="NodeReady"`)
	// pkgUpgradeRE is a package manager replacing a package (dnf, yum,
	// apt, zypper): what restarted the runtime.
	pkgUpgradeRE  = regexp.MustCompile(`(?i)\b(?:Upgrading|Upgraded|Updating|Updated|Unpacking|Setting up|Preparing to unpack)[: ]+\s*(?:\S*/)?((?:containerd|cri-o|crio|docker|runc|kubelet|moby)[\w.:+~-]*)`)
	runtimeNameRE = regexp.MustCompile(`(?i)\b(containerd|crio|cri-o|docker)\b`)
	// nodeHungTaskRE is the kernel's hung-task watchdog: a task stuck in
	// uninterruptible sleep (D state), most often waiting on a disk.
	nodeHungTaskRE = regexp.MustCompile(`(?i)\btask (\S+):\d+ blocked for more than (\d+) seconds`)
	// nodeDiskIORE is the kernel saying a block device stopped answering:
	// NVMe command timeouts and controller resets, SCSI/virtio I/O errors,
	// a filesystem's failed writes.
	nodeDiskIORE = regexp.MustCompile(`(?i)\b(nvme\d+(?:n\d+)?|xvd[a-z]+|sd[a-z]+|vd[a-z]+)\b\]?:?[^\n]{0,90}?(?:\btime(?:d )?out\b|I/O error|reset controller|disable controller|Removing after probe failure)|\bI/O error,? (?:on )?dev(?:ice)? (\w+)`)
	// nodeLockupRE is a CPU or the kernel wedged: soft/hard lockups, RCU
	// stalls, a panic.
	nodeLockupRE = regexp.MustCompile(`(?i)soft lockup - CPU#\d+ stuck|hard LOCKUP|rcu_\w+ (?:self-)?detected stalls?|Kernel panic - not syncing`)
	// nodeRebootRE is the node going down and booting again.
	nodeRebootRE = regexp.MustCompile(`(?i)System is rebooting|System is powering down|reboot: Restarting system|-- Reboot --|\bkernel: Linux version \d`)
	// maintenanceRE is a change that patches, upgrades or reboots nodes.
	maintenanceRE = regexp.MustCompile(`(?i)patch|upgrade|maintenance|reboot|\bami\b|kernel|security updates|unattended`)
)

var nodeRecovered = &mechanism{
	kind:   KindNodeRecovered,
	class:  classCause,
	label:  "node NotReady for a while, Ready again since",
	detect: detectNodeRecovered,
	// The node's own journal and its NotReady episode belong to it.
	related: func(h *Hypothesis, f *Finding) bool {
		short, _, _ := strings.Cut(h.Subject, ".")
		return f.Kind == KindNodeNotReady && strings.EqualFold(f.fact("node"), h.Subject) ||
			short != "" && strings.Contains(strings.ToLower(f.Subject), strings.ToLower(short))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && c.Kind != KindFeatureFlag && matchLine(maintenanceRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("node %s has recovered and is not a problem now: it was NotReady from %s to %s UTC", h.Subject, orWord(h.fact("down_at"), "?"), orWord(h.fact("ready_at"), "?"))
		d += h.clause(" because ", "why")
		d += fmt.Sprintf(", and has been Ready again since %s UTC (%s, kubelet posting ready status", orWord(h.fact("ready_at"), "?"), h.fact("ready_for"))
		d += h.clause("; ", "pods")
		if h.fact("kernel") != "" {
			d += "). The episode was a fault of the node itself, not maintenance: the pods on it stalled and restarted with it; watch the node and its disk for a recurrence"
			return d
		}
		d += "). The NotReady alert tells of that transient episode: no need to cordon, drain or replace the node"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("kernel") != "" {
			r.high("Check the health of node %s's disk and instance (cloud status checks, the volume's error and latency metrics, nvme/smartctl error log); cordon, drain and replace the node if the I/O timeouts or hung tasks come back", h.Subject)
			r.med("Spread stateful replicas over nodes (anti-affinity) so that one node's hang does not stall the whole workload")
			r.low("Alert on kernel hung-task and disk I/O error lines in node journals (node-problem-detector's KernelDeadlock/TaskHung and ReadonlyFilesystem conditions)")
			return
		}
		r.high("No action needed on node %s: it has been Ready since %s UTC; do not cordon or replace it (check that the alert has resolved)", h.Subject, orWord(h.fact("ready_at"), "its recovery"))
		if h.fact("runtime") != "" || h.fact("upgrade") != "" {
			r.med("Patch nodes the way a rollout does: cordon and drain each node before its container runtime or kubelet is upgraded or restarted, uncordon after it is Ready (or replace nodes with a patched image)")
		} else {
			r.med("Read the journal of %s around %s (journalctl -u kubelet -u containerd) to see what stopped the kubelet from reporting", h.Subject, orWord(h.fact("down_at"), "the episode"))
		}
		r.low("Give KubeNodeNotReady a for: longer than planned maintenance, or silence it during the maintenance window")
	},
}

// detectNodeRecovered finds the nodes that were NotReady in the window
// (a NodeNotReady event, a journal line) and whose Ready condition has
// been True since a later transition, for nodeStableFor at least.
func detectNodeRecovered(ev *Gathered, found []Finding) []Finding {
	now := ev.Window.End
	if now.IsZero() {
		return nil
	}
	var out []Finding
	for i := range ev.K8s.Nodes {
		n := &ev.K8s.Nodes[i]
		var ready *corev1.NodeCondition
		for j := range n.Status.Conditions {
			if c := &n.Status.Conditions[j]; c.Type == corev1.NodeReady {
				ready = c
			}
		}
		if ready == nil || ready.Status != corev1.ConditionTrue || ready.LastTransitionTime.IsZero() {
			continue
		}
		back := ready.LastTransitionTime.Time
		if now.Sub(back) < nodeStableFor || !ev.Window.recent(back) {
			continue
		}
		// The NotReady episode before it: the event's finding, or the
		// kubelet's own line.
		var down time.Time
		var downEv []string
		for k := range found {
			f := &found[k]
			if f.Kind != KindNodeNotReady || !strings.EqualFold(f.fact("node"), n.Name) && !strings.EqualFold(f.Subject, n.Name) {
				continue
			}
			if !f.Time.IsZero() && f.Time.Before(back) {
				down = earliest(down, f.Time)
				if len(f.Evidence) > 0 {
					downEv = append(downEv, f.Evidence[0])
				}
			}
		}
		why, runtime, upgrade, lines := nodeDownReason(ev.Logs, n.Name, back)
		kernel, rebooted, klines := nodeKernelFault(ev.Logs, n.Name, back)
		if kernel != "" {
			if why != "" {
				why = kernel + "; then " + why
			} else {
				why = kernel
			}
			if rebooted {
				why += "; the node was rebooted"
			}
			lines = append(klines, lines...)
			slices.SortStableFunc(lines, func(a, b nodeLine) int { return a.at.Compare(b.at) })
		}
		if down.IsZero() && len(lines) == 0 {
			continue
		}
		// The journal dates the episode's start better than an event's
		// age does: the runtime stopping, the kubelet losing it.
		for _, l := range lines {
			if (matchLine(nodeDownLineRE, l.text) || kernel != "" && !matchLine(nodeRebootRE, l.text) && !matchLine(nodeBackLineRE, l.text)) && !l.at.IsZero() {
				down = earliest(down, l.at)
			}
		}
		if down.IsZero() {
			down = lines[0].at
		}
		f := Finding{Kind: KindNodeRecovered, Subject: n.Name, Object: "node " + n.Name, Source: SrcKubernetes, Time: down,
			Severity: SevInfo, Weight: 0.95}
		f.setFact("node", n.Name)
		f.setFact("down_at", down.UTC().Format("15:04"))
		f.setFact("ready_at", back.UTC().Format("15:04"))
		f.setFact("ready_for", fmt.Sprintf("%d min", int(now.Sub(back).Minutes())))
		f.setFact("why", why)
		f.setFact("runtime", runtime)
		f.setFact("upgrade", upgrade)
		f.setFact("kernel", kernel)
		running, total := nodePods(ev.K8s.Pods, n.Name)
		if total > 0 {
			f.setFact("pods", fmt.Sprintf("%d of its %d pods Running and ready", running, total))
		}
		f.Summary = fmt.Sprintf("node %s NotReady %s-%s UTC, Ready again since", n.Name, hm(down), hm(back))
		f.Evidence = []string{fmt.Sprintf("node %s condition Ready=True since %s (%s before now), reason %s: %s", n.Name, ts(back), now.Sub(back).Round(time.Minute), orDash(ready.Reason), quote(ready.Message, 120))}
		f.Evidence = append(f.Evidence, downEv...)
		for _, l := range lines {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s journal %s: %s", n.Name, hm(l.at), quote(ReadableLine(l.text), 200)))
			if len(f.Evidence) >= 6 {
				break
			}
		}
		out = append(out, f)
	}
	return out
}

type nodeLine struct {
	at   time.Time
	text string
}

// nodeDownReason reads a node's own journal (the log sources named after
// it) for why its kubelet could not run pods before back: the runtime
// down, and the package upgrade that restarted it.
func nodeDownReason(sets []LogSet, node string, back time.Time) (why, runtime, upgrade string, lines []nodeLine) {
	short, _, _ := strings.Cut(strings.ToLower(node), ".")
	var downLine string
	for i := range sets {
		set := &sets[i]
		if !strings.Contains(strings.ToLower(set.Source+" "+set.Subject), short) {
			continue
		}
		for _, t := range set.Templates {
			if t.FirstSeen.After(back.Add(5 * time.Minute)) {
				continue
			}
			for _, l := range t.Lines() {
				switch {
				case matchLine(pkgUpgradeRE, l):
					if upgrade == "" {
						upgrade = findSubmatch(pkgUpgradeRE, l)[1]
						lines = append(lines, nodeLine{t.FirstSeen, l})
					}
				case matchLine(nodeDownLineRE, l):
					if downLine == "" || strings.Contains(strings.ToLower(l), "runtime is down") && !strings.Contains(strings.ToLower(downLine), "runtime is down") {
						downLine = l
					}
					if runtime == "" {
						if m := findSubmatch(runtimeNameRE, l); m != nil {
							runtime = strings.ToLower(m[1])
						}
					}
					if len(lines) < 4 && !slices.ContainsFunc(lines, func(x nodeLine) bool { return x.text == l }) {
						lines = append(lines, nodeLine{t.FirstSeen, l})
					}
				case matchLine(nodeBackLineRE, l):
					if len(lines) < 5 && !slices.ContainsFunc(lines, func(x nodeLine) bool { return x.text == l }) {
						lines = append(lines, nodeLine{t.LastSeen, l})
					}
				}
			}
		}
	}
	slices.SortStableFunc(lines, func(a, b nodeLine) int { return a.at.Compare(b.at) })
	if downLine == "" {
		return "", runtime, upgrade, lines
	}
	low := strings.ToLower(downLine)
	switch {
	case strings.Contains(low, "network plugin") || strings.Contains(low, "networkpluginnotready") || strings.Contains(low, "cni"):
		why = "its network plugin was not ready"
	case runtime != "" || strings.Contains(low, "runtime"):
		why = fmt.Sprintf("its container runtime (%s) was down", orWord(runtime, "the CRI"))
		if upgrade != "" {
			why += fmt.Sprintf(", restarted by a package upgrade to %s", upgrade)
		}
	default:
		why = "its kubelet stopped"
	}
	why += fmt.Sprintf(" (%s)", quote(ReadableLine(downLine), 140))
	return why, runtime, upgrade, lines
}

// nodeKernelFault reads a node's own journal for the kernel wedging before
// back: a disk that stopped answering I/O, tasks hung in D state, a CPU
// lockup; and whether the node was rebooted. It says what hung, in words.
func nodeKernelFault(sets []LogSet, node string, back time.Time) (fault string, rebooted bool, lines []nodeLine) {
	short, _, _ := strings.Cut(strings.ToLower(node), ".")
	var devs, tasks []string
	var hungFor, lockup string
	add := func(at time.Time, l string) {
		if len(lines) < 3 && !slices.ContainsFunc(lines, func(x nodeLine) bool { return x.text == l }) {
			lines = append(lines, nodeLine{at, l})
		}
	}
	for i := range sets {
		set := &sets[i]
		if !strings.Contains(strings.ToLower(set.Source+" "+set.Subject), short) {
			continue
		}
		for _, t := range set.Templates {
			if t.FirstSeen.After(back) {
				continue
			}
			for _, l := range t.Lines() {
				if m := findSubmatch(nodeDiskIORE, l); m != nil {
					dev := strings.ToLower(m[1] + m[2])
					if !slices.ContainsFunc(devs, func(d string) bool { return strings.HasPrefix(dev, d) || strings.HasPrefix(d, dev) }) {
						devs = append(devs, dev)
					}
					add(t.FirstSeen, l)
				}
				if m := findSubmatch(nodeHungTaskRE, l); m != nil {
					if !slices.Contains(tasks, m[1]) && len(tasks) < 4 {
						tasks = append(tasks, m[1])
					}
					if hungFor == "" {
						hungFor = m[2]
					}
					add(t.FirstSeen, l)
				}
				if m := findString(nodeLockupRE, l); m != "" && lockup == "" {
					lockup = m
					add(t.FirstSeen, l)
				}
				if matchLine(nodeRebootRE, l) {
					rebooted = true
				}
			}
		}
	}
	if len(devs) == 0 && len(tasks) == 0 && lockup == "" {
		return "", false, nil
	}
	var parts []string
	if len(devs) > 0 {
		parts = append(parts, fmt.Sprintf("its disk %s stopped answering I/O (kernel I/O timeouts and errors)", strings.Join(devs, ", ")))
	}
	if len(tasks) > 0 {
		parts = append(parts, fmt.Sprintf("the kernel reported hung tasks blocked for more than %s seconds (%s)", hungFor, strings.Join(tasks, ", ")))
	}
	if lockup != "" {
		parts = append(parts, fmt.Sprintf("the kernel locked up (%q)", lockup))
	}
	fault = "its kernel hung: " + strings.Join(parts, "; ")
	slices.SortStableFunc(lines, func(a, b nodeLine) int { return a.at.Compare(b.at) })
	return fault, rebooted, lines
}

// nodePods counts the pods on a node and those Running and ready.
func nodePods(pods []corev1.Pod, node string) (running, total int) {
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		total++
		if p.Status.Phase == corev1.PodRunning && podReady(p) {
			running++
		}
	}
	return running, total
}
