package analyst

import (
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

// Lookups that time out at the resolver: a caller's calls to several
// different services all fail or wait with "lookup X on 10.96.0.10:53:
// i/o timeout" (Go), EAI_AGAIN (Node, glibc), because the cluster DNS
// (CoreDNS, kube-dns) or the resolver it forwards to does not answer in
// time — too few replicas, CPU-throttled, overloaded. Every callee then
// looks slow or down at once while none of them is: the resolver, named
// by the address the lookups ask, is the one cause. CoreDNS's own log
// (plugin/errors ... i/o timeout) and a change to it confirm it.

// KindResolverTimeout is a resolver whose lookups time out for many names.
const KindResolverTimeout Kind = "dns_lookup_timeout"

var (
	// lookupTimeoutRE is a failed lookup of a name at a resolver that did
	// not answer: Go's "lookup HOST on IP:53: ... i/o timeout", Node's
	// "getaddrinfo EAI_AGAIN HOST".
	lookupTimeoutRE = regexp.MustCompile(`(?i)lookup ([\w.-]+) on ([\w.:\[\]-]+:53): (?:read udp [^:]+:\d+->[^:]+:\d+: )?(?:i/o timeout|timeout|server misbehaving)|getaddrinfo EAI_AGAIN ([\w.-]+)`)
	// dnsServerNameRE names a cluster DNS source or change.
	dnsServerNameRE = regexp.MustCompile(`(?i)\b(coredns|kube-dns|node-local-dns|nodelocaldns|dns-autoscaler)\b`)
)

var resolverTimeout = &mechanism{
	kind:   KindResolverTimeout,
	class:  classCause,
	label:  "DNS lookups time out (the resolver does not answer in time)",
	detect: detectResolverTimeouts,
	// The callers' timeouts and latency, and the lookups' failures, are
	// what the resolver's timeouts produce.
	related: func(h *Hypothesis, f *Finding) bool {
		callers := strings.Split(h.fact("callers"), ", ")
		if slices.Contains(callers, f.Subject) && (f.Kind == KindLatency || f.Kind == KindTimeout || f.Kind == KindErrorRate || f.Kind == KindLogErrors || f.Kind == KindDNS) {
			return true
		}
		return slices.Contains(callers, f.fact("caller")) && (f.Kind == KindTimeout || f.Kind == KindDNS)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(dnsServerNameRE, changeText(c)) || matchLine(resolverChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("DNS lookups time out at the resolver %s", orWord(h.fact("resolver"), h.Subject))
		if s := dnsServerDown(h); s != nil {
			// Nothing answers: the cluster DNS's own pods are down.
			d = fmt.Sprintf("the cluster DNS %s is down: %s", h.Subject, strings.TrimPrefix(s.Summary, "cluster DNS "+s.Subject+": "))
			if l := s.fact("last_log"); l != "" {
				d += "; its crashed containers' last log line: " + quote(ReadableLine(l), 200)
			}
			d += describeDNSLoop(s)
			d += fmt.Sprintf(". So lookups at %s time out", orWord(h.fact("resolver"), "its address"))
		} else if h.Subject != h.fact("resolver") {
			d = fmt.Sprintf("the cluster DNS %s does not answer in time: lookups at %s time out", h.Subject, orWord(h.fact("resolver"), "its address"))
		}
		d += fmt.Sprintf(" for %s — %s — so every call of %s that resolves a name waits for the resolver's timeout (about 5 s) or fails, and all its downstream services look slow or down at once while they are not",
			orWord(h.fact("callers"), "its callers"), orWord(h.fact("names"), "several names"), orWord(h.fact("callers"), "them"))
		d += h.quoteClause(": ", "line", 220)
		if l := h.fact("server_line"); l != "" {
			d += fmt.Sprintf(". %s's own log shows its lookups timing out: %s", h.Subject, quote(ReadableLine(l), 160))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if s := dnsServerDown(h); s != nil {
			if !recommendDNSLoop(s, r) {
				r.high("Restore the cluster DNS (%s): fix why its pods crash (their last log lines, a recent Corefile change) and restart them", h.Subject)
				r.low("Alert on CoreDNS pods not ready and on lookups timing out in clients' logs")
			}
			return
		}
		r.high("Give the cluster DNS (%s) capacity back: scale its replicas up (restore its autoscaler or a floor of replicas) and lift its CPU limit if it is throttled", h.Subject)
		r.med("Cache lookups near the callers (NodeLocal DNSCache) and cut needless lookups (ndots:5 search-path expansion: use fully qualified names ending in a dot)")
		r.low("Alert on CoreDNS request latency, its CPU throttling and lookups timing out in clients' logs")
	},
}

// lookupTimeout is a line of a client's log saying a DNS lookup timed out.
type lookupTimeout struct {
	set  *LogSet
	t    analysis.LogTemplate
	line string
	// name is the name looked up (short); resolver the address asked, ""
	// when the line names none (EAI_AGAIN).
	name, resolver string
}

// clientLookupTimeouts yields the lookups that timed out during the
// incident in the logs of all but the DNS servers, in the order gathered.
func clientLookupTimeouts(ev *Gathered) iter.Seq[lookupTimeout] {
	return func(yield func(lookupTimeout) bool) {
		for set, t := range incidentTemplates(ev) {
			if matchLine(dnsServerNameRE, set.Subject) {
				continue
			}
			for _, l := range t.Lines() {
				m := findSubmatch(lookupTimeoutRE, l)
				if m == nil {
					continue
				}
				name, resolver := m[1], m[2]
				if name == "" {
					name = m[3]
				}
				if !yield(lookupTimeout{set, t, l, ShortHost(name), resolver}) {
					return
				}
			}
		}
	}
}

// detectResolverTimeouts reads, per caller, lookups of at least two
// different names timing out at one resolver address.
func detectResolverTimeouts(ev *Gathered, found []Finding) []Finding {
	type stat struct {
		names   []string
		callers []string
		count   int
		first   time.Time
		line    string
		ns      string
	}
	byResolver := map[string]*stat{}
	var order []string
	for x := range clientLookupTimeouts(ev) {
		resolver := orWord(x.resolver, "the resolver")
		s := byResolver[resolver]
		if s == nil {
			s = &stat{}
			byResolver[resolver] = s
			order = append(order, resolver)
		}
		s.names = appendNew(s.names, x.name)
		s.callers = appendNew(s.callers, x.set.Subject)
		s.count += x.t.Incident
		s.first = earliest(s.first, orTime(x.t.FirstIncident, x.t.FirstSeen))
		if s.line == "" {
			s.line, s.ns = x.line, x.set.Namespace
		}
	}
	var out []Finding
	for _, resolver := range order {
		s := byResolver[resolver]
		if len(s.names) < 2 {
			continue
		}
		subject, serverLine := clusterDNSName(ev, found)
		if subject == "" {
			subject = resolver
		}
		f := Finding{Kind: KindResolverTimeout, Subject: subject, Namespace: s.ns, Source: SrcLogs, Time: s.first, Severity: SevCritical, Weight: 0.9,
			Related:  slices.Clone(s.callers),
			Summary:  fmt.Sprintf("lookups of %d names time out at the resolver %s", len(s.names), resolver),
			Evidence: []string{fmt.Sprintf("%s: %d lookups of %s time out at %s (from %s): %s", strings.Join(s.callers, ", "), s.count, strings.Join(s.names, ", "), resolver, hm(s.first), quote(ReadableLine(s.line), 200))}}
		f.setFact("resolver", resolver)
		f.setFact("names", strings.Join(s.names, ", "))
		f.setFact("callers", strings.Join(s.callers, ", "))
		f.setFact("line", s.line)
		if serverLine != "" {
			f.setFact("server_line", serverLine)
			f.Weight = 0.95
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs lookups timing out: %s", subject, quote(ReadableLine(serverLine), 200)))
		}
		out = append(out, f)
	}
	return out
}

// clusterDNSName names the cluster DNS from a log source of it (with one
// of its lines of lookups timing out or failing), a change to it, or a
// finding of its own trouble (its pods killed by their probes, throttled,
// scaled down).
func clusterDNSName(ev *Gathered, found []Finding) (name, line string) {
	for i := range ev.Logs {
		set := &ev.Logs[i]
		m := findSubmatch(dnsServerNameRE, set.Subject)
		if m == nil {
			continue
		}
		name = strings.ToLower(m[1])
		for _, t := range set.Templates {
			if t.Incident > 0 && strings.Contains(t.Example, "timeout") {
				return name, t.Example
			}
		}
	}
	if name != "" {
		return name, ""
	}
	for _, c := range ev.Changes {
		if m := findSubmatch(dnsServerNameRE, c.Service+" "+c.Description); m != nil {
			return strings.ToLower(m[1]), ""
		}
	}
	for i := range found {
		if m := findSubmatch(dnsServerNameRE, found[i].Subject); m != nil && found[i].Severity >= SevWarning {
			return strings.ToLower(m[1]), ""
		}
	}
	return "", ""
}

// dnsServerDown is the finding, among h's, of the cluster DNS's own pods
// failing (dnsserver.go): the lookups then time out because nothing
// answers, not for want of capacity.
func dnsServerDown(h *Hypothesis) *Finding {
	for _, f := range append(slices.Clone(h.Primary), h.Support...) {
		// Scaled down, it still answers (too slowly): that is capacity.
		if f.Kind == KindDNSServer && strings.EqualFold(f.Subject, h.Subject) && f.fact("scaled_from") == "" {
			return f
		}
	}
	return nil
}
