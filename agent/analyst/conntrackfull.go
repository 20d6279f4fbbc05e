package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A node's connection-tracking table full. Every connection through a
// Linux node (pods' traffic through kube-proxy's NAT included) takes an
// entry in nf_conntrack until it closes and its TIME_WAIT entry times out;
// at nf_conntrack_max the kernel drops the first packet of each new
// connection and logs "nf_conntrack: table full, dropping packet". The
// dropped SYN is retried after 1 s, then 3 s: every pod on that node —
// and only there — sees connects that take seconds, p99 latency and
// upstream timeouts, while its upstreams are fine and pods on other nodes
// are not slow. Whatever churns connections on the node (a client opening
// a connection per request, keepalive off, a burst of concurrency) fills
// the table; the victims are the workloads that share the node.

// KindConntrackFull is a node whose connection-tracking table is full.
const KindConntrackFull Kind = "conntrack_full"

var conntrackFull = &mechanism{
	kind:       KindConntrackFull,
	class:      classCause,
	label:      "connection-tracking table full on a node",
	detect:     detectConntrackFull,
	related:    listedIn("workloads", ","),
	fitsChange: changeSays(connChurnChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		var d string
		if n := atoiOr(h.fact("count")); n > 0 {
			d = fmt.Sprintf("the connection-tracking table of node %s is full: the kernel drops the first packet of new connections (%s, %s since %s), so connects through that node wait for SYN retransmits (1 s, 3 s)",
				h.Subject, quote(h.fact("line"), 90), plural(n, "drop report", "drop reports"), hm(h.Onset))
		} else {
			d = fmt.Sprintf("the connection-tracking table of node %s is full (%s since %s): at its limit the kernel drops the first packet of new connections, so connects through that node wait for SYN retransmits (1 s, 3 s)",
				h.Subject, h.fact("line"), hm(h.Onset))
		}
		d += h.clause("; ", "usage") + h.clause("; the pods that run on that node: ", "victims")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if t := h.Trigger; t != nil {
			r.high("Stop the connection churn that fills the table: revert or fix %s (%s) — reuse connections (keepalive) and bound concurrency", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
		} else {
			r.high("Find what opens connections at a high rate on %s (conntrack -S, conntrack -L | awk on the source, ss -s) and make it reuse connections", h.Subject)
		}
		r.med("Raise net.netfilter.nf_conntrack_max on %s (and nf_conntrack_buckets) as a stopgap, or shorten nf_conntrack_tcp_timeout_time_wait; move the affected pods off the node meanwhile", h.Subject)
		r.low("Alert on node_nf_conntrack_entries / node_nf_conntrack_entries_limit above 80%% and on 'nf_conntrack: table full' in kernel logs")
	},
}

var (
	// conntrackFullRE is the kernel's report of a full table (older
	// kernels said ip_conntrack).
	conntrackFullRE = regexp.MustCompile(`\b(?:nf|ip)_conntrack: (?:(?:nf|ip)_conntrack: )?table full, dropping packet`)
	// syslogHostRE reads the host of a syslog or journal line
	// ("2026-11-25T14:04:22Z ip-10-0-7-19 kernel: …", "Nov 25 14:04:22
	// ip-10-0-7-19 kernel: …").
	syslogHostRE = regexp.MustCompile(`^(?:\S+|[A-Z][a-z]{2}\s+\d+\s+[\d:]+)\s+([A-Za-z0-9][\w.-]*)\s+kernel:`)
	// connChurnChangeRE is a change that makes a client open many
	// connections: concurrency raised, keepalive or pooling off.
	connChurnChangeRE = regexp.MustCompile(`(?i)keep-?alive|concurrency|connection pool|pool size|max connections|parallel|workers? \d|\bsweep|crawl|conntrack|new connection per`)
)

// detectConntrackFull finds the kernel's "table full" reports in host
// logs, one finding per node, with the workloads whose pods run there
// (Kubernetes pods, or kube_pod_info series) as its victims.
func detectConntrackFull(ev *Gathered, found []Finding) []Finding {
	type node struct {
		f     Finding
		count int
	}
	nodes := map[string]*node{}
	var order []string
	for _, s := range ev.Logs {
		for _, t := range s.Templates {
			if t.Incident == 0 || !matchLine(conntrackFullRE, t.Example) {
				continue
			}
			host := ""
			if m := findSubmatch(syslogHostRE, t.Example); m != nil {
				host = m[1]
			}
			host = orWord(host, s.Subject)
			n := nodes[host]
			if n == nil {
				n = &node{f: Finding{Kind: KindConntrackFull, Subject: host, Object: "node " + host, Source: SrcLogs, Severity: SevCritical, Weight: 0.9}}
				n.f.setFact("line", strings.TrimSpace(findString(conntrackFullRE, t.Example)))
				n.f.setFact("source", s.Source)
				nodes[host] = n
				order = append(order, host)
			}
			n.count += t.Incident
			n.f.Time = earliest(n.f.Time, orTime(t.FirstIncident, t.FirstSeen))
			n.f.Evidence = append(n.f.Evidence, fmt.Sprintf("%s: %s (%d lines in the window, first at %s)", s.Source, truncate(strings.TrimSpace(t.Example), 200), t.Incident, ts(orTime(t.FirstIncident, t.FirstSeen))))
		}
	}
	// The kernel log read on the node itself: dmesg or journalctl -k
	// through ssh or kubectl debug node/…, handed over as command output.
	for _, c := range ev.Commands {
		var first time.Time
		count, host, example := 0, "", ""
		for _, l := range c.Lines {
			if !matchLine(conntrackFullRE, l) {
				continue
			}
			count++
			if example == "" {
				example = strings.TrimSpace(l)
				first = kernelLineTime(l, ev.Window)
			}
			if m := findSubmatch(syslogHostRE, l); m != nil && host == "" {
				host = m[1]
			}
		}
		if count == 0 {
			continue
		}
		host = orWord(c.Host, orWord(host, debugNode(c.Command)))
		if host == "" {
			continue
		}
		n := nodes[host]
		if n == nil {
			n = &node{f: Finding{Kind: KindConntrackFull, Subject: host, Object: "node " + host, Source: SrcLogs, Severity: SevCritical, Weight: 0.9}}
			n.f.setFact("line", strings.TrimSpace(findString(conntrackFullRE, example)))
			nodes[host] = n
			order = append(order, host)
		}
		n.count += count
		n.f.Time = earliest(n.f.Time, first)
		n.f.Evidence = append(n.f.Evidence, fmt.Sprintf("%s on %s: %s (%d lines)", truncate(c.Command, 80), host, truncate(example, 200), count))
	}
	// Without the kernel's reports, node_exporter's entries at their
	// limit say the same.
	for _, u := range conntrackAtLimit(ev.Metrics, ev.Window) {
		if slices.ContainsFunc(order, func(h string) bool { return sameNode(h, u.node) }) {
			continue
		}
		f := Finding{Kind: KindConntrackFull, Subject: u.node, Object: "node " + u.node, Source: SrcMetrics, Severity: SevCritical, Weight: 0.85, Time: u.onset}
		f.setFact("line", fmt.Sprintf("node_nf_conntrack_entries at %.0f%% of its limit", 100*u.ratio))
		f.Evidence = append(f.Evidence, fmt.Sprintf("node_nf_conntrack_entries of %s reached %.0f of its limit %.0f (%.0f%%) at %s", u.node, u.entries, u.limit, 100*u.ratio, ts(u.onset)))
		nodes[u.node] = &node{f: f}
		order = append(order, u.node)
	}
	var out []Finding
	for _, host := range order {
		n := nodes[host]
		f := &n.f
		if n.count > 0 {
			f.setFact("count", fmt.Sprint(n.count))
		}
		pods := podsOnNode(ev, host)
		workloads := workloadsOf(pods)
		slices.Sort(workloads)
		victims := podsByWorkload(pods, workloads)
		f.setFact("workloads", strings.Join(workloads, ","))
		f.Related = append(f.Related, workloads...)
		if len(victims) > 0 {
			f.setFact("victims", strings.Join(victims, "; "))
			f.Evidence = append(f.Evidence, "pods on "+host+": "+strings.Join(victims, "; "))
		}
		if u := conntrackUsage(ev.Metrics, host); u != "" && f.Source != SrcMetrics {
			f.setFact("usage", u)
			f.Evidence = append(f.Evidence, u)
		}
		f.Summary = fmt.Sprintf("node %s: nf_conntrack table full, dropping packets (%d reports)", host, n.count)
		out = append(out, *f)
	}
	return out
}

// podsOnNode names the pods that run on node: from the pods listed, else
// from kube-state-metrics' kube_pod_info{pod, node}.
func podsOnNode(ev *Gathered, node string) []string {
	var out []string
	for _, p := range ev.K8s.Pods {
		if sameNode(p.Spec.NodeName, node) && !slices.Contains(out, p.Name) {
			out = append(out, p.Name)
		}
	}
	for _, set := range ev.Metrics {
		for _, s := range set.Series {
			if s.Labels["__name__"] != "kube_pod_info" && set.Name != "kube_pod_info" {
				continue
			}
			if p := s.Labels["pod"]; p != "" && sameNode(s.Labels["node"], node) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// workloadsOf names the workloads of pods (workloadOfName), each once, in
// the order of their first pod.
func workloadsOf(pods []string) []string {
	var out []string
	for _, p := range pods {
		out = appendNew(out, workloadOfName(p))
	}
	return out
}

// podsByWorkload names each of workloads with its pods among pods, in the
// order of workloads: "checkout (checkout-7d9f-abcde, checkout-7d9f-fghij)".
func podsByWorkload(pods, workloads []string) []string {
	var out []string
	for _, w := range workloads {
		var mine []string
		for _, p := range pods {
			if workloadOfName(p) == w {
				mine = append(mine, p)
			}
		}
		out = append(out, fmt.Sprintf("%s (%s)", w, strings.Join(mine, ", ")))
	}
	return out
}

// conntrackUsage says how full the node's table is when node_exporter's
// entries and limit series were gathered ("" otherwise).
func conntrackUsage(sets []MetricSet, node string) string {
	var entries, limit float64
	for n, s := range metricSeries(sets) {
		if n != "node_nf_conntrack_entries" && n != "node_nf_conntrack_entries_limit" {
			continue
		}
		if !sameNode(nodeOfLabels(s.Labels), node) || len(s.Points) == 0 {
			continue
		}
		v := s.Points[len(s.Points)-1].V
		if n == "node_nf_conntrack_entries" {
			entries = max(entries, v)
		} else {
			limit = v
		}
	}
	if entries <= 0 || limit <= 0 {
		return ""
	}
	return fmt.Sprintf("node_nf_conntrack_entries %.0f of node_nf_conntrack_entries_limit %.0f (%.0f%%)", entries, limit, 100*entries/limit)
}

var (
	// debugNodeRE is the node of `kubectl debug node/NAME`.
	debugNodeRE = regexp.MustCompile(`\bdebug\s+node/([A-Za-z0-9][\w.-]*)`)
	// dmesgTimeRE is dmesg -T's time ("[Wed Nov 25 14:04:22 2026]").
	dmesgTimeRE = regexp.MustCompile(`^\[(\w{3} \w{3} +\d+ \d{2}:\d{2}:\d{2} \d{4})\]`)
	// rfc3339LeadRE is a line's leading RFC 3339 time.
	rfc3339LeadRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-]\d{2}:\d{2}))`)
)

// debugNode is the node a `kubectl debug node/NAME` ran on ("" for other
// commands).
func debugNode(cmd string) string {
	if m := findSubmatch(debugNodeRE, cmd); m != nil {
		return m[1]
	}
	return ""
}

// kernelLineTime is when a kernel line was logged, read from its leading
// RFC 3339 time or dmesg -T's; a line without one (dmesg's seconds since
// boot) is dated at the window's start.
func kernelLineTime(l string, w Window) time.Time {
	l = strings.TrimSpace(l)
	if m := findSubmatch(rfc3339LeadRE, l); m != nil {
		if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			return t
		}
	}
	if m := findSubmatch(dmesgTimeRE, l); m != nil {
		if t, err := time.Parse("Mon Jan _2 15:04:05 2006", m[1]); err == nil {
			return t
		}
	}
	return w.Start
}

// conntrackLimit is a node whose table reached its limit in the window.
type conntrackLimit struct {
	node                  string
	entries, limit, ratio float64
	onset                 time.Time
}

// conntrackAtLimit finds the nodes whose node_nf_conntrack_entries reached
// 95 % of node_nf_conntrack_entries_limit within the window, with the
// first time they did.
func conntrackAtLimit(sets []MetricSet, w Window) []conntrackLimit {
	limits := map[string]float64{}
	type ser struct {
		node string
		pts  []evidence.Point
	}
	var entries []ser
	for n, s := range metricSeries(sets) {
		node := nodeOfLabels(s.Labels)
		if node == "" || len(s.Points) == 0 {
			continue
		}
		switch n {
		case "node_nf_conntrack_entries_limit":
			limits[node] = max(limits[node], s.Points[len(s.Points)-1].V)
		case "node_nf_conntrack_entries":
			entries = append(entries, ser{node, s.Points})
		}
	}
	var out []conntrackLimit
	for _, e := range entries {
		limit := limits[e.node]
		if limit <= 0 {
			continue
		}
		// Full within the window; since the first time it was, from the
		// baseline on.
		var first *evidence.Point
		full := false
		for i, p := range e.pts {
			if !w.BaselineStart.IsZero() && p.T.Before(w.BaselineStart) || !w.End.IsZero() && p.T.After(w.End) || p.V/limit < 0.95 {
				continue
			}
			if first == nil {
				first = &e.pts[i]
			}
			full = full || !p.T.Before(w.Start)
		}
		if full {
			out = append(out, conntrackLimit{node: e.node, entries: first.V, limit: limit, ratio: first.V / limit, onset: first.T})
		}
	}
	return out
}

func atoiOr(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}
