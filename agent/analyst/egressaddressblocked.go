package analyst

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// A caller whose egress NetworkPolicies let it out to an outside provider
// only by address block (ipBlock), when the provider now answers from an
// address none of the blocks holds. A policy cannot name a host, so a
// rule for a third party lists the ranges it served from when the rule
// was written; when the provider moves to new addresses (a migration to
// a new edge network, announced by mail or not at all) the caller still
// resolves the name, connects to the new address, and the policy drops
// the connection: every call times out (Java's "connection timed out
// after 5000 ms: host/203.0.113.72:443", Go's "dial tcp …: i/o timeout",
// Node's "connect ETIMEDOUT …"), never refused, and the caller's other
// providers, inside their blocks, answer. Neither the provider nor a
// CNI upgrade of the same night is the cause; the fix is the rule's
// address blocks (or an egress by name: a proxy, an FQDN policy). Read
// from the timed-out calls of a caller's log to public addresses and the
// egress NetworkPolicies that select its pods (YAML, a List).

// KindEgressAddressBlocked is a caller's connections to an outside
// address dropped because no ipBlock of its egress NetworkPolicies holds
// the address.
const KindEgressAddressBlocked Kind = "egress_address_blocked"

var egressAddressBlocked = &mechanism{
	kind:   KindEgressAddressBlocked,
	class:  classCause,
	label:  "egress NetworkPolicy's address blocks miss the provider's address",
	detect: detectEgressAddressBlocked,
	// The provider named in the caller's errors, and the caller's own
	// failures, are what the dropped connections produce.
	related:        droppedCallRelated("host"),
	strictTriggers: true,
	fitsChange:     egressPolicyChange,
	describe: func(h *Hypothesis, sc Scope) string {
		pols, lets := "NetworkPolicy "+h.fact("policies"), "lets"
		if strings.Contains(h.fact("policies"), ", ") {
			pols, lets = "NetworkPolicies "+h.fact("policies"), "let"
		}
		d := fmt.Sprintf("an egress NetworkPolicy drops %s's connections to %s: %s of namespace %s %s the %s pods for egress and %s TCP port %s out only to %s; %s is in none of those address blocks (ipBlock), so the connections are dropped and time out (not refused)",
			h.Subject, h.fact("target"), pols, h.fact("namespace"), selectWord(h.fact("policies")), h.Subject, lets, h.fact("port"), orWord(h.fact("blocks"), "no address block"), h.fact("addresses"))
		d += h.quoteClause(": ", "line", 220)
		d += fmt.Sprintf(". The provider answers from an address the rule does not list (its addresses moved, or the rule never had them); %s itself is not the cause: the connections never leave the cluster", orWord(h.fact("host"), "the provider"))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Add the provider's current address range (its published ranges; %s now) as an ipBlock on port %s to NetworkPolicy %s in namespace %s", h.fact("addresses"), h.fact("port"), strings.Split(h.fact("policies"), ", ")[0], h.fact("namespace"))
		r.med("Do not roll back %s or fail over for this: the calls are dropped on their way out of the cluster", h.Subject)
		r.med("Send calls to third parties through an egress by name (an egress proxy's domain allowlist, or an FQDN policy of the CNI) rather than address blocks, or subscribe to the provider's network-change notices")
		r.low("Test the egress rule from a pod of %s (curl -v to the provider) after each change of the provider's addresses", h.Subject)
	},
}

var (
	// An IPv4 address and port: "203.0.113.72:443", curl's "203.0.113.72
	// port 443".
	addrPortRE = regexp.MustCompile(`\b(\d{1,3}(?:\.\d{1,3}){3})(?::| port )(\d{2,5})\b`)
	// The host a line calls: a URL's, Java's "host/address:port", curl's
	// "connect to host port N".
	addrHostRE = regexp.MustCompile(`(?i)(?:https?://|\b)([a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\.[a-z]{2,})(?:/\d{1,3}(?:\.\d{1,3}){3}:\d{2,5}|:\d{2,5}|/| port \d)`)
)

// detectEgressAddressBlocked reads, from the logs of running workloads,
// connections to public addresses that time out, when the egress
// NetworkPolicies of the caller's namespace select its pods and no rule
// lets a TCP connection out to the address on its port.
func detectEgressAddressBlocked(ev *Gathered, found []Finding) []Finding {
	if len(ev.K8s.NetworkPolicies) == 0 {
		return nil
	}
	var out []Finding
	for c := range egressCallers(ev) {
		set, ns := c.set, c.ns
		var pols []*networkingv1.NetworkPolicy
		for i := range ev.K8s.NetworkPolicies {
			np := &ev.K8s.NetworkPolicies[i]
			if np.Namespace == ns && policyEgress(np) && policySelects(np, c.pods, set.Subject) {
				pols = append(pols, np)
			}
		}
		if len(pols) == 0 {
			continue
		}
		var dropped []string
		var line, host string
		port, admitted := 0, false
		first := set.Templates[0].FirstSeen
		for _, t := range set.Templates {
			l := t.Example
			if t.Incident == 0 || !matchLine(connectTimeoutRE, l) && !matchLine(curlTimeoutRE, l) || matchLine(lookupTimeoutRE, l) {
				continue
			}
			for _, m := range findAllSubmatch(addrPortRE, l, -1) {
				a, err := netip.ParseAddr(m[1])
				p, _ := strconv.Atoi(m[2])
				if err != nil || p == 0 || !publicAddr(a) {
					continue
				}
				if egressAdmitsAddr(pols, a, p) {
					admitted = true
					continue
				}
				if port != 0 && p != port {
					continue
				}
				if line == "" {
					line, port, first = l, p, orTime(t.FirstIncident, t.FirstSeen)
					if h := addrHostRE.FindStringSubmatch(l); h != nil {
						host = strings.ToLower(h[1])
					}
				}
				first = earliest(first, orTime(t.FirstIncident, t.FirstSeen))
				if !slices.Contains(dropped, a.String()) {
					dropped = append(dropped, a.String())
				}
			}
		}
		// A timed-out address the policies let out says the provider
		// itself is slow or down: the drop is not the whole story.
		if len(dropped) == 0 || admitted {
			continue
		}
		out = append(out, egressAddressFinding(ev, set.Subject, ns, host, dropped, port, line, first, pols))
	}
	return out
}

func egressAddressFinding(ev *Gathered, caller, ns, host string, addrs []string, port int, line string, first time.Time, pols []*networkingv1.NetworkPolicy) Finding {
	var names, allows, blocks []string
	for _, np := range pols {
		names = append(names, np.Name)
		for _, r := range np.Spec.Egress {
			allows = append(allows, fmt.Sprintf("%s to %s", egressPorts(r), egressPeers(r)))
			if egressPortAdmits(r, port) {
				for _, p := range r.To {
					if p.IPBlock != nil {
						blocks = append(blocks, p.IPBlock.CIDR)
					}
				}
			}
		}
	}
	allowWords := "allow nothing out"
	if len(allows) > 0 {
		allowWords = "allow only " + strings.Join(allows, "; ")
	}
	target := strings.Join(addrs, ", ") + ":" + strconv.Itoa(port)
	if host != "" {
		target = host + " (" + target + ")"
	}
	f := Finding{Kind: KindEgressAddressBlocked, Subject: caller, Namespace: ns, Source: SrcKubernetes, Time: first, Severity: SevCritical,
		Weight: 0.95, Object: "NetworkPolicy " + names[0],
		Summary: fmt.Sprintf("egress NetworkPolicies %s of namespace %s drop the connections of %s to %s", strings.Join(names, ", "), ns, caller, target)}
	if host != "" {
		f.Related = []string{host}
	}
	f.setFact("policies", strings.Join(names, ", "))
	f.setFact("namespace", ns)
	f.setFact("allows", allowWords)
	f.setFact("target", target)
	f.setFact("addresses", strings.Join(addrs, ", "))
	f.setFact("host", host)
	f.setFact("port", strconv.Itoa(port))
	f.setFact("line", line)
	f.setFact("blocks", strings.Join(blocks, ", "))
	verb := "is"
	if len(addrs) > 1 {
		verb = "are"
	}
	blockWords := "no address block"
	if len(blocks) > 0 {
		blockWords = "only the address blocks " + strings.Join(blocks, ", ")
	}
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%s connects to %s and its connections time out: %s", caller, target, quote(ReadableLine(line), 200)),
		fmt.Sprintf("NetworkPolicies %s select the pods of %s in namespace %s for egress and let TCP port %d out to %s: %s %s in none of them", strings.Join(names, ", "), caller, ns, port, blockWords, strings.Join(addrs, ", "), verb))
	return f
}

// egressAdmitsAddr reports whether an egress rule of the policies may let
// a TCP connection out to an outside address on port: a rule with no
// destinations, or an address block that holds it (and does not except
// it). Pod and namespace selectors match pods, never an outside address.
func egressAdmitsAddr(pols []*networkingv1.NetworkPolicy, a netip.Addr, port int) bool {
	for _, np := range pols {
		for _, r := range np.Spec.Egress {
			if !egressPortAdmits(r, port) {
				continue
			}
			if len(r.To) == 0 {
				return true
			}
			for _, peer := range r.To {
				if peer.IPBlock == nil {
					continue
				}
				b, err := netip.ParsePrefix(peer.IPBlock.CIDR)
				if err != nil {
					return true // cannot tell
				}
				if !b.Contains(a) {
					continue
				}
				excepted := false
				for _, e := range peer.IPBlock.Except {
					if x, err := netip.ParsePrefix(e); err == nil && x.Contains(a) {
						excepted = true
					}
				}
				if !excepted {
					return true
				}
			}
		}
	}
	return false
}

// publicAddr reports whether an address lies outside every private,
// shared, loopback and link-local range: an address a cluster's pods and
// Services never have.
func publicAddr(a netip.Addr) bool {
	if !a.Is4() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() {
		return false
	}
	return !netip.MustParsePrefix("100.64.0.0/10").Contains(a) && !netip.MustParsePrefix("0.0.0.0/8").Contains(a)
}
