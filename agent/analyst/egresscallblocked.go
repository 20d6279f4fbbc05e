package analyst

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// A caller whose own namespace's egress NetworkPolicies do not let its
// pods out to the Service it calls. Once a policy selects a pod for
// egress, the pod may open only the connections some egress rule allows;
// a default-deny baseline (often generated per namespace by a policy
// engine such as Kyverno when the namespace gets a label) with an allow
// rule for DNS alone lets the caller resolve the Service's name and then
// drops its connection: the call times out (undici's ConnectTimeoutError,
// Go's "dial tcp …: i/o timeout", curl's "(28) Connection timed out"),
// never refused. The Service is healthy and serves every other client, so
// the caller's errors read as the backend being down. What to fix is the
// caller's egress: a rule to the Service's namespace and port. Read from
// the timed-out calls in the caller's log (the Service by its cluster
// name and port) and the NetworkPolicies of the caller's namespace
// (YAML, a List, describe).

// KindEgressCallBlocked is a caller's connections to a cluster Service
// dropped by the egress NetworkPolicies of its own namespace.
const KindEgressCallBlocked Kind = "egress_call_blocked"

var egressCallBlocked = &mechanism{
	kind:   KindEgressCallBlocked,
	class:  classCause,
	label:  "egress NetworkPolicy drops the caller's connections",
	detect: detectEgressCallBlocked,
	// The callee named in the caller's errors, and the caller's own
	// failures, are what the dropped connections produce.
	related:        droppedCallRelated("callee"),
	strictTriggers: true,
	fitsChange:     egressPolicyChange,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("an egress NetworkPolicy blocks %s from reaching %s: %s of namespace %s %s the %s pods for egress and %s; no egress rule lets them out to %s in namespace %s on port %s, so their connections are dropped and time out (not refused)",
			h.Subject, h.fact("callee"), plural(len(strings.Split(h.fact("policies"), ", ")), "NetworkPolicy", "NetworkPolicies")+" "+h.fact("policies"),
			h.fact("namespace"), selectWord(h.fact("policies")), h.Subject, h.fact("allows"), h.fact("callee"), h.fact("callee_namespace"), h.fact("port"))
		d += h.quoteClause(": ", "line", 220)
		d += fmt.Sprintf(". %s itself is not the cause: the connections never reach it", h.fact("callee"))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Allow the calls out of namespace %s: an egress rule for the %s pods to namespace %s (namespaceSelector kubernetes.io/metadata.name: %s, with the %s pods' labels) on TCP port %s",
			h.fact("namespace"), h.Subject, h.fact("callee_namespace"), h.fact("callee_namespace"), h.fact("callee"), h.fact("port"))
		if t := h.Trigger; t != nil {
			r.med("Fix the baseline that brought the policies (%s): ship its default-deny egress with the rules the namespace's workloads need, or hold it back from %s until they are written", truncate(t.fact("description"), 100), h.fact("namespace"))
		}
		r.med("Do not roll back %s or %s for this: the calls are dropped on their way out", h.Subject, h.fact("callee"))
		r.low("Test an egress baseline from a pod of the namespace (curl to each backend) before enforcing it")
	},
}

// detectEgressCallBlocked reads, from the logs of running workloads,
// calls to a Service of the cluster (by its cluster name and port) that
// time out connecting, when the egress NetworkPolicies of the caller's
// namespace select its pods and none of their rules lets a connection
// out to that Service's namespace and port.
func detectEgressCallBlocked(ev *Gathered, found []Finding) []Finding {
	if len(ev.K8s.NetworkPolicies) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	for c := range egressCallers(ev) {
		set, ns, callerPods := c.set, c.ns, c.pods
		for _, t := range set.Templates {
			l := t.Example
			if t.Incident == 0 || !matchLine(connectTimeoutRE, l) && !matchLine(curlTimeoutRE, l) || matchLine(lookupTimeoutRE, l) {
				continue
			}
			for _, c := range calledTargets(l) {
				svc, svcNS, p := c.host, c.ns, c.port
				if svc == strings.ToLower(set.Subject) || svc == "localhost" {
					continue
				}
				if svcNS == "" || svcNS == "svc" {
					svcNS = ns
				}
				callee := podsOfWorkload(ev.K8s.Pods, svcNS, svc)
				if len(callee) == 0 && !calleeKnown(ev, svc, svcNS) || seen[set.Subject+">"+svcNS+"/"+svc] {
					continue
				}
				tport := targetPort(append(slices.Clone(ev.K8s.Services), ev.K8s.CalledServices...), svc, p)
				pols, admitted := egressPolicies(ev.K8s.NetworkPolicies, ns, set.Subject, callerPods, svcNS, callee, tport)
				if admitted || len(pols) == 0 {
					continue
				}
				seen[set.Subject+">"+svcNS+"/"+svc] = true
				out = append(out, egressCallFinding(ev, set.Subject, ns, svc, svcNS, tport, l, orTime(t.FirstIncident, t.FirstSeen), pols))
			}
		}
	}
	return out
}

// egressCaller is a workload whose log an egress mechanism reads: its log
// set, its namespace and its pods.
type egressCaller struct {
	set  *LogSet
	ns   string
	pods []corev1.Pod
}

// egressCallers yields the workloads of ev's logs (not hosts) with their
// namespace (the log's, else the scope's) and pods, passing over a log
// whose namespace is unknown: egress NetworkPolicies are a namespace's.
func egressCallers(ev *Gathered) iter.Seq[egressCaller] {
	return func(yield func(egressCaller) bool) {
		for si := range ev.Logs {
			set := &ev.Logs[si]
			if set.Host || set.Subject == "" {
				continue
			}
			ns := orWord(set.Namespace, ev.Scope.Namespace)
			if ns == "" {
				continue
			}
			if !yield(egressCaller{set, ns, podsOfWorkload(ev.K8s.Pods, ns, set.Subject)}) {
				return
			}
		}
	}
}

// calledTarget is a Service a log line calls by its cluster name: its
// name, its namespace (empty for a short name) and port.
type calledTarget struct {
	host, ns string
	port     int
}

var (
	// curl's "Timeout was reached" (error 28).
	curlTimeoutRE = regexp.MustCompile(`(?i)timeout was reached`)
	// curl's "Failed to connect to HOST port N".
	curlPortRE = regexp.MustCompile(`(?i)connect to ([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.([a-z0-9]([-a-z0-9]*[a-z0-9])?))?(?:\.svc(?:\.cluster\.local)?)? port (\d{2,5})\b`)
	// urllib3's "HTTPConnectionPool(host='HOST', port=N)".
	poolHostRE = regexp.MustCompile(`(?i)host='([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.([a-z0-9]([-a-z0-9]*[a-z0-9])?))?(?:\.svc(?:\.cluster\.local)?)?', port=(\d{2,5})\b`)
)

// calledTargets reads the Services a line calls: a URL or host:port, curl's
// "HOST port N", urllib3's host='HOST', port=N. Addresses name no Service.
func calledTargets(l string) []calledTarget {
	var out []calledTarget
	for _, re := range []*regexp.Regexp{calledURLRE, curlPortRE, poolHostRE} {
		for _, m := range findAllSubmatch(re, l, -1) {
			p, _ := strconv.Atoi(m[5])
			if p == 0 || matchLine(net4RE, m[0]) {
				continue
			}
			t := calledTarget{host: strings.ToLower(m[1]), ns: strings.ToLower(m[3]), port: p}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func egressCallFinding(ev *Gathered, caller, ns, svc, svcNS string, port int, line string, first time.Time, pols []*networkingv1.NetworkPolicy) Finding {
	names, allowWords := egressAllows(pols)
	f := Finding{Kind: KindEgressCallBlocked, Subject: caller, Namespace: ns, Source: SrcKubernetes, Time: first, Severity: SevCritical,
		Weight: 0.95, Object: "NetworkPolicy " + names[0], Related: []string{svc},
		Summary: fmt.Sprintf("egress NetworkPolicies %s of namespace %s drop the connections of %s to %s:%d", strings.Join(names, ", "), ns, caller, svc, port)}
	f.setFact("policies", strings.Join(names, ", "))
	f.setFact("namespace", ns)
	f.setFact("allows", allowWords)
	f.setFact("callee", svc)
	// The callee is unreachable from the caller, though not at fault.
	f.setFact("affected", svc)
	f.setFact("callee_namespace", svcNS)
	f.setFact("port", strconv.Itoa(port))
	f.setFact("line", line)
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%s calls %s.%s on port %d and its connections time out: %s", caller, svc, svcNS, port, quote(ReadableLine(line), 200)),
		fmt.Sprintf("NetworkPolicies %s select the pods of %s in namespace %s for egress and %s: no rule lets them out to namespace %s on port %d", strings.Join(names, ", "), caller, ns, allowWords, svcNS, port))
	// A policy created shortly before the calls failed is when they
	// began to be dropped.
	for _, np := range pols {
		if t := np.CreationTimestamp.Time; !t.IsZero() && ev.Window.recent(t) && (first.IsZero() || t.Before(first) && first.Sub(t) < 6*time.Hour) {
			f.Evidence = append(f.Evidence, fmt.Sprintf("NetworkPolicy %s was created at %s", np.Name, t.UTC().Format(time.RFC3339)))
			f.Time = earliest(f.Time, t)
		}
	}
	return f
}

// calleeKnown reports whether the evidence knows a Service of that name
// in the namespace: the Service itself (of the namespace asked about, or
// of those its pods call), or its own log.
func calleeKnown(ev *Gathered, name, ns string) bool {
	for _, svcs := range [][]ServiceState{ev.K8s.Services, ev.K8s.CalledServices} {
		for _, s := range svcs {
			if s.Service.Name == name && (s.Service.Namespace == "" || s.Service.Namespace == ns) {
				return true
			}
		}
	}
	for _, set := range ev.Logs {
		if strings.EqualFold(set.Subject, name) && set.Namespace == ns {
			return true
		}
	}
	return false
}

// egressPolicies are the egress NetworkPolicies of namespace ns that
// select the caller's pods, and whether any of their rules may let a
// TCP connection out to the callee's pods in namespace calleeNS on port
// (an address block, a namespace known only by other labels, pods whose
// labels were not read: it may, so nothing is concluded).
func egressPolicies(nps []networkingv1.NetworkPolicy, ns, caller string, callerPods []corev1.Pod, calleeNS string, callee []corev1.Pod, port int) ([]*networkingv1.NetworkPolicy, bool) {
	var pols []*networkingv1.NetworkPolicy
	for i := range nps {
		np := &nps[i]
		if np.Namespace != ns || !policyEgress(np) || !policySelects(np, callerPods, caller) {
			continue
		}
		pols = append(pols, np)
		for _, r := range np.Spec.Egress {
			if egressRuleAdmits(r, ns, calleeNS, callee, port) {
				return pols, true
			}
		}
	}
	return pols, false
}

// egressPolicyChange reports whether a change speaks of NetworkPolicies,
// egress or a default deny, or names one of the hypothesis's policies
// (its "policies" fact).
func egressPolicyChange(h *Hypothesis, c *Finding) bool {
	t := strings.ToLower(changeText(c))
	if strings.Contains(t, "networkpolic") || strings.Contains(t, "netpol") || strings.Contains(t, "egress") || strings.Contains(t, "default-deny") {
		return true
	}
	for _, p := range strings.Split(h.fact("policies"), ", ") {
		if p != "" && strings.Contains(t, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// egressRuleAdmits reports whether an egress rule of a policy in
// namespace polNS may let a TCP connection out to pods of namespace
// calleeNS on port.
func egressRuleAdmits(r networkingv1.NetworkPolicyEgressRule, polNS, calleeNS string, callee []corev1.Pod, port int) bool {
	if !egressPortAdmits(r, port) {
		return false
	}
	var podLabels []map[string]string
	for i := range callee {
		if len(callee[i].Labels) > 0 {
			podLabels = append(podLabels, callee[i].Labels)
		}
	}
	return peersAdmit(r.To, calleeNS, polNS, podLabels)
}

// egressPortAdmits reports whether an egress rule's ports may let a TCP
// connection out on port (no ports: every port; a named port cannot be
// resolved here).
func egressPortAdmits(r networkingv1.NetworkPolicyEgressRule, port int) bool {
	portOK := len(r.Ports) == 0
	for _, p := range r.Ports {
		if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
			continue
		}
		switch {
		case p.Port == nil, p.Port.Type == 1: // every port; a named port cannot be resolved here
			portOK = true
		case p.EndPort != nil:
			portOK = portOK || port >= p.Port.IntValue() && port <= int(*p.EndPort)
		default:
			portOK = portOK || p.Port.IntValue() == port
		}
	}
	return portOK
}

// droppedCallRelated is the related test of a caller's dropped
// connections: the findings of the destination named by h's fact
// (callee, or host), as subject or as callee, and the caller's own.
func droppedCallRelated(destFact string) func(h *Hypothesis, f *Finding) bool {
	return func(h *Hypothesis, f *Finding) bool {
		if c := h.fact(destFact); c != "" && (strings.EqualFold(f.Subject, c) || strings.EqualFold(f.fact("callee"), c)) {
			return true
		}
		return strings.EqualFold(f.Subject, h.Subject) || strings.EqualFold(f.fact("caller"), h.Subject)
	}
}
