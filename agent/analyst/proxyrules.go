package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A node whose Service rules are no longer programmed. kube-proxy turns
// each Service and its ready endpoints into iptables (or IPVS, nftables)
// rules on every node; when it cannot write them (iptables-restore fails
// because another program holds the xtables lock, a rule the kernel
// rejects, an nft error), the node keeps the rules of its last successful
// sync. Nothing looks wrong until the endpoints change: after a rollout
// the pods on that node — and only there — still send a Service's traffic
// to the IPs of pods that are gone (connection refused, connect
// timeouts), while the new pods are healthy and other nodes reach them.
// kube-proxy's failures counters (…_iptables_restore_failures_total,
// …_nftables_sync_failures_total) rise on that node and its last sync
// timestamp stops; its log says "Failed to execute iptables-restore" and
// "Sync failed". What holds the lock or breaks the rules is usually a
// change to something else that writes the node's netfilter tables: a
// host firewall or security agent, a CNI, a DaemonSet with iptables.

// KindProxyRules is a node whose Service rules kube-proxy cannot write.
const KindProxyRules Kind = "proxy_rules"

var proxyRules = &mechanism{
	kind:   KindProxyRules,
	class:  classCause,
	label:  "kube-proxy cannot write Service rules on a node",
	detect: detectProxyRules,
	related: func(h *Hypothesis, f *Finding) bool {
		if ofListed(f, h.fact("workloads"), ",") {
			return true
		}
		// The callers' refused and timed-out connects to a Service
		// whose pods moved.
		for _, s := range strings.Split(h.fact("moved"), ",") {
			if s != "" && f.Subject == s && (f.Kind == KindConnRefused || f.Kind == KindTimeout) {
				return true
			}
		}
		return f.Subject == "kube-proxy"
	},
	strictTriggers: true,
	fitsChange:     changeSays(netfilterChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("kube-proxy on node %s cannot write the Service rules since %s (%s), so the node's iptables keep the rules of its last successful sync",
			h.Subject, hm(h.Onset), h.fact("failure"))
		if l := h.fact("line"); l != "" {
			d += fmt.Sprintf("; its log: %s", quote(l, 160))
		}
		if m := h.fact("moved_words"); m != "" {
			d += "; " + m + " since, and that node still sends their Service's traffic to the IPs of the pods that are gone (connection refused, connect timeouts)"
		} else {
			d += "; Services whose endpoints changed since are sent to stale endpoints from that node"
		}
		if v := h.fact("victims"); v != "" {
			d += "; the pods on that node: " + v + ", while pods on other nodes are not affected"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if t := h.Trigger; t != nil {
			r.high("Revert or fix %s (%s): it keeps kube-proxy from writing the node's rules (the xtables lock, a conflicting backend)", t.Subject, truncate(t.fact("description"), 120))
		} else {
			r.high("Find what blocks kube-proxy on %s (its log: iptables-restore errors, the xtables lock; iptables-legacy and iptables-nft mixed) and stop it", h.Subject)
		}
		r.high("Drain %s (or restart its kube-proxy once it can sync) so that its pods stop using stale Service rules", h.Subject)
		r.low("Alert on rate(kubeproxy_sync_proxy_rules_iptables_restore_failures_total) > 0 and on time() - kubeproxy_sync_proxy_rules_last_timestamp_seconds above a few minutes, per node")
	},
}

var (
	// proxyFailuresRE names kube-proxy's counters of failed syncs.
	proxyFailuresRE = regexp.MustCompile(`^kubeproxy_sync_proxy_rules_(?:iptables_restore_failures|iptables_partial_restore_failures|nftables_sync_failures|nftables_cleanup_failures)_total$`)
	// proxySyncFailedRE is kube-proxy's log of a failed sync.
	proxySyncFailedRE = regexp.MustCompile(`Failed to execute iptables-restore|"Sync failed"|Sync failed|Failed to sync ipvs|xtables lock|Failed to run nft|nftables sync failed`)
	// netfilterChangeRE is a change to something that writes a node's
	// netfilter tables.
	netfilterChangeRE = regexp.MustCompile(`(?i)iptables|nftables|xtables|netfilter|firewall|kube-proxy|\bipvs\b|\bcni\b|calico|cilium|security agent|conntrack`)
)

// detectProxyRules finds the nodes whose kube-proxy failure counters rise
// in the window, with the workloads whose pods run there and the
// Services whose pods were replaced since.
func detectProxyRules(ev *Gathered, found []Finding) []Finding {
	type node struct {
		onset  time.Time
		metric string
		last   float64
	}
	nodes := map[string]*node{}
	var order []string
	for _, set := range ev.Metrics {
		for _, s := range set.Series {
			name := orWord(s.Labels["__name__"], set.Name)
			if !matchLine(proxyFailuresRE, name) {
				continue
			}
			host := orWord(s.Labels["node"], orWord(s.Labels["nodename"], DependencyName(s.Labels["instance"])))
			onset, ok := risingFrom(pointsUpTo(s, ev.Window.End), set.Unit == "/s", ev.Window)
			if !ok || host == "" {
				continue
			}
			n := nodes[host]
			if n == nil {
				n = &node{onset: onset, metric: name}
				nodes[host] = n
				order = append(order, host)
			}
			n.onset = earliest(n.onset, onset)
		}
	}
	var out []Finding
	for _, host := range order {
		n := nodes[host]
		f := Finding{Kind: KindProxyRules, Subject: host, Object: "node " + host, Source: SrcMetrics, Severity: SevCritical, Weight: 0.9, Time: n.onset}
		f.setFact("failure", n.metric+" rising on that node")
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s of node %s rises from %s: kube-proxy's syncs fail there", n.metric, host, ts(n.onset)))
		if st := proxySyncStopped(ev, host); st != "" {
			f.Evidence = append(f.Evidence, st)
		}
		if l := proxyLogLine(ev, host); l != "" {
			f.setFact("line", l)
			f.Evidence = append(f.Evidence, "kube-proxy: "+quote(l, 240))
			f.Weight = 0.95
		}
		// The Services whose pods were replaced after the rules froze.
		var moved, words []string
		for _, c := range ev.Changes {
			if c.Kind == "deploy" && c.Timestamp.After(n.onset) && c.Service != "" && !slices.Contains(moved, c.Service) {
				moved = append(moved, c.Service)
				words = append(words, fmt.Sprintf("%s was rolled out at %s (new pod IPs)", c.Service, hm(c.Timestamp)))
			}
		}
		f.setFact("moved", strings.Join(moved, ","))
		f.setFact("moved_words", strings.Join(words, "; "))
		f.Related = append(f.Related, moved...)
		pods := podsOnNode(ev, host)
		workloads := slices.DeleteFunc(workloadsOf(pods), platformWorkload)
		slices.Sort(workloads)
		victims := podsByWorkload(pods, workloads)
		f.setFact("workloads", strings.Join(workloads, ","))
		f.setFact("victims", strings.Join(victims, "; "))
		f.Related = append(f.Related, workloads...)
		f.Summary = fmt.Sprintf("kube-proxy on %s cannot write Service rules since %s", host, hm(n.onset))
		out = append(out, f)
	}
	return out
}

// platformWorkload reports whether a workload is part of the node's
// plumbing (per-node agents), not an application on it.
func platformWorkload(w string) bool {
	return regexp.MustCompile(`^(kube-proxy|aws-node|calico-node|cilium|coredns|kube-dns|node-exporter|netguard|ebs-csi|efs-csi|fluent-?bit|datadog)`).MatchString(w)
}

// risingFrom reads a failures series (a counter, or its rate when rate):
// the first point where it rises above what it was (a rate above zero),
// provided that was after the baseline began and it still rises (the rate
// is still above zero) at the end.
func risingFrom(pts []evidence.Point, rate bool, w Window) (time.Time, bool) {
	if len(pts) < 3 {
		return time.Time{}, false
	}
	counter := !rate
	var onset time.Time
	for i := 1; i < len(pts); i++ {
		if counter && pts[i].V > pts[i-1].V || !counter && pts[i].V > 0 && pts[i-1].V == 0 {
			onset = pts[i].T
			break
		}
	}
	if onset.IsZero() || !w.BaselineStart.IsZero() && onset.Before(w.BaselineStart) {
		return time.Time{}, false
	}
	// Still failing: a rise (or a positive rate) in the last third.
	tail := pts[len(pts)*2/3:]
	still := false
	for i := range tail {
		if counter && i > 0 && tail[i].V > tail[i-1].V || !counter && tail[i].V > 0 {
			still = true
		}
	}
	return onset, still
}

// proxySyncStopped says when kube-proxy's last successful sync on a node
// was, when its last-sync timestamp series stopped advancing.
func proxySyncStopped(ev *Gathered, host string) string {
	for name, s := range metricSeries(ev.Metrics) {
		if name != "kubeproxy_sync_proxy_rules_last_timestamp_seconds" {
			continue
		}
		if !sameNode(nodeOfLabels(s.Labels), host) || len(s.Points) < 2 {
			continue
		}
		pts := pointsUpTo(s, ev.Window.End)
		last := pts[len(pts)-1]
		if last.T.Sub(time.Unix(int64(last.V), 0)) > 5*time.Minute {
			return fmt.Sprintf("kubeproxy_sync_proxy_rules_last_timestamp_seconds of %s: last successful sync at %s", host, hm(time.Unix(int64(last.V), 0)))
		}
	}
	return ""
}

// proxyLogLine is the first line of kube-proxy's log (pod logs gathered,
// or command output) that reports a failed sync.
func proxyLogLine(ev *Gathered, host string) string {
	for _, s := range ev.Logs {
		if !strings.HasPrefix(s.Subject, "kube-proxy") {
			continue
		}
		for _, t := range s.Templates {
			if t.Incident > 0 && matchLine(proxySyncFailedRE, t.Example) {
				return ReadableLine(t.Example)
			}
		}
	}
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "kube-proxy") {
			continue
		}
		for _, l := range c.Lines {
			if matchLine(proxySyncFailedRE, l) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}
