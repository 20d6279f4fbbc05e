package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KindCreateRefused is a controller (ReplicaSet, Job, StatefulSet) whose
// pods the API server refuses to create for a reason other than quota.
const KindCreateRefused Kind = "create_refused"

// Pod creation refused: FailedCreate events whose message says why the API
// server rejected the pod: its ServiceAccount does not exist, an admission
// webhook or PodSecurity denied it, a LimitRange bounds it. (A quota is
// KindQuota.) The workload then has no pods at all, so nothing else shows.
var createRefused = &mechanism{
	kind:  KindCreateRefused,
	class: classCause,
	label: "pods cannot be created (rejected by the API server)",
	event: func(e *corev1.Event) (float64, bool) {
		if e.Reason != "FailedCreate" || strings.Contains(strings.ToLower(e.Message), "exceeded quota") {
			return 0, false
		}
		r, _ := classifyCreateRefusal(e.Message)
		return 0.85, r != ""
	},
	eventFacts: func(f *Finding, e *corev1.Event) {
		r, m := classifyCreateRefusal(e.Message)
		f.setFact("refusal", r)
		f.setFact("missing", m)
		// The denial that names the policy (a described object's) wins
		// over a one-line listing of the same event.
		if d, ok := readPolicyDenial(e.Message); ok && f.fact("policy") == "" && (d.Policy != "" || f.fact("denial") == "") {
			if f.Facts == nil {
				f.Facts = map[string]string{}
			}
			f.Facts["policy"], f.Facts["rule"], f.Facts["denial"] = d.Policy, d.Rule, d.words()
		}
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if h.fact("refusal") == "webhook" {
			// A policy switched to enforcing, or a new rule, denies pods
			// a template change or a scale-up only asks for: the policy's
			// own change comes first; a deploy of the workload fits too.
			return policyChangeFits(h.fact("policy"), c) || c.Kind == KindDeploy && c.Subject == h.Subject
		}
		return c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindInfraChange
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if d := h.fact("denial"); d != "" && h.fact("policy") != "" {
			return fmt.Sprintf("%s cannot create its pods: %s", h.Subject, d)
		}
		d := fmt.Sprintf("%s cannot create its pods: %s", h.Subject, createRefusalWords(h.fact("refusal"), h.fact("missing")))
		if m := h.fact("message"); m != "" {
			d += " (" + truncate(m, 220) + ")"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("refusal") {
		case "serviceaccount":
			r.high("Create the ServiceAccount %s in namespace %s (or point the pod template's serviceAccountName at an existing one)", orWord(strings.TrimPrefix(h.fact("missing"), "serviceaccount "), "it names"), orWord(h.top().Namespace, "the workload's"))
		case "webhook":
			if p := h.fact("policy"); p != "" {
				r.high("Make the pod template of %s satisfy policy %s (%s), or set the policy back to audit while the template is fixed", h.Subject, p, orWord(h.fact("rule"), "its rule"))
				break
			}
			r.high("Read the admission webhook's denial in the message and fix the pod template (or the webhook's policy) for %s", h.Subject)
		case "podsecurity":
			r.high("Make the pod template of %s meet the namespace's PodSecurity level (securityContext: runAsNonRoot, no privilege escalation, dropped capabilities, seccomp)", h.Subject)
		case "limitrange":
			r.high("Bring the resource requests and limits of %s within the namespace's LimitRange", h.Subject)
		default:
			r.high("Fix what the API server rejects in the pod template of %s: %s", h.Subject, truncate(h.fact("message"), 160))
		}
		r.rollback()
		r.med("Check rendered manifests against the target namespace (service accounts, policies, limits) before deploying")
		r.low("Alert on FailedCreate events and on Deployments with fewer available replicas than desired")
	},
}

var saMissingRE = regexp.MustCompile(`(?i)service ?account[s]? "?([\w.-]+)"? not found|error looking up service account [\w.-]+/([\w.-]+)`)

// classifyCreateRefusal says why a FailedCreate message refused a pod:
// "serviceaccount" (with the missing name), "webhook", "podsecurity",
// "limitrange", "forbidden", or "" when it is not a refusal.
func classifyCreateRefusal(msg string) (refusal, missing string) {
	l := strings.ToLower(msg)
	switch {
	case matchLine(saMissingRE, msg):
		m := findSubmatch(saMissingRE, msg)
		return "serviceaccount", "serviceaccount " + orWord(m[1], m[2])
	case strings.Contains(l, "admission webhook") && strings.Contains(l, "denied"):
		return "webhook", ""
	case strings.Contains(l, "violates podsecurity"):
		return "podsecurity", ""
	case strings.Contains(l, "limitrange") || strings.Contains(l, "maximum cpu usage") || strings.Contains(l, "maximum memory usage") || strings.Contains(l, "minimum cpu usage") || strings.Contains(l, "minimum memory usage"):
		return "limitrange", ""
	case strings.Contains(l, "forbidden"):
		return "forbidden", ""
	}
	return "", ""
}

func createRefusalWords(refusal, missing string) string {
	switch refusal {
	case "serviceaccount":
		return fmt.Sprintf("the %s its pod template names does not exist, so the API server rejects every pod", orWord(missing, "ServiceAccount"))
	case "webhook":
		return "an admission webhook denies the pods"
	case "podsecurity":
		return "the pods violate the namespace's PodSecurity level"
	case "limitrange":
		return "the pods' resources fall outside the namespace's LimitRange"
	}
	return "the API server forbids the pods"
}
