package analyst

import (
	"fmt"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// An egress NetworkPolicy that does not let a namespace's pods reach the
// cluster DNS. Once a policy selects a pod for egress, the pod may send
// only what some egress rule allows; a default-deny baseline with an
// allow list of application ports (TCP 443, 5432, 8080) but no rule for
// port 53 drops every lookup on its way to kube-dns. Every call of those
// pods that resolves a name then fails with the resolver's timeout
// ("lookup X on 10.96.0.10:53: read udp …: i/o timeout", EAI_AGAIN,
// nslookup's "no servers could be reached"), names of every kind at once,
// which reads as the cluster DNS being down while CoreDNS is healthy and
// answers every other namespace. What to fix is the policy: allow UDP and
// TCP 53 to the DNS pods. Read from the lookups that time out in the
// pods' logs and the namespace's NetworkPolicies (YAML, a List, describe).

// KindEgressDNSBlocked is an egress NetworkPolicy that drops the lookups
// of the pods it selects.
const KindEgressDNSBlocked Kind = "egress_dns_blocked"

var egressDNSBlocked = &mechanism{
	kind:   KindEgressDNSBlocked,
	class:  classCause,
	label:  "egress NetworkPolicy drops the pods' DNS lookups",
	detect: detectEgressDNSBlocked,
	// The lookups timing out (and the resolver they seem to blame), the
	// callers' failures and their probes are what the dropped lookups
	// produce.
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Kind == KindResolverTimeout || f.Kind == KindDNS && f.Namespace == h.fact("namespace") {
			return true
		}
		callers := strings.Split(h.fact("callers"), ", ")
		return slices.Contains(callers, f.Subject) || slices.Contains(callers, f.fact("caller"))
	},
	strictTriggers: true,
	fitsChange:     egressPolicyChange,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("an egress NetworkPolicy blocks DNS for the %s pods: %s %s them for egress and %s, with no rule for port 53 (UDP/TCP) to the cluster DNS (kube-dns), so every lookup of %s at %s is dropped and times out — %s — and every call that resolves a name fails",
			orWord(h.fact("namespace"), "namespace's"), plural(len(strings.Split(h.fact("policies"), ", ")), "NetworkPolicy", "NetworkPolicies")+" "+h.fact("policies"),
			selectWord(h.fact("policies")), orWord(h.fact("allows"), "allow nothing"), orWord(h.fact("callers"), h.Subject), orWord(h.fact("resolver"), "the resolver"), orWord(h.fact("names"), "every name"))
		d += h.quoteClause(": ", "line", 220)
		d += ". The cluster DNS itself is not the cause: the lookups never reach it"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Allow DNS in the egress policy of namespace %s: an egress rule to the kube-dns pods (namespaceSelector kubernetes.io/metadata.name: kube-system, podSelector k8s-app: kube-dns) on port 53 UDP and TCP (and to the NodeLocal DNSCache address if the nodes use one)", orWord(h.fact("namespace"), "the namespace"))
		if t := h.Trigger; t != nil {
			r.med("Fix the baseline that brought the policies (%s): ship its default-deny egress with the DNS rule", truncate(t.fact("description"), 100))
		}
		r.low("Test NetworkPolicy baselines against a pod that resolves and calls out (nslookup, curl) before enforcing them on a namespace")
	},
}

// selectWord is "select" or "selects" for a list of policies.
func selectWord(list string) string {
	if strings.Contains(list, ", ") {
		return "select"
	}
	return "selects"
}

// detectEgressDNSBlocked reads, per namespace, lookups of the namespace's
// workloads timing out at the resolver while the egress NetworkPolicies
// that select their pods allow no traffic to port 53.
func detectEgressDNSBlocked(ev *Gathered, found []Finding) []Finding {
	if len(ev.K8s.NetworkPolicies) == 0 {
		return nil
	}
	type stat struct {
		callers, names []string
		resolver, line string
		first          time.Time
	}
	byNS := map[string]*stat{}
	var order []string
	for x := range clientLookupTimeouts(ev) {
		if x.set.Host {
			continue
		}
		ns := orWord(x.set.Namespace, ev.Scope.Namespace)
		s := byNS[ns]
		if s == nil {
			s = &stat{}
			byNS[ns] = s
			order = append(order, ns)
		}
		s.names = appendNew(s.names, x.name)
		s.callers = appendNew(s.callers, x.set.Subject)
		s.first = earliest(s.first, orTime(x.t.FirstIncident, x.t.FirstSeen))
		if s.line == "" {
			s.line = x.line
		}
		if s.resolver == "" {
			s.resolver = x.resolver
		}
	}
	var out []Finding
	for _, ns := range order {
		s := byNS[ns]
		var pols []*networkingv1.NetworkPolicy
		dnsOK := false
		for i := range ev.K8s.NetworkPolicies {
			np := &ev.K8s.NetworkPolicies[i]
			if np.Namespace != "" && np.Namespace != ns || !policyEgress(np) {
				continue
			}
			selects := false
			for _, c := range s.callers {
				if policySelects(np, podsOfWorkload(ev.K8s.Pods, ns, c), c) {
					selects = true
				}
			}
			if !selects {
				continue
			}
			pols = append(pols, np)
			for _, r := range np.Spec.Egress {
				if egressAllowsDNS(r) {
					dnsOK = true
				}
			}
		}
		if dnsOK || len(pols) == 0 {
			continue
		}
		names, allowWords := egressAllows(pols)
		subject := s.callers[0]
		if slices.Contains(s.callers, ev.Scope.Service) {
			subject = ev.Scope.Service
		}
		f := Finding{Kind: KindEgressDNSBlocked, Subject: subject, Namespace: ns, Source: SrcKubernetes, Time: s.first, Severity: SevCritical,
			Weight: 0.97, Object: "NetworkPolicy " + names[0], Related: slices.Clone(s.callers),
			Summary: fmt.Sprintf("egress NetworkPolicies %s of namespace %s allow no DNS (port 53): lookups of %s time out", strings.Join(names, ", "), ns, strings.Join(s.callers, ", "))}
		f.setFact("policies", strings.Join(names, ", "))
		f.setFact("namespace", ns)
		f.setFact("allows", allowWords)
		f.setFact("callers", strings.Join(s.callers, ", "))
		f.setFact("names", strings.Join(s.names, ", "))
		f.setFact("resolver", s.resolver)
		f.setFact("line", s.line)
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("NetworkPolicies %s select the pods of %s in namespace %s for egress and %s: no rule allows port 53 (DNS)", strings.Join(names, ", "), strings.Join(s.callers, ", "), ns, allowWords),
			fmt.Sprintf("%s: lookups of %s time out at %s (from %s): %s", strings.Join(s.callers, ", "), strings.Join(s.names, ", "), orWord(s.resolver, "the resolver"), hm(s.first), quote(ReadableLine(s.line), 200)))
		// A policy created shortly before the lookups failed is when
		// they began to be dropped.
		for _, np := range pols {
			if t := np.CreationTimestamp.Time; !t.IsZero() && ev.Window.recent(t) && !s.first.IsZero() && t.Before(s.first) && s.first.Sub(t) < 6*time.Hour {
				f.Evidence = append(f.Evidence, fmt.Sprintf("NetworkPolicy %s was created at %s", np.Name, t.UTC().Format(time.RFC3339)))
				f.Time = earliest(f.Time, t)
			}
		}
		out = append(out, f)
	}
	return out
}

// policyEgress reports whether a policy restricts egress: Egress among its
// policyTypes, or egress rules with no types given.
func policyEgress(np *networkingv1.NetworkPolicy) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return len(np.Spec.Egress) > 0
	}
	return slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
}

// egressAllowsDNS reports whether an egress rule may let lookups out: no
// ports (every port), port 53 over UDP (or no protocol given), a range
// over 53, or a port named for DNS. Its peers are not judged: a rule that
// names port 53 is meant for DNS.
func egressAllowsDNS(r networkingv1.NetworkPolicyEgressRule) bool {
	if len(r.Ports) == 0 {
		return true
	}
	for _, p := range r.Ports {
		if p.Protocol != nil && *p.Protocol != "UDP" && *p.Protocol != "TCP" {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == 1:
			if strings.Contains(strings.ToLower(p.Port.StrVal), "dns") {
				return true
			}
		case p.EndPort != nil:
			if p.Port.IntValue() <= 53 && int(*p.EndPort) >= 53 {
				return true
			}
		case p.Port.IntValue() == 53:
			return true
		}
	}
	return false
}

// egressAllows are the names of egress NetworkPolicies and what their
// rules let out, as "allow only TCP 443 to ...; ..." ("allow nothing
// out" when they have no egress rule).
func egressAllows(pols []*networkingv1.NetworkPolicy) ([]string, string) {
	var names, allows []string
	for _, np := range pols {
		names = append(names, np.Name)
		for _, r := range np.Spec.Egress {
			allows = append(allows, fmt.Sprintf("%s to %s", egressPorts(r), egressPeers(r)))
		}
	}
	if len(allows) == 0 {
		return names, "allow nothing out"
	}
	return names, "allow only " + strings.Join(allows, "; ")
}

// egressPorts says an egress rule's ports as "TCP 443, TCP 5432".
func egressPorts(r networkingv1.NetworkPolicyEgressRule) string {
	if len(r.Ports) == 0 {
		return "every port"
	}
	var ps []string
	for _, p := range r.Ports {
		s := "TCP"
		if p.Protocol != nil {
			s = string(*p.Protocol)
		}
		if p.Port != nil {
			s += " " + p.Port.String()
			if p.EndPort != nil {
				s += fmt.Sprintf("-%d", *p.EndPort)
			}
		}
		ps = append(ps, s)
	}
	return strings.Join(ps, ", ")
}

// egressPeers says an egress rule's destinations.
func egressPeers(r networkingv1.NetworkPolicyEgressRule) string {
	if len(r.To) == 0 {
		return "anywhere"
	}
	var ps []string
	for _, p := range r.To {
		switch {
		case p.IPBlock != nil:
			s := p.IPBlock.CIDR
			if len(p.IPBlock.Except) > 0 {
				s += " except " + strings.Join(p.IPBlock.Except, ", ")
			}
			ps = append(ps, s)
		case p.NamespaceSelector != nil && p.PodSelector != nil:
			ps = append(ps, "pods "+labelWords(p.PodSelector.MatchLabels)+" of namespaces "+labelWords(p.NamespaceSelector.MatchLabels))
		case p.NamespaceSelector != nil:
			ps = append(ps, "namespaces "+labelWords(p.NamespaceSelector.MatchLabels))
		case p.PodSelector != nil:
			ps = append(ps, "pods "+labelWords(p.PodSelector.MatchLabels))
		}
	}
	return strings.Join(ps, ", ")
}

// labelWords says match labels as k=v,k=v ("all" when empty).
func labelWords(m map[string]string) string {
	if len(m) == 0 {
		return "all"
	}
	var ks []string
	for k, v := range m {
		ks = append(ks, k+"="+v)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}
