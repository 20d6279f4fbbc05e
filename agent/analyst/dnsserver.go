package analyst

import (
	"fmt"

	"github.com/rootcause/rootcause/finding"
)

// The cluster DNS itself (CoreDNS, kube-dns) failing: its pods crash or
// answer SERVFAIL (a forward loop, a broken Corefile), so every service
// that resolves names fails at once.
var dnsServer = &mechanism{
	kind:  KindDNSServer,
	class: classCause,
	label: "cluster DNS (CoreDNS) failure",
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("the cluster DNS (%s) is failing: %s", s, h.top().Summary)
		if l := h.fact("last_log"); l != "" {
			d += "; its last log line: " + quote(ReadableLine(l), 200)
		}
		if callers := dnsCallers(h); callers != "" {
			d += fmt.Sprintf(", so name resolution (DNS lookups) fails for %s", callers)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.rollback()
		r.add(finding.PriorityHigh, fmt.Sprintf("Restore the cluster DNS: fix %s (revert its last Corefile/config change, e.g. a forward loop to /etc/resolv.conf) and restart its pods", s))
		r.add(finding.PriorityMedium, "Check the upstream resolvers CoreDNS forwards to and the loop plugin's report")
		r.add(finding.PriorityLow, "Alert on CoreDNS pods not ready and on DNS error rates")
	},
}
