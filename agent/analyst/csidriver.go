package analyst

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A CSI driver not registered on the pod's node: the kubelet's FailedMount
// says 'kubernetes.io/csi: attacher.MountDevice failed to create
// newCsiDriverClient: driver name ebs.csi.aws.com not found in the list of
// registered CSI drivers'. The volume attached; the node cannot mount it
// because the driver's node plugin (a DaemonSet pod on that node:
// ebs-csi-node-…, csi-rbdplugin-…, pdcsi-node-…) never registered with the
// kubelet — it crash-loops or is not scheduled there. The pod waits in
// ContainerCreating. The mount failure is the symptom; the node plugin on
// that node, and what its log says, is the cause. Other nodes, whose
// plugins run, mount the same volumes.

// KindCSIDriver is a volume that cannot be mounted because its CSI driver
// is not registered on the node.
const KindCSIDriver Kind = "csi_driver"

var csiDriver = &mechanism{
	kind:  KindCSIDriver,
	class: classCause,
	label: "volume cannot be mounted: the CSI driver is not registered on the node",
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(nodeChangeRE, changeText(c)) || h.fact("plugin") != "" && strings.Contains(changeText(c), strings.ToLower(workloadOfName(h.fact("plugin"))))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot start: its volume cannot be mounted on node %s because the CSI driver %s is not registered there (the kubelet reports %q)",
			h.Subject, orWord(h.fact("node"), "its node"), h.fact("driver"), truncate(h.fact("error"), 140))
		if p := h.fact("plugin_state"); p != "" {
			d += "; the driver's node plugin on that node is not running: " + p
		} else {
			d += "; no node plugin of the driver was seen running on that node"
		}
		if l := h.fact("plugin_log"); l != "" {
			d += "; its log says: " + truncate(l, 220)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		node := orWord(h.fact("node"), "the node")
		r.high("Fix the CSI node plugin on %s (%s): %s; once the driver registers (kubectl get csinode %s lists %s) the mount of %s proceeds on its own",
			node, orWord(h.fact("plugin"), "the driver's DaemonSet pod"), orWord(truncate(h.fact("plugin_log"), 160), "read its events and previous logs"), node, orWord(h.fact("driver"), "the driver"), h.Subject)
		if h.Trigger != nil {
			r.med("Compare the node's setup with the nodes whose plugin runs: the change %s (%s) is the likely difference", orWord(h.Trigger.fact("revision"), h.Trigger.Subject), truncate(h.Trigger.fact("description"), 120))
		}
		r.med("Meanwhile cordon %s and delete the pod so it is scheduled on a node whose CSI plugin is registered (a zonal volume needs a node in its zone)", node)
		r.low("Alert on CSI node plugin pods not ready and on csinode objects without the driver")
	},
}

// csiUnregisteredRE reads the driver out of a mount failure that says the
// node has no such CSI driver registered.
var csiUnregisteredRE = regexp.MustCompile(`driver name (\S+) not found in the list of registered CSI drivers`)

// nodeChangeRE is a change to how nodes are built or set up: a node group
// or pool, a launch template or image, the instance metadata options.
var nodeChangeRE = regexp.MustCompile(`(?i)node ?group|node ?pool|launch template|\bami\b|machine image|instance metadata|\bimds|hop limit|kubelet|bootstrap|user ?data|karpenter|node ?class`)

// csiPluginPod reports how well a pod's name fits a CSI driver's node
// plugin: 2 when it names the driver's leading label and "csi"
// (ebs-csi-node for ebs.csi.aws.com), 1 for any CSI plugin pod
// (csi-rbdplugin, pdcsi-node), 0 for none.
func csiPluginPod(pod, driver string) int {
	n := strings.ToLower(pod)
	if !strings.Contains(n, "csi") {
		return 0
	}
	lead, _, _ := strings.Cut(strings.ToLower(driver), ".")
	if lead != "" && lead != "csi" && strings.Contains(n, lead) {
		return 2
	}
	return 1
}

// csiMount is a mount failure for want of a registered CSI driver.
type csiMount struct {
	finding *Finding
	driver  string
	node    string
}

// csiMounts finds the mount failures that name an unregistered CSI driver,
// with the node of the pod that failed.
func csiMounts(found []Finding, pods []corev1.Pod) []csiMount {
	var out []csiMount
	for i := range found {
		f := &found[i]
		if f.Kind != KindMountFailure {
			continue
		}
		m := findSubmatch(csiUnregisteredRE, f.fact("message"))
		if m == nil {
			continue
		}
		node := ""
		pod := strings.TrimPrefix(f.Object, "pod ")
		for j := range pods {
			if pods[j].Namespace+"/"+pods[j].Name == pod {
				node = pods[j].Spec.NodeName
			}
		}
		if node == "" {
			for _, r := range f.Related {
				if isNodeName(r) {
					node = r
				}
			}
		}
		out = append(out, csiMount{finding: f, driver: m[1], node: node})
	}
	return out
}

// csiPlugin is what was read of the driver's node plugin on the node.
type csiPlugin struct {
	Pods  []corev1.Pod
	Lines []evidence.LogLine
	// Drivers is what `kubectl get csinode NODE` said of the node: the
	// number of drivers registered there ("" when not shown).
	Drivers string
	// Restarted names the plugin pods whose previous container's log was
	// read: they restarted, whatever their listed state.
	Restarted []string
}

// gatherCSIPlugins follows a mount failure for want of a registered CSI
// driver to the driver's node plugin pod on the same node (any namespace:
// kube-system, the driver's own) and its logs.
func (g *gatherer) gatherCSIPlugins(ctx context.Context, plan []specialist, found []Finding) []Finding {
	mounts := csiMounts(found, g.k8s.Pods)
	if len(mounts) == 0 || g.src == nil {
		return nil
	}
	var all []corev1.Pod
	for _, sp := range plan {
		if !sp.run.Has("list_pods") {
			continue
		}
		if out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": "*"}); ok {
			all, _ = as[[]corev1.Pod](out)
		}
		break
	}
	var out []Finding
	done := map[string]bool{}
	for _, m := range mounts {
		key := m.driver + "@" + m.node
		if done[key] {
			continue
		}
		done[key] = true
		var b csiPlugin
		best := 0
		for _, p := range all {
			if m.node == "" || p.Spec.NodeName != m.node {
				continue
			}
			s := csiPluginPod(p.Name, m.driver)
			if s == 0 || s < best {
				continue
			}
			if s > best {
				best, b.Pods = s, nil
			}
			b.Pods = append(b.Pods, p)
		}
		for _, sp := range plan {
			if !sp.run.Has("get_pod_logs") {
				continue
			}
			for i, p := range b.Pods {
				if i >= 2 || ctx.Err() != nil || podReady(&p) {
					break
				}
				// A crashing plugin's reason is in its previous container's
				// log; a registrar waiting for it, in the current one.
				prev := g.containerLog(ctx, sp, &p, "", true)
				if len(prev) > 0 {
					b.Restarted = append(b.Restarted, p.Namespace+"/"+p.Name)
				}
				b.Lines = append(b.Lines, prev...)
				b.Lines = append(b.Lines, g.containerLog(ctx, sp, &p, "", false)...)
			}
			break
		}
		b.Drivers = csiNodeDrivers(g.commands, m.node)
		out = append(out, csiFinding(m, b, g.sc.Window.Start))
	}
	return out
}

// csiNodeDrivers reads the DRIVERS column of a `kubectl get csinode`
// output for node ("" when no output shows it).
func csiNodeDrivers(cmds []evidence.CommandOutput, node string) string {
	for _, c := range cmds {
		if node == "" || !strings.Contains(c.Command, "csinode") || len(c.Lines) < 2 {
			continue
		}
		head := strings.Fields(c.Lines[0])
		col := slices.Index(head, "DRIVERS")
		if col < 0 || len(head) == 0 || head[0] != "NAME" {
			continue
		}
		for _, l := range c.Lines[1:] {
			f := strings.Fields(l)
			if len(f) > col && f[0] == node {
				return f[col]
			}
		}
	}
	return ""
}

// csiFinding builds the finding from the mount failure and what was read
// of the driver's node plugin on that node. Without a plugin seen failing
// it restates the kubelet's message: one hop short (state_only).
func csiFinding(m csiMount, b csiPlugin, start time.Time) Finding {
	mf := m.finding
	f := Finding{Kind: KindCSIDriver, Subject: mf.Subject, Object: mf.Object, Namespace: mf.Namespace, Source: SrcKubernetes,
		Severity: SevCritical, Weight: 0.8, Time: mf.Time, Related: slices.Clone(mf.Related)}
	if f.Time.IsZero() {
		f.Time = start
	}
	f.setFact("driver", m.driver)
	f.setFact("node", m.node)
	f.setFact("error", findString(csiUnregisteredRE, mf.fact("message")))
	f.Evidence = append(f.Evidence, mf.Evidence...)
	var states []string
	for i := range b.Pods {
		p := &b.Pods[i]
		restarted := slices.Contains(b.Restarted, p.Namespace+"/"+p.Name)
		switch {
		case podReady(p) && !restarted:
			continue
		case podStateUnknown(p) || podReady(p):
			if !restarted {
				continue
			}
			states = append(states, p.Namespace+"/"+p.Name+" restarted (its previous container's log was read)")
		default:
			states = append(states, csiPodState(p))
		}
		if !slices.Contains(f.Related, workloadOfName(p.Name)) {
			f.Related = append(f.Related, workloadOfName(p.Name))
		}
		f.setFact("plugin", p.Namespace+"/"+p.Name)
	}
	if len(states) > 0 {
		f.Weight = 0.9
		f.setFact("plugin_state", strings.Join(states, "; "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("the %s node plugin on %s: %s", m.driver, orWord(m.node, "the node"), strings.Join(states, "; ")))
	}
	if b.Drivers != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("csinode %s lists %s registered CSI driver(s)", m.node, b.Drivers))
	}
	if l := pluginErrorLine(b.Lines); l.Text != "" {
		f.setFact("plugin_log", strings.TrimSpace(l.Text))
		f.Evidence = append(f.Evidence, "log of "+orWord(strings.TrimSuffix(l.Source, "/"), f.fact("plugin"))+": "+truncate(strings.TrimSpace(l.Text), 240))
	}
	if len(states) == 0 && f.fact("plugin_log") == "" {
		f.setFact("state_only", "true")
	}
	f.Summary = fmt.Sprintf("%s cannot mount its volume on %s: CSI driver %s not registered there", f.Subject, orWord(m.node, "its node"), m.driver)
	return f
}

// csiPodState says how a node plugin pod fails: its waiting reason,
// ready containers and restarts.
func csiPodState(p *corev1.Pod) string {
	ready, restarts, reason := 0, int32(0), ""
	for _, c := range p.Status.ContainerStatuses {
		if c.Ready {
			ready++
		}
		restarts += c.RestartCount
		if w := c.State.Waiting; w != nil && w.Reason != "" && reason == "" {
			reason = w.Reason
		}
	}
	st := fmt.Sprintf("%s/%s %s", p.Namespace, p.Name, orWord(reason, orWord(string(p.Status.Phase), "not ready")))
	if n := len(p.Status.ContainerStatuses); n > 0 {
		st += fmt.Sprintf(" (%d/%d containers ready, %d restarts)", ready, n, restarts)
	}
	return st
}

// pluginErrorLine picks the line of a failing plugin's log that says why:
// the last error line (klog's E/F prefix, or an error word), preferring an
// error-level line to a warning.
func pluginErrorLine(lines []evidence.LogLine) evidence.LogLine {
	var warn evidence.LogLine
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i].Text)
		if matchLine(klogErrorRE, t) {
			return lines[i]
		}
		if warn.Text == "" && matchLine(backendErrorRE, t) {
			warn = lines[i]
		}
	}
	return warn
}

// klogErrorRE is a klog line at error or fatal level ("E1125 17:45:11…").
var klogErrorRE = regexp.MustCompile(`^[EF]\d{4} \d{2}:\d{2}:\d{2}`)
