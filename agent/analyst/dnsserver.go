package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/finding"
)

// The cluster DNS itself (CoreDNS, kube-dns) failing: its pods crash or
// answer SERVFAIL (a forward loop, a broken Corefile), so every service
// that resolves names fails at once.
var dnsServer = &mechanism{
	kind:  KindDNSServer,
	class: classCause,
	label: "cluster DNS (CoreDNS) failure",
	detect: func(ev *Gathered, _ []Finding) []Finding {
		if fs := DetectDNSServer(ev.K8s.Pods, ev.K8s.PreviousLogs, ev.Window); len(fs) > 0 {
			for i := range fs {
				dnsLoopWhy(ev, &fs[i])
			}
			return fs
		}
		return dnsScaledDown(ev.K8s.Events, ev.Window)
	},
	// Callers failing to resolve names are the cluster DNS's victims.
	victims: func(f *Finding) bool { return f.Kind == KindDNS },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the cluster DNS (%s) is failing: %s", s, h.top().Summary)
		d += h.quoteClause("; its last log line: ", "last_log", 200)
		d += describeDNSLoop(h.top())
		if callers := dnsCallers(h); callers != "" {
			d += fmt.Sprintf(", so name resolution (DNS lookups) fails for %s", callers)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if from := h.fact("scaled_from"); from != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Scale %s back to %s replicas (kubectl scale deployment %s -n %s --replicas=%s) and revert what scaled it down (the proportional autoscaler's parameters, a replica count edit)", s, from, s, orWord(h.top().Namespace, "kube-system"), from))
			r.add(finding.PriorityMedium, "Set a floor for the cluster DNS's replicas (the autoscaler's min, a PodDisruptionBudget) and consider NodeLocal DNSCache")
			r.add(finding.PriorityLow, "Alert on CoreDNS request latency and on its replicas falling below the floor")
			return
		}
		r.rollback()
		if h.top().fact("loop_stub") != "" && recommendDNSLoop(h.top(), r) {
			return
		}
		r.add(finding.PriorityHigh, fmt.Sprintf("Restore the cluster DNS: fix %s (revert its last Corefile/config change, e.g. a forward loop to /etc/resolv.conf) and restart its pods", s))
		r.add(finding.PriorityMedium, "Check the upstream resolvers CoreDNS forwards to and the loop plugin's report")
		r.add(finding.PriorityLow, "Alert on CoreDNS pods not ready and on DNS error rates")
	},
}

// isClusterDNS reports whether a pod is part of the cluster DNS (CoreDNS or
// kube-dns).
func isClusterDNS(p *corev1.Pod) bool {
	if p.Labels["k8s-app"] == "kube-dns" {
		return true
	}
	wl := strings.ToLower(WorkloadOfPod(p))
	return wl == "coredns" || wl == "kube-dns" || strings.HasPrefix(wl, "coredns-") && p.Namespace == "kube-system"
}

var dnsFatalRE = regexp.MustCompile(`(?i)\[FATAL\]|\[ERROR\]|loop .*detected|plugin/\w+:|panic|error`)

// DetectDNSServer finds a failing cluster DNS: most CoreDNS/kube-dns pods
// not ready or crash-looping, with the last log lines of their crashed
// containers (e.g. "plugin/loop: Loop ... detected").
func DetectDNSServer(pods []corev1.Pod, prevLogs map[string][]evidence.LogLine, w Window) []Finding {
	var dns []*corev1.Pod
	for i := range pods {
		// A pod seen only by name (in a kubectl logs line) has no known
		// state: it is neither failing nor healthy.
		if isClusterDNS(&pods[i]) && !podStateUnknown(&pods[i]) {
			dns = append(dns, &pods[i])
		}
	}
	if len(dns) == 0 {
		return nil
	}
	bad := 0
	f := Finding{Kind: KindDNSServer, Subject: WorkloadOfPod(dns[0]), Namespace: dns[0].Namespace, Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9}
	f.Object = "deployment " + dns[0].Namespace + "/" + f.Subject
	for _, p := range dns {
		if podHealthy(p) {
			continue
		}
		bad++
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				continue
			}
			ev := fmt.Sprintf("pod %s/%s container %s not ready, restart count %d", p.Namespace, p.Name, cs.Name, cs.RestartCount)
			if wt := cs.State.Waiting; wt != nil {
				ev += ", waiting: " + wt.Reason
				if wt.Reason == "CrashLoopBackOff" {
					f.setFact("crashloop", "true")
				}
			}
			t := containerSince(p, cs)
			if lt := cs.LastTerminationState.Terminated; lt != nil {
				ev += fmt.Sprintf("; last terminated %s, exit code %d (%s) at %s", orDash(lt.Reason), lt.ExitCode, exitMeaning(lt.ExitCode), ts(lt.FinishedAt.Time))
			}
			if w.recent(t) {
				f.Time = earliest(f.Time, t)
			}
			if len(f.Evidence) < 3 {
				f.Evidence = append(f.Evidence, ev)
			}
			lines := prevLogs[p.Namespace+"/"+p.Name+"/"+cs.Name]
			for j := len(lines) - 1; j >= 0; j-- {
				if matchLine(dnsFatalRE, lines[j].Text) {
					if f.fact("last_log") == "" {
						f.Evidence = append(f.Evidence, fmt.Sprintf("last log line of the crashed %s container: %s", cs.Name, quote(lines[j].Text, 240)))
					}
					f.setFact("last_log", lines[j].Text)
					break
				}
			}
		}
	}
	if bad == 0 || bad*2 < len(dns) {
		return nil
	}
	if f.Time.IsZero() {
		f.Time = w.Start
	}
	f.Summary = fmt.Sprintf("cluster DNS %s: %d of %d pods not ready (CrashLoopBackOff)", f.Subject, bad, len(dns))
	if f.fact("crashloop") == "" {
		f.Summary = fmt.Sprintf("cluster DNS %s: %d of %d pods not ready", f.Subject, bad, len(dns))
	}
	f.Related = []string{"kube-dns", "coredns"}
	return []Finding{f}
}

// scaledDownRE reads the deployment controller's "Scaled down replica set
// coredns-6f9b8d7c5 to 1 from 4".
var scaledDownRE = regexp.MustCompile(`Scaled down replica set (\S+) (?:to (\d+) from (\d+)|from (\d+) to (\d+))`)

// dnsScaledDown finds the cluster DNS's Deployment scaled down to half its
// replicas or fewer in the window (a proportional autoscaler's parameters
// changed, a replica count edited): its pods healthy, each now answers
// several times the queries, and lookups time out under load.
func dnsScaledDown(events []corev1.Event, w Window) []Finding {
	for i := range events {
		e := &events[i]
		if e.Reason != "ScalingReplicaSet" {
			continue
		}
		m := findSubmatch(scaledDownRE, e.Message)
		if m == nil {
			continue
		}
		wl := trimHash(m[1])
		if wl != "coredns" && wl != "kube-dns" {
			continue
		}
		to, from := m[2], m[3]
		if to == "" {
			from, to = m[4], m[5]
		}
		n, _ := strconv.Atoi(to)
		was, _ := strconv.Atoi(from)
		first, _ := eventTime(e)
		if was < 2 || n*2 > was || !w.recent(first) {
			continue
		}
		f := Finding{Kind: KindDNSServer, Subject: wl, Namespace: orWord(e.InvolvedObject.Namespace, e.Namespace), Source: SrcEvents, Severity: SevCritical,
			Weight: 0.8, Time: first, Related: []string{"kube-dns", "coredns"}}
		f.Object = "deployment " + f.Namespace + "/" + wl
		f.setFact("scaled_from", from)
		f.setFact("scaled_to", to)
		f.Summary = fmt.Sprintf("cluster DNS %s scaled down from %s to %s replicas, each left to answer the lookups of %d: queries time out under load", wl, from, to, was/max(n, 1))
		f.Evidence = []string{fmt.Sprintf("event ScalingReplicaSet on %s: %q at %s", f.Object, e.Message, ts(first))}
		return []Finding{f}
	}
	return nil
}

var (
	// dnsLoopRE is CoreDNS's loop plugin stopping the server: "[FATAL]
	// plugin/loop: Loop (127.0.0.1:50392 -> :53) detected for zone ".".
	dnsLoopRE = regexp.MustCompile(`plugin/loop: Loop \(([\d.:\[\]]+) -> ([\d.:\[\]]*:\d+)\) detected`)
	// loopbackNameserverRE is a resolv.conf naming a resolver on the host
	// itself: systemd-resolved's stub 127.0.0.53, dnsmasq's 127.0.0.1.
	loopbackNameserverRE = regexp.MustCompile(`^\s*nameserver\s+(127\.\d+\.\d+\.\d+|::1)\s*$`)
)

// dnsLoopWhy reads, for a cluster DNS whose crashed containers ended on
// the loop plugin's report, the resolv.conf a command printed (a node's,
// through kubectl debug node or a shell on it) that names a resolver on
// the host itself: CoreDNS forwards to the resolv.conf its node gives it,
// and a local stub there sends its queries back to itself.
func dnsLoopWhy(ev *Gathered, f *Finding) {
	if !matchLine(dnsLoopRE, f.fact("last_log")) {
		return
	}
	f.setFact("dns_loop", "true")
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(loopbackNameserverRE, l); m != nil {
				f.setFact("loop_stub", m[1])
				f.Evidence = append(f.Evidence, fmt.Sprintf("the resolv.conf printed by %s names the local resolver %s", quote(c.Command, 120), m[1]))
				return
			}
		}
	}
}

// describeDNSLoop is the clause of a cluster DNS stopped by its loop
// plugin.
func describeDNSLoop(f *Finding) string {
	if f == nil || f.fact("dns_loop") == "" {
		return ""
	}
	d := " — CoreDNS's loop plugin found its queries coming back to itself and stopped the server: the upstream it forwards to (the node's resolv.conf, forward . /etc/resolv.conf) is the DNS itself or a stub that sends the queries back"
	if s := f.fact("loop_stub"); s != "" {
		d = fmt.Sprintf(" — CoreDNS's loop plugin found its queries coming back to itself and stopped the server: the node's resolv.conf, which it forwards to, names the local stub resolver %s", s)
		if s == "127.0.0.53" {
			d += " (systemd-resolved)"
		}
		d += ", which pods cannot use as an upstream"
	}
	return d
}

// recommendDNSLoop recommends giving CoreDNS a real upstream.
func recommendDNSLoop(f *Finding, r *recommender) bool {
	if f == nil || f.fact("dns_loop") == "" {
		return false
	}
	r.high("Give CoreDNS a real upstream: set the kubelet's resolvConf to /run/systemd/resolve/resolv.conf on the nodes (the file that lists the upstream servers, not the 127.0.0.53 stub), or point the Corefile's forward at the upstream resolvers' addresses; then restart the CoreDNS pods")
	r.med("Check the resolv.conf of a new node image before rolling it out (kubectl debug node: cat /etc/resolv.conf) and keep the kubelet's resolvConf in the node group's configuration")
	r.low("Alert on CoreDNS pods not ready and on lookups timing out in clients' logs")
	return true
}
