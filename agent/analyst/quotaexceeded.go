package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A namespace ResourceQuota refuses the pods of a workload (FailedCreate:
// exceeded quota): the workload cannot create them. The API server's
// message names the quota and, per resource, what one pod requests, what
// the namespace already uses and the hard limit:
//
//	pods "web-7d9c8b6f5-p8w6r" is forbidden: exceeded quota: compute,
//	requested: requests.cpu=800m, used: requests.cpu=11500m, limited: requests.cpu=12
//
// When the workload still runs some pods (an autoscaler or a scale-up
// asked for more), the quota caps it below what it was asked for: the
// pods that run carry the load of the missing ones (latency, saturation),
// and whatever else in the namespace holds the quota's room is what to
// free or resize.
var quotaExceeded = &mechanism{
	kind:  KindQuota,
	class: classCause,
	label: "resource quota exceeded",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.85, e.Reason == "FailedCreate" && strings.Contains(strings.ToLower(e.Message), "exceeded quota")
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		q := readQuotaRefusal(e.Message)
		if q.quota == "" {
			return
		}
		f.setFact("quota", q.quota)
		f.setFact("quota_resource", q.resource)
		f.setFact("quota_requested", q.requested)
		f.setFact("quota_used", q.used)
		f.setFact("quota_hard", q.hard)
	},
	// The workload holding the quota's room in the namespace
	// (quotaholder.go).
	detect: func(ev *Gathered, found []Finding) []Finding {
		for i := range found {
			if found[i].Kind == KindQuota && found[i].fact("quota") != "" {
				quotaHolder(ev, &found[i])
			}
		}
		return nil
	},
	// What asks for more than the quota leaves (more replicas, larger
	// requests, an autoscaler's maximum raised) or a change naming the
	// quota triggers it; a flag of the subject does not.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindFeatureFlag && matchLine(quotaAskRE, changeText(c))
	},
	contentTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		q := h.fact("quota")
		if q == "" {
			return fmt.Sprintf("%s cannot create pods: resource quota exceeded (%s)", h.Subject, truncate(h.fact("message"), 200))
		}
		d := fmt.Sprintf("%s cannot create pods: resource quota exceeded: ResourceQuota %s is used up", h.Subject, q)
		if r := h.fact("quota_resource"); r != "" {
			d += fmt.Sprintf(" (%s: %s used of %s, a new pod asks %s more)", r, h.fact("quota_used"), h.fact("quota_hard"), h.fact("quota_requested"))
		}
		if w := h.fact("holder"); w != "" {
			d += fmt.Sprintf("; most of it is held by %s's %s running pods", w, h.fact("holder_pods"))
			if r := h.fact("holder_request"); r != "" {
				d += fmt.Sprintf(" (%s of %s in all)", r, h.fact("quota_resource"))
			}
		}
		if want, have := quotaCapped(h); want != "" {
			d += fmt.Sprintf(", so it runs %s of the %s replicas it was scaled to", have, want)
			if hasKind(h.Support, KindLoadSurge) || hasKind(h.Support, KindLatency) || hasKind(h.Support, KindSaturation) {
				d += " and the pods that run carry the load the missing ones would take"
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s, ns := h.Subject, orWord(h.top().Namespace, sc.Namespace)
		if q := h.fact("quota"); q != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Make room in ResourceQuota %s of namespace %s: raise its %s, or scale down or shrink the requests of the other workloads that hold it (kubectl describe quota %s -n %s)", q, ns, orWord(h.fact("quota_resource"), "hard limits"), q, ns))
		} else {
			r.add(finding.PriorityHigh, fmt.Sprintf("Raise the resource quota of namespace %s or lower the requests of %s", ns, s))
		}
		if want, _ := quotaCapped(h); want != "" {
			r.add(finding.PriorityMedium, fmt.Sprintf("Size the quota for %s at its autoscaler's maximum, or give batch work its own namespace and quota", s))
		}
		r.add(finding.PriorityLow, "Alert when namespace quota use passes 80%")
	},
}

// quotaAskRE is a change that asks a namespace's quota for more: replicas,
// requests or limits, an autoscaler's bounds, a new workload.
var quotaAskRE = regexp.MustCompile(`(?i)replica|request|limit|resources|\bcpu\b|memory|\bscale|hpa|autoscal|quota`)

// quotaRefusal is what a FailedCreate "exceeded quota" message says.
type quotaRefusal struct{ quota, resource, requested, used, hard string }

var quotaRefusalRE = regexp.MustCompile(`(?i)exceeded quota: ([\w.-]+)(?:, requested: ([\w./-]+)=([^,\s]+)\S*?, used: [\w./-]+=([^,\s]+)\S*?, limited: [\w./-]+=([^,\s]+))?`)

// readQuotaRefusal reads the quota, and the first resource it refuses,
// from the API server's message (zero when it is not one).
func readQuotaRefusal(msg string) quotaRefusal {
	m := findSubmatch(quotaRefusalRE, msg)
	if m == nil {
		return quotaRefusal{}
	}
	return quotaRefusal{quota: m[1], resource: m[2], requested: m[3], used: m[4], hard: m[5]}
}

// quotaCapped reports the replicas the workload was scaled to and how many
// run, when a rollout finding among the hypothesis's shows it short.
func quotaCapped(h *Hypothesis) (want, have string) {
	for _, f := range append(append([]*Finding{}, h.Primary...), h.Support...) {
		if f.Kind == KindRolloutStuck && f.fact("desired") != "" && f.fact("available") != "" && f.fact("available") != "0" {
			return f.fact("desired"), f.fact("available")
		}
	}
	return "", ""
}
