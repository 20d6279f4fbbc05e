package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A workload whose ServiceAccount may not do what it needs: the API server
// answers 403 Forbidden and names the user, the verb, the resource and the
// namespace ('leases.coordination.k8s.io "x-leader" is forbidden: User
// "system:serviceaccount:warehouse:stock-reconciler" cannot get resource
// "leases" in API group "coordination.k8s.io" in the namespace
// "warehouse"'). The pods run and look healthy, but a controller that
// cannot take its leader lease, list what it watches or write its results
// stays idle. The cause is the RBAC binding (a Role or RoleBinding that
// does not name the ServiceAccount, often after a deploy moved the
// workload to a new ServiceAccount), not a credential.

// KindRBACDenied is a workload's ServiceAccount refused by RBAC.
const KindRBACDenied Kind = "rbac_denied"

var rbacDenied = &mechanism{
	kind:   KindRBACDenied,
	class:  classCause,
	label:  "RBAC permission denied (forbidden) to the workload's ServiceAccount",
	detect: detectRBACDenied,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if rbacChangeRE.MatchString(c.fact("description")) {
			return true
		}
		if c.Kind == KindDeploy && imageOnlyRE.MatchString(c.fact("description")) {
			return false // the same manifests, another image: no new ServiceAccount
		}
		return c.Subject == h.Subject && (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindInfraChange)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		scope := "at the cluster scope"
		if ns := h.fact("namespace"); ns != "" {
			scope = "in the namespace " + ns
		}
		res := h.fact("resource")
		if g := h.fact("group"); g != "" {
			res += "." + g
		}
		d := fmt.Sprintf("%s's ServiceAccount %s is forbidden by RBAC to %s %s %s: no Role or RoleBinding grants it this permission, so the API server refuses every call (403 Forbidden)",
			h.Subject, h.fact("user"), h.fact("verb"), res, scope)
		if strings.Contains(h.fact("resource"), "lease") {
			d += fmt.Sprintf("; %s cannot take its leader lease, so no replica becomes leader and it stays idle although its pods run", h.Subject)
		}
		if l := h.fact("line"); l != "" {
			d += ": " + quote(forbiddenMessage(ReadableLine(l)), 240)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Grant the ServiceAccount %s the permission: add it to the subjects of the RoleBinding that grants %s %s (or bind a Role that does), or point the workload back at the ServiceAccount that is bound", h.fact("user"), h.fact("verb"), h.fact("resource"))
		r.rollback()
		r.med("Check with: kubectl auth can-i %s %s --as=%s%s", h.fact("verb"), h.fact("resource"), h.fact("user_full"), nsFlag(h.fact("namespace")))
		r.low("Ship the RBAC objects with the workload's manifests and alert on 403 Forbidden answers of the API server to its ServiceAccount")
	},
}

func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}

// forbiddenRE reads the refusal as client-go, fabric8 ("Failure executing:
// GET ... Message: ... is forbidden: ...") and the Python client print it;
// the Python client's "HTTP response body:" line holds it inside a JSON
// Status, its quotes escaped (\").
// rbacChangeRE reads a change of the RBAC objects or the ServiceAccounts;
// imageOnlyRE a deploy that only pushed or re-tagged an image.
var (
	rbacChangeRE = regexp.MustCompile(`(?i)\brbac\b|serviceaccount|service account|rolebinding|clusterrole|\brole\b`)
	imageOnlyRE  = regexp.MustCompile(`(?i)\bre-?tag|image (?:pushed|push|bump)|retagged`)
)

// forbiddenMessage is the refusal of a line as the API server wrote it:
// the message of a JSON Status with its quotes unescaped, else the line.
func forbiddenMessage(line string) string {
	s := strings.ReplaceAll(line, `\"`, `"`)
	if i := strings.Index(s, `"message":"`); i >= 0 && strings.Contains(s[i:], "is forbidden") {
		s = s[i+len(`"message":"`):]
		if j := strings.Index(s, `","reason"`); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

var forbiddenRE = regexp.MustCompile(`is forbidden: User \\?"([^"\\]+)\\?" cannot (\w+) resource \\?"([^"\\]+)\\?" in API group \\?"([^"\\]*)\\?"(?: in the namespace \\?"([^"\\]+)\\?"| at the cluster scope)?`)

// detectRBACDenied reads the API server's refusals the workloads log.
func detectRBACDenied(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	seen := map[string]int{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := t.Example
			m := forbiddenRE.FindStringSubmatch(line)
			if m == nil {
				if m = forbiddenRE.FindStringSubmatch(t.Last); m == nil {
					continue
				}
				line = t.Last
			}
			key := set.Subject + "\x00" + m[1] + m[2] + m[3]
			if j, ok := seen[key]; ok {
				out[j].addCount(t.Incident)
				out[j].Time = earliest(out[j].Time, orTime(t.FirstIncident, t.FirstSeen))
				continue
			}
			f := Finding{Kind: KindRBACDenied, Subject: set.Subject, Namespace: set.Namespace, Object: set.Origin + " " + set.Source, Source: set.Origin,
				Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevCritical, Weight: 0.9}
			user := m[1]
			f.setFact("user_full", user)
			if strings.HasPrefix(user, "system:serviceaccount:") {
				user = strings.Replace(strings.TrimPrefix(user, "system:serviceaccount:"), ":", "/", 1)
			}
			f.setFact("user", user)
			f.setFact("verb", m[2])
			f.setFact("resource", m[3])
			f.setFact("group", m[4])
			f.setFact("namespace", m[5])
			f.setFact("line", line)
			f.setFact("caller", set.Subject)
			f.addCount(t.Incident)
			f.Evidence = []string{templateEvidence(*set, t, line),
				fmt.Sprintf("the API server refuses %s to %s %s (RBAC: forbidden)", user, m[2], m[3])}
			f.Summary = fmt.Sprintf("%s is forbidden to %s %s (RBAC), from %s", user, m[2], m[3], hm(f.Time))
			seen[key] = len(out)
			out = append(out, f)
		}
	}
	return out
}
