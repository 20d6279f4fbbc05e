package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

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
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
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
