package analyst

import (
	"regexp"
	"strings"

	"github.com/rootcause/rootcause/agent/analysis"
)

// Reading a node's own logs (its journal, the kubelet's log, a package
// manager's log) for the causes that live on a node: which node a line or a
// log source is about.

var (
	// journalHostRE reads the host and process of a journal or syslog
	// line ("2026-11-20T14:35:02+0000 ip-10-30-2-118 systemd[1]: …", "Nov
	// 20 14:35:02 wk-12 containerd[981]: …").
	journalHostRE = regexp.MustCompile(`^(?:\S+|[A-Z][a-z]{2}\s+\d+\s+[\d:]+)\s+([A-Za-z0-9][\w.-]*)\s+([\w.@/-]+?)(?:\[\d+\])?:\s`)
)

// nodeHit is a template of a log that bears on a node.
type nodeHit struct {
	node string
	set  *LogSet
	t    analysis.LogTemplate
	line string // the matching line (the template's example or last)
	proc string // the journal's process name ("containerd", "kubelet")
}

// nodeLines finds the templates whose example or last line matches re and
// that a node logged: the host of a journal line, else the node a log
// source is named after. Templates without lines in the incident window
// are left out unless all is set.
func nodeLines(ev *Gathered, re *regexp.Regexp, all bool) []nodeHit {
	var out []nodeHit
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 && !all {
				continue
			}
			for _, l := range t.Lines() {
				if !matchLine(re, l) {
					continue
				}
				host, proc := "", ""
				if m := findSubmatch(journalHostRE, l); m != nil {
					host, proc = m[1], m[2]
				}
				node := orWord(knownNode(ev, host), nodeOfSource(ev, set.Source))
				if node == "" && host != "" && len(ev.K8s.Nodes) == 0 {
					node = host
				}
				if node == "" {
					break
				}
				out = append(out, nodeHit{node: node, set: set, t: t, line: l, proc: proc})
				break
			}
		}
	}
	return out
}

// journalProc is the process of a journal line ("" when it is not one).
func journalProc(line string) string {
	if m := findSubmatch(journalHostRE, line); m != nil {
		return m[2]
	}
	return ""
}

// knownNode is the listed node a host name names (its short name or
// full), else "".
func knownNode(ev *Gathered, host string) string {
	if host == "" {
		return ""
	}
	for _, n := range ev.K8s.Nodes {
		if sameNode(n.Name, host) {
			return n.Name
		}
	}
	for _, p := range ev.K8s.Pods {
		if p.Spec.NodeName != "" && sameNode(p.Spec.NodeName, host) {
			return p.Spec.NodeName
		}
	}
	return ""
}

// canonicalNode is the listed name of a node (its full name when a short
// one is given), else the name as given.
func canonicalNode(ev *Gathered, name string) string {
	return orWord(knownNode(ev, name), name)
}

// nodeOfSource is the listed node a log source is named after
// ("wk-12-journal", "k8s-wk-07-kubelet", "ip-10-30-2-118-journal"), the
// longest such name.
func nodeOfSource(ev *Gathered, src string) string {
	best := ""
	names := map[string]bool{}
	for _, n := range ev.K8s.Nodes {
		names[n.Name] = true
	}
	for _, p := range ev.K8s.Pods {
		if p.Spec.NodeName != "" {
			names[p.Spec.NodeName] = true
		}
	}
	s := strings.ToLower(src)
	for n := range names {
		short := strings.ToLower(n)
		if i := strings.IndexByte(short, '.'); i > 0 && net4(short) == "" {
			short = short[:i]
		}
		if (s == short || strings.HasPrefix(s, short+"-") || strings.HasPrefix(s, short+"_") || strings.HasPrefix(s, short+".")) && len(n) > len(best) {
			best = n
		}
	}
	return best
}
