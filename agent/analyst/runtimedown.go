package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet runs containers through a container runtime (containerd,
// CRI-O, cri-dockerd) over its socket. When the runtime is down the
// kubelet cannot list or start containers: its PLEG (pod lifecycle event
// generator) stops relisting, it reports "container runtime is down, PLEG
// is not healthy" and the node goes NotReady; its pods turn Unknown or
// Terminating and are evicted. The runtime says why it does not start in
// its own journal: a configuration it cannot load (a major version that
// rejects the old config.toml), a socket or state directory it cannot
// create, a crash. Often a package upgrade (unattended-upgrades, a
// yum-cron or dnf-automatic run, an image update) replaced it just
// before: the package manager's log dates it. The node NotReady and the
// pods lost are the consequence; the runtime and what broke it are the
// root.

// KindRuntimeDown is a node whose container runtime is down.
const KindRuntimeDown Kind = "runtime_down"

var runtimeDown = &mechanism{
	kind:   KindRuntimeDown,
	class:  classCause,
	label:  "container runtime down on a node (PLEG not healthy)",
	detect: detectRuntimeDown,
	related: func(h *Hypothesis, f *Finding) bool {
		return nodeCauseRelated(h, f)
	},
	// Only a change to the node's runtime, packages or image triggers it.
	fitsChange:     changeSays(runtimeChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		rt := orWord(h.fact("runtime"), "container runtime")
		d := fmt.Sprintf("the container runtime (%s) on node %s is down", rt, h.Subject)
		d += h.clause(" after ", "upgrade")
		d += h.quoteClause("; it fails to start: ", "reason", 180)
		d += ". The kubelet cannot reach it (container runtime is down, PLEG is not healthy), so the node went NotReady"
		d += h.clause(" and its pods are lost (Unknown or Terminating): ", "victims")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		rt := orWord(h.fact("runtime"), "containerd")
		if h.fact("upgrade") != "" {
			r.high("Bring %s on %s back: downgrade it to the version before the upgrade (apt-get install %s=<previous version>; apt-mark hold it) or migrate its configuration to the new version (containerd config migrate > /etc/containerd/config.toml), then systemctl restart %s kubelet", rt, h.Subject, orWord(h.fact("package"), rt), strings.TrimSuffix(rt, ".io"))
		} else {
			r.high("Bring %s on %s back: read why it fails (journalctl -u %s), fix its configuration, then systemctl restart %s kubelet; cordon and drain the node meanwhile", rt, h.Subject, strings.TrimSuffix(rt, ".io"), strings.TrimSuffix(rt, ".io"))
		}
		r.med("Exclude the container runtime and kubelet packages from automatic upgrades on nodes (Unattended-Upgrade::Package-Blacklist, apt-mark hold, yum versionlock) and upgrade them with the node image, one node at a time")
		r.low("Alert on NodeNotReady and on the runtime's service failing (node_systemd_unit_state, kubelet_pleg_relist_duration_seconds)")
	},
}

var (
	// runtimeDownRE is the kubelet finding its runtime unreachable.
	runtimeDownRE = regexp.MustCompile(`(?i)container runtime is down|PLEG is not healthy|Container runtime sanity check failed|Status from runtime service failed|container runtime status check may not have completed|(?:containerd|crio|cri-dockerd|dockershim|docker)\.sock[^\n]{0,40}(?:connection refused|no such file or directory)`)
	// runtimeProcRE is a runtime's own process or unit in the journal.
	runtimeProcRE = regexp.MustCompile(`(?i)^(?:containerd|crio|cri-o|dockerd|cri-dockerd)$`)
	// runtimeUnitFailRE is systemd giving up on a runtime's unit.
	runtimeUnitFailRE = regexp.MustCompile(`(?i)(?:containerd|crio|cri-o|docker|cri-docker)\.service[^\n]{0,60}(?:Failed with result|Main process exited, code=exited|Start request repeated too quickly)|Failed to start (?:containerd|crio|cri-o|docker)\.service`)
	// runtimeErrRE is an error line of a runtime's own.
	runtimeErrRE = regexp.MustCompile(`(?i)level=(?:fatal|error)|\bfailed to\b|\bunsupported\b|\binvalid\b|\bpanic\b|\bcannot\b|\berror\b`)
	// runtimeUpgradeRE is a package manager upgrading a runtime package:
	// dpkg.log ("upgrade containerd.io:amd64 1.7.24-1 2.0.1-1"), apt's
	// history ("Upgrade: containerd.io:amd64 (1.7.24-1, 2.0.1-1)"),
	// unattended-upgrades, yum and dnf ("Upgraded: containerd.io-2.0.1").
	runtimeUpgradeRE = regexp.MustCompile(`(?i)\bupgrade\s+((?:containerd(?:\.io)?|cri-o|crio|docker-ce|docker\.io|runc|moby-\w+|kubelet)(?::\w+)?)\s+(\S+)\s+(\S+)|Upgrade:[^\n]*?\b((?:containerd(?:\.io)?|cri-o|docker-ce|runc|kubelet)(?::\w+)?)\s+\(([^,)]+),\s*([^)]+)\)|Packages that will be upgraded:[^\n]*\b(containerd(?:\.io)?|cri-o|docker-ce|docker\.io|runc)\b|\b(?:Upgraded|Updated):?\s+((?:containerd(?:\.io)?|cri-o|docker-ce|runc))-(\d\S*)`)
	// runtimeChangeRE is a change to a node's runtime, packages or image.
	runtimeChangeRE = regexp.MustCompile(`(?i)containerd|cri-o|\bcrio\b|docker|runc|container runtime|package|upgrade|\bapt\b|\byum\b|\bdnf\b|\bami\b|node image|os image|patch`)
)

// detectRuntimeDown finds nodes whose kubelet reports its container
// runtime down (node condition, kubelet lines), with the runtime's own
// failure line and the package upgrade before it.
func detectRuntimeDown(ev *Gathered, _ []Finding) []Finding {
	nodes := map[string]*nodeCause{}
	var order []string
	get := func(name string) *nodeCause {
		if n := nodes[name]; n != nil {
			return n
		}
		n := &nodeCause{f: Finding{Kind: KindRuntimeDown, Subject: name, Object: "node " + name, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9}}
		nodes[name] = n
		order = append(order, name)
		return n
	}
	for _, nd := range ev.K8s.Nodes {
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue && matchLine(runtimeDownRE, c.Message) {
				n := get(nd.Name)
				n.f.Time = earliest(n.f.Time, c.LastTransitionTime.Time)
				n.evidence = append(n.evidence, fmt.Sprintf("node %s condition Ready=%s since %s, reason %s: %s", nd.Name, c.Status, ts(c.LastTransitionTime.Time), orDash(c.Reason), quote(c.Message, 200)))
				if rt := runtimeOf(nd.Status.NodeInfo.ContainerRuntimeVersion); rt != "" {
					n.f.setFact("runtime", rt)
					n.f.setFact("runtime_version", nd.Status.NodeInfo.ContainerRuntimeVersion)
				}
			}
		}
	}
	for _, h := range nodeLines(ev, runtimeDownRE, false) {
		n := get(h.node)
		n.f.Time = earliest(n.f.Time, orTime(h.t.FirstIncident, h.t.FirstSeen))
		n.sources = appendNew(n.sources, h.set.Subject)
		n.evidence = appendNew(n.evidence, templateEvidence(*h.set, h.t, h.line))
	}
	if len(order) == 0 {
		return nil
	}
	// The runtime's own account: its error lines and its unit failing.
	anyLine := regexp.MustCompile(`.`)
	for _, h := range nodeLines(ev, anyLine, false) {
		n := nodes[h.node]
		if n == nil {
			continue
		}
		proc := journalProc(h.line)
		switch {
		case matchLine(runtimeProcRE, proc) && matchLine(runtimeErrRE, h.line):
			n.strong = true
			n.f.Time = earliest(n.f.Time, orTime(h.t.FirstIncident, h.t.FirstSeen))
			if n.f.fact("reason") == "" {
				n.f.setFact("reason", runtimeMessage(h.line))
				n.evidence = append([]string{templateEvidence(*h.set, h.t, h.line)}, n.evidence...)
			}
			n.f.setFact("runtime", strings.ToLower(proc))
			n.sources = appendNew(n.sources, h.set.Subject)
		case matchLine(runtimeUnitFailRE, h.line):
			n.strong = true
			n.sources = appendNew(n.sources, h.set.Subject)
			n.evidence = appendNew(n.evidence, templateEvidence(*h.set, h.t, h.line))
		}
	}
	// A package upgrade of the runtime on that node, in the window or the
	// baseline before it.
	for _, h := range nodeLines(ev, runtimeUpgradeRE, true) {
		n := nodes[h.node]
		if n == nil {
			continue
		}
		when := h.t.FirstSeen
		if !n.f.Time.IsZero() && when.After(n.f.Time.Add(5*time.Minute)) {
			continue
		}
		m := findSubmatch(runtimeUpgradeRE, h.line)
		pkg, from, to := "", "", ""
		switch {
		case m[1] != "":
			pkg, from, to = m[1], m[2], m[3]
		case m[4] != "":
			pkg, from, to = m[4], m[5], m[6]
		case m[7] != "":
			pkg = m[7]
		case m[8] != "":
			pkg, to = m[8], m[9]
		}
		pkg = strings.SplitN(pkg, ":", 2)[0]
		if n.f.fact("upgrade") != "" && from == "" {
			continue
		}
		delete(n.f.Facts, "upgrade")
		u := "a package upgrade of " + pkg
		if from != "" && to != "" {
			u += fmt.Sprintf(" from %s to %s", from, to)
		} else if to != "" {
			u += " to " + to
		}
		if !when.IsZero() {
			u += " at " + hm(when)
		}
		if unattended(ev, h.node) {
			u += " by unattended-upgrades (automatic)"
		}
		n.f.setFact("upgrade", u)
		n.f.setFact("package", pkg)
		n.strong = true
		n.sources = appendNew(n.sources, h.set.Subject)
		n.evidence = append(n.evidence, templateEvidence(*h.set, h.t, h.line))
	}
	var out []Finding
	for _, name := range order {
		n := nodes[name]
		s := fmt.Sprintf("node %s: container runtime down (PLEG not healthy)", name)
		if u := n.f.fact("upgrade"); u != "" {
			s += " after " + u
		}
		out = append(out, finishNodeCause(ev, n, s))
	}
	return out
}

// unattended reports whether the node's logs show an automatic upgrade
// run (unattended-upgrades, apt-daily-upgrade, dnf-automatic, yum-cron).
func unattended(ev *Gathered, node string) bool {
	re := regexp.MustCompile(`(?i)unattended-upgrade|apt-daily-upgrade|dnf-automatic|yum-cron`)
	for _, h := range nodeLines(ev, re, true) {
		if h.node == node {
			return true
		}
	}
	return false
}

// runtimeOf is the runtime of a node's ContainerRuntimeVersion
// ("containerd://1.7.24" → "containerd").
func runtimeOf(v string) string {
	if i := strings.Index(v, "://"); i > 0 {
		return v[:i]
	}
	return ""
}

// runtimeMessage is the message of a runtime's journal line, without the
// journal's prefix.
// logfmt's msg and error are kept ("msg=\"validating runtime config: …\"").
func runtimeMessage(line string) string {
	if m := journalHostRE.FindStringIndex(line); m != nil {
		line = strings.TrimSpace(line[m[1]:])
	}
	if m := findSubmatch(logfmtMsgRE, line); m != nil {
		msg, err := strconv.Unquote(`"` + m[1] + `"`)
		if err != nil {
			msg = m[1]
		}
		if e := findSubmatch(logfmtErrRE, line); e != nil {
			if v, err := strconv.Unquote(`"` + e[1] + `"`); err == nil {
				msg += ": " + v
			}
		}
		return msg
	}
	return line
}

var (
	logfmtMsgRE = regexp.MustCompile(`\bmsg="((?:[^"\\]|\\.)*)"`)
	logfmtErrRE = regexp.MustCompile(`\berror="((?:[^"\\]|\\.)*)"`)
)
