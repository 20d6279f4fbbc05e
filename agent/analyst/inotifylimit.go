package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An inotify limit of the node: a process that watches files (fsnotify,
// a config reloader, a log shipper tailing files) fails to create its
// watcher with "too many open files" (EMFILE from inotify_init: the
// user's inotify instances are at fs.inotify.max_user_instances) or "no
// space left on device" (ENOSPC from inotify_add_watch: the watches are
// at fs.inotify.max_user_watches). Its own file descriptors are nowhere
// near their limit; the node's sysctl is. When the failing pods run on
// the nodes whose sysctl is low (the kernel default of 128 instances or
// 8192 watches) and the others are healthy on nodes where it was raised,
// the node image or its bootstrap stopped setting it: the change that
// rolled those nodes (a new AMI, node image, launch template) is the
// trigger.
var inotifyLimit = &mechanism{
	kind:           KindInotifyLimit,
	class:          classCause,
	label:          "inotify limit of the node (fs.inotify sysctl)",
	detect:         detectInotifyLimit,
	fitsChange:     changeSays(nodeImageChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot create its file watcher (inotify, fsnotify) on nodes %s: their %s is %s, where nodes %s have %s, so each %s fails with %s once the node's processes hold that many — the node's inotify limit (a sysctl), not the process's own file descriptors",
			h.Subject, h.fact("low_nodes"), h.fact("setting"), h.fact("low"), h.fact("high_nodes"), h.fact("high"), h.fact("call"), h.fact("errno"))
		if os := h.fact("low_image"); os != "" {
			d += fmt.Sprintf("; the low nodes run the node image %s, the others %s", os, h.fact("high_image"))
		}
		if c := h.fact("change"); c != "" {
			d += fmt.Sprintf("; they came with %s, whose node image no longer sets the sysctl", c)
		}
		if l := h.fact("line"); l != "" {
			d += " — " + quote(ReadableLine(l), 200)
		}
		if n := h.fact("healthy"); n != "" {
			d += fmt.Sprintf(". Its pods on the other nodes (%s) run the same version without error", n)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Set %s=%s on nodes %s again (a sysctl drop-in in /etc/sysctl.d applied by the node image or its bootstrap user data, or a privileged DaemonSet that writes it), then restart the failing pods", h.fact("setting"), h.fact("high"), h.fact("low_nodes"))
		if c := h.fact("change"); c != "" {
			r.high("Fix the node image change (%s) so new nodes get the sysctl, or roll its node group back to the previous image until then", truncate(c, 160))
		}
		r.med("Do not roll back %s: its pods on nodes with the higher limit run fine", h.Subject)
		r.low("Check fs.inotify.* on every new node image before it rolls out (kubectl debug node/NAME -- chroot /host sysctl fs.inotify)")
	},
}

// KindInotifyLimit is a node's inotify limit (fs.inotify sysctl) that a
// file watcher hits.
const KindInotifyLimit Kind = "inotify_limit"

var (
	// inotifyLineRE is a watcher failing to start or add a watch.
	inotifyLineRE = regexp.MustCompile(`(?i)(inotify|fsnotify|\bwatch(?:er|ing)?\b|file target manager|\btail(?:er|ing)?\b)[^\n]*?(too many open files|no space left on device)|(too many open files|no space left on device)[^\n]*?(inotify|fsnotify|\bwatch(?:er)?\b)`)
	// inotifySysctlRE is sysctl's output (sysctl fs.inotify, sysctl -a)
	// or the file read under /proc/sys.
	inotifySysctlRE = regexp.MustCompile(`^\s*fs\.inotify\.(max_user_instances|max_user_watches)\s*[=:]\s*(\d+)\s*$`)
	inotifyProcRE   = regexp.MustCompile(`/proc/sys/fs/inotify/(max_user_instances|max_user_watches)|sysctl -n fs\.inotify\.(max_user_instances|max_user_watches)`)
	// inotifyNodeRE names the node a command ran on: kubectl debug
	// node/NAME, ssh NAME, a node shell.
	inotifyNodeRE = regexp.MustCompile(`(?:node/|ssh\s+(?:\S+@)?|node-shell\s+)([\w.-]+)`)
	// nodeImageChangeRE is a change that rolls nodes to another image.
	nodeImageChangeRE = regexp.MustCompile(`(?i)\bami\b|ami-[0-9a-f]+|node image|machine image|os image|image family|launch template|bottlerocket|ubuntu|amazon linux|\bal2(?:023)?\b|cos_containerd|node ?pool upgrade|node group .*(?:rolling|update|upgrade)`)
)

// detectInotifyLimit reads, for a service whose watcher fails with
// EMFILE or ENOSPC, the inotify sysctls of the nodes handed over, and
// names the nodes whose limit is lower than the others'.
func detectInotifyLimit(ev *Gathered, found []Finding) []Finding {
	var fail *Finding
	for i := range found {
		f := &found[i]
		if l := f.fact("line"); l != "" && matchLine(inotifyLineRE, l) && (fail == nil || slices.Contains(ev.Scope.Subjects(), f.Subject) && !slices.Contains(ev.Scope.Subjects(), fail.Subject)) {
			fail = f
		}
	}
	if fail == nil {
		return nil
	}
	setting, errno, call := "max_user_instances", "\"too many open files\" (EMFILE)", "inotify_init"
	if strings.Contains(strings.ToLower(fail.fact("line")), "no space left") {
		setting, errno, call = "max_user_watches", "\"no space left on device\" (ENOSPC)", "inotify_add_watch"
	}
	// The setting per node.
	vals := map[string]int{}
	for _, c := range ev.Commands {
		node := c.Host
		if m := findSubmatch(inotifyNodeRE, c.Command+" "+c.Run); m != nil {
			node = m[1]
		}
		if node == "" {
			continue
		}
		proc := findSubmatch(inotifyProcRE, c.Run)
		for _, l := range c.Lines {
			if m := findSubmatch(inotifySysctlRE, l); m != nil && m[1] == setting {
				vals[node], _ = strconv.Atoi(m[2])
			}
		}
		if proc != nil && proc[1]+proc[2] == setting && len(c.Lines) >= 1 {
			if n, err := strconv.Atoi(strings.TrimSpace(c.Lines[len(c.Lines)-1])); err == nil {
				vals[node] = n
			}
		}
	}
	lo, hi := -1, -1
	for _, v := range vals {
		if lo < 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if len(vals) < 2 || lo >= hi {
		return nil
	}
	var low, high []string
	for n, v := range vals {
		if v == lo {
			low = append(low, n)
		} else if v == hi {
			high = append(high, n)
		}
	}
	slices.Sort(low)
	slices.Sort(high)
	// The service's pods: failing ones on the low nodes, healthy ones
	// elsewhere. A failing pod on a high node is no node limit.
	subj := fail.Subject
	var healthy []string
	for _, p := range ev.K8s.Pods {
		if workloadOfName(p.Name) != subj && !strings.HasPrefix(p.Name, subj+"-") {
			continue
		}
		bad := false
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 || cs.State.Waiting != nil || !cs.Ready {
				bad = true
			}
		}
		onLow := slices.ContainsFunc(low, func(n string) bool { return sameNode(n, p.Spec.NodeName) })
		onHigh := slices.ContainsFunc(high, func(n string) bool { return sameNode(n, p.Spec.NodeName) })
		if bad && onHigh {
			return nil
		}
		if !bad && !onLow && p.Spec.NodeName != "" && !slices.Contains(healthy, p.Spec.NodeName) {
			healthy = append(healthy, p.Spec.NodeName)
		}
	}
	slices.Sort(healthy)
	lowImage, highImage := nodeImages(ev, low), nodeImages(ev, high)
	if lowImage == highImage {
		lowImage, highImage = "", ""
	}
	f := Finding{Kind: KindInotifyLimit, Subject: subj, Object: fail.Object, Namespace: fail.Namespace, Source: SrcLogs, Severity: SevCritical, Weight: 0.96, Time: fail.Time}
	f.setFact("line", fail.fact("line"))
	f.setFact("setting", "fs.inotify."+setting)
	f.setFact("low", strconv.Itoa(lo))
	f.setFact("high", strconv.Itoa(hi))
	f.setFact("low_nodes", strings.Join(low, ", "))
	f.setFact("high_nodes", strings.Join(high, ", "))
	f.setFact("errno", errno)
	f.setFact("call", call)
	f.setFact("low_image", lowImage)
	f.setFact("high_image", highImage)
	f.setFact("healthy", strings.Join(healthy, ", "))
	for _, n := range low {
		f.Related = appendNew(f.Related, n)
	}
	for _, o := range found {
		if o.Subject != subj && matchLine(inotifyLineRE, o.fact("line")) {
			f.Related = appendNew(f.Related, o.Subject)
			f.Evidence = append(f.Evidence, o.Summary)
		}
	}
	if c := nodeImageChange(ev, f.Time); c != "" {
		f.setFact("change", c)
		f.Evidence = append(f.Evidence, "the nodes' change: "+c)
	}
	f.Evidence = append([]string{
		fmt.Sprintf("fs.inotify.%s = %d on %s, %d on %s", setting, lo, strings.Join(low, ", "), hi, strings.Join(high, ", ")),
		fmt.Sprintf("%s: %s", subj, quote(ReadableLine(fail.fact("line")), 200)),
	}, f.Evidence...)
	if lowImage != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("node image: %s on the low nodes, %s on the others", lowImage, highImage))
	}
	f.Summary = fmt.Sprintf("%s: fs.inotify.%s is %d on nodes %s (%d elsewhere)", subj, setting, lo, strings.Join(low, ", "), hi)
	return []Finding{f}
}

// nodeImages is the OS images (kubectl get nodes -o wide's OS-IMAGE,
// status.nodeInfo.osImage) of the named nodes.
func nodeImages(ev *Gathered, names []string) string {
	var imgs []string
	for _, n := range ev.K8s.Nodes {
		if slices.ContainsFunc(names, func(x string) bool { return sameNode(x, n.Name) }) && n.Status.NodeInfo.OSImage != "" {
			imgs = appendNew(imgs, n.Status.NodeInfo.OSImage)
		}
	}
	slices.Sort(imgs)
	return strings.Join(imgs, ", ")
}

// nodeImageChange is the last change before at that rolled nodes to
// another image.
func nodeImageChange(ev *Gathered, at time.Time) string {
	var last *evidence.Change
	for _, c := range slices.Concat(ev.Earlier, ev.Changes) {
		if !matchLine(nodeImageChangeRE, c.Description) || !at.IsZero() && c.Timestamp.After(at) {
			continue
		}
		if last == nil || c.Timestamp.After(last.Timestamp) {
			c := c
			last = &c
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("%s at %s (%s)", orWord(last.Service, "a node change"), ts(last.Timestamp), quote(last.Description, 200))
}
