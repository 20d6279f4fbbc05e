package analyst

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// Names that do not resolve (no such host, NXDOMAIN): the caller cannot
// reach the service it names, whether the name is wrong or the DNS fails.
var dnsResolution = &mechanism{
	kind:       KindDNS,
	class:      classDependency,
	label:      "DNS resolution failure",
	lines:      regexp.MustCompile(`(?i)no such host|NXDOMAIN|Temporary failure in name resolution|could not resolve|Name or service not known|server misbehaving|\bENOTFOUND\b|getaddrinfo|UnknownHostException|name resolution`),
	lineWeight: 0.85,
	detect:     followMissingService,
	fitsChange: func(h *Hypothesis, c *Finding) bool { return networkChangeFits(c) },
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("DNS resolution fails for %s (no such host) in %s, so its calls cannot reach it: %s", orWord(h.fact("target"), s), orWord(h.fact("caller"), "the service"), quote(ReadableLine(h.fact("line")), 200))
		d += h.clause("; ", "missing_service")
		d += h.clause("; ", "other_namespace")
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if fq := h.fact("service_fqdn"); fq != "" {
			r.high("Point the caller at the Service's full name %s (its short name resolves only inside the Service's own namespace), or create a Service of that name in the caller's namespace (an ExternalName to it)", fq)
		}
		if m := h.fact("missing_service"); m != "" {
			r.high("Point the caller's configuration at a Service that exists (%s), or recreate the Service it names", orWord(h.fact("services_there"), "see the namespace's Services"))
		}
		r.add(finding.PriorityHigh, fmt.Sprintf("Check DNS for %s: that the name exists (service created, correct namespace) and CoreDNS is healthy", orWord(h.fact("target"), s)))
		r.add(finding.PriorityMedium, "Fix the host name in the caller's configuration if it was changed")
		r.add(finding.PriorityLow, "Alert on DNS error rates (CoreDNS SERVFAIL/NXDOMAIN)")
	},
}

// followMissingService follows a cluster name that does not resolve
// ("pg-main.data.svc.cluster.local": Name or service not known) to its
// Service, for the DNS findings (see markMissingService).
func followMissingService(ev *Gathered, found []Finding) []Finding {
	for i := range found {
		if f := &found[i]; f.Kind == KindDNS {
			markMissingService(f, ev.K8s)
		}
	}
	return nil
}

// markMissingService marks a finding whose line names a cluster name that
// does not resolve when that namespace's Services were listed and the
// name is not among them: the Service does not exist (removed in a
// migration, renamed), which is why the name does not resolve, not the
// DNS. Failed runs whose log says so are marked by their own mechanism.
func markMissingService(f *Finding, k K8sEvidence) {
	if f.fact("missing_service") != "" {
		return
	}
	m := findSubmatch(svcHostRE, f.fact("line"))
	if m == nil {
		markOtherNamespace(f, k)
		return
	}
	name, ns := m[1], m[2]
	var have []string
	for _, s := range append(slices.Clone(k.Services), k.CalledServices...) {
		if s.Service.Namespace == ns && !slices.Contains(have, s.Service.Name) {
			have = append(have, s.Service.Name)
		}
	}
	if len(have) < 2 || slices.Contains(have, name) {
		return // not listed, or it exists (then the DNS itself fails)
	}
	d := fmt.Sprintf("Service %s does not exist in namespace %s (its Services: %s), so the name %s.%s.svc does not resolve", name, ns, strings.Join(have, ", "), name, ns)
	f.setFact("missing_service", d)
	f.setFact("services_there", strings.Join(have, ", "))
	f.Evidence = append(f.Evidence, fmt.Sprintf("no service %s in namespace %s: its Services are %s", name, ns, strings.Join(have, ", ")))
}

// nxHostRE is the host a lookup answered "no such host" for (Go's
// resolver: "lookup redis on 10.96.0.10:53: no such host", "lookup redis:
// no such host"); unresolvedHostRE (logs.go) the other runtimes' forms.
var nxHostRE = regexp.MustCompile(`(?i)\blookup ([A-Za-z0-9][\w.-]*)(?: on [\w.\[\]:]+)?: no such host`)

// unresolvedShortHost returns the short host name (no dot: a Service's
// name as a pod of its own namespace would call it) a line says does not
// exist in DNS, or "". A temporary failure (EAI_AGAIN, a timeout) says
// nothing about the name.
func unresolvedShortHost(line string) string {
	var h string
	if m := findSubmatch(nxHostRE, line); m != nil {
		h = m[1]
	} else if m := findSubmatch(unresolvedHostRE, line); m != nil && !strings.Contains(strings.ToUpper(m[0]), "EAI_AGAIN") {
		h = m[1]
	}
	h = strings.ToLower(strings.TrimRight(h, "."))
	if h == "" || strings.Contains(h, ".") || h == "localhost" || net.ParseIP(h) != nil {
		return ""
	}
	return h
}

// markOtherNamespace marks a finding whose caller cannot resolve a short
// name when its own namespace's Services were listed without that name and
// a Service of the name lives in another namespace: the short name only
// resolves inside that namespace (the resolv.conf search path starts with
// the caller's own), so the caller needs the full name. A workload moved
// to a new namespace with its old configuration, or a Service moved away,
// reads so. ExternalName Services of the name elsewhere are aliases
// (where the name used to resolve), named as such.
func markOtherNamespace(f *Finding, k K8sEvidence) {
	name := unresolvedShortHost(f.fact("line"))
	if name == "" || f.Namespace == "" {
		return
	}
	var own []string
	var real, alias []ServiceState
	seen := map[string]bool{}
	for _, s := range append(slices.Clone(k.Services), k.CalledServices...) {
		key := s.Service.Namespace + "/" + s.Service.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		switch {
		case s.Service.Namespace == f.Namespace:
			own = append(own, s.Service.Name)
		case s.Service.Name != name:
		case s.Service.Spec.Type == corev1.ServiceTypeExternalName:
			alias = append(alias, s)
		default:
			real = append(real, s)
		}
	}
	if len(own) == 0 || slices.Contains(own, name) || len(real) == 0 {
		return
	}
	var where []string
	for _, s := range real {
		where = append(where, fmt.Sprintf("%s.%s.svc.cluster.local", s.Service.Name, s.Service.Namespace))
	}
	d := fmt.Sprintf("the short name %s resolves only in a Service's own namespace, and namespace %s has no Service %s (its Services: %s): the Service %s is in namespace %s (%s)",
		name, f.Namespace, name, strings.Join(own, ", "), name, real[0].Service.Namespace, strings.Join(where, ", "))
	if len(alias) > 0 {
		var as []string
		for _, a := range alias {
			as = append(as, fmt.Sprintf("%s/%s → %s", a.Service.Namespace, a.Service.Name, a.Service.Spec.ExternalName))
		}
		d += fmt.Sprintf("; the name resolved only through the ExternalName Service %s, in another namespace than the caller's", strings.Join(as, ", "))
	}
	f.setFact("other_namespace", d)
	f.setFact("service_fqdn", where[0])
	f.Weight = max(f.Weight, 0.9) // the name's absence and its real home both read
	f.Evidence = append(f.Evidence, fmt.Sprintf("no Service %s in namespace %s (its Services: %s); Service %s in namespace %s", name, f.Namespace, strings.Join(own, ", "), name, real[0].Service.Namespace))
}
