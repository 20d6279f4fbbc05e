package analyst

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A token's audience not accepted: a service logs in to a secrets store
// or an identity provider with a JWT (a Kubernetes projected service
// account token, an OIDC token) whose aud claim is not the one the
// verifier expects, and the verifier rejects every login ("invalid
// audience (aud) claim", "audience claim does not match"). Vault's
// kubernetes auth names the role; the role is the client's workload,
// whose pods wait in Init while their login agent retries (403 permission
// denied). The audience the token carries (the pod's projected
// serviceAccountToken volume, the change that set it) and the one the
// role expects (vault read auth/kubernetes/role/NAME) are quoted; the
// change that set the new audience is the trigger.

// KindTokenAudience is a token rejected for its audience.
const KindTokenAudience Kind = "token_audience"

var (
	audienceRejectedRE = regexp.MustCompile(`(?i)invalid audience|audience claim does not match|aud claim|unexpected audience|audience (?:is )?not (?:valid|allowed|expected|accepted)|invalid "?aud"?|audience mismatch|IDX10214`)
	audienceRoleRE     = regexp.MustCompile(`\brole[=: ]+"?([\w.-]+)`)
	audienceValueRE    = regexp.MustCompile(`(?i)\baudience\s*[:=]?\s*"?([\w.:/-]+\.[\w.:/-]+)`)
	tokenChangeRE      = regexp.MustCompile(`(?i)audience|serviceaccounttoken|projected|service ?account|\btoken\b|\boidc\b|\bjwt\b`)
)

var tokenAudience = &mechanism{
	kind:   KindTokenAudience,
	class:  classCause,
	label:  "a token rejected for its audience",
	detect: detectTokenAudience,
	related: func(h *Hypothesis, f *Finding) bool {
		v := h.fact("verifier")
		return v != "" && (f.Subject == v || f.relates(v))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.relates(h.Subject) && matchLine(tokenChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s cannot log in to %s: the audience (aud claim) of its token is not the one %s expects", h.Subject, orWord(h.fact("verifier"), "its verifier"), orWord(h.fact("verifier"), "the verifier"))
		if r := h.fact("role"); r != "" {
			d += fmt.Sprintf(" for role %s", r)
		}
		var aud []string
		if a := h.fact("token_audience"); a != "" {
			aud = append(aud, "the token carries "+a)
		}
		if a := h.fact("expected_audience"); a != "" {
			aud = append(aud, "the role expects "+a)
		}
		if len(aud) > 0 {
			d += " (" + strings.Join(aud, ", ") + ")"
		}
		d += fmt.Sprintf(", so every login is rejected — %s", quote(ReadableLine(h.fact("line")), 200))
		if p := h.fact("stuck"); p != "" {
			d += fmt.Sprintf("; its pods wait in Init while the login agent retries (%s)", p)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make the audience agree: add %s to the audiences of %s's role %s, or set the projected token's audience of %s back to %s", orWord(h.fact("token_audience"), "the token's audience"), orWord(h.fact("verifier"), "the verifier"), orWord(h.fact("role"), ""), h.Subject, orWord(h.fact("expected_audience"), "the one the role expects"))
		r.rollback()
		r.low("Change a token's audience and the verifier's accepted audiences together, and test the login in a staging namespace first")
	},
}

// detectTokenAudience reads a verifier's log rejecting a token's audience.
func detectTokenAudience(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			line := t.Example
			if !matchLine(audienceRejectedRE, line) || t.Incident == 0 {
				continue
			}
			role := ""
			if m := findSubmatch(audienceRoleRE, line); m != nil {
				role = m[1]
			}
			subject, pods := audienceClient(ev, role, set.Subject)
			if seen[subject] {
				continue
			}
			seen[subject] = true
			f := Finding{Kind: KindTokenAudience, Subject: subject, Source: SrcLogs, Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevCritical, Weight: 0.9,
				Related:  []string{set.Subject},
				Summary:  fmt.Sprintf("%s rejects %s's token for its audience", set.Subject, subject),
				Evidence: []string{fmt.Sprintf("logs %s: %d lines rejecting the token's audience: %s", set.Subject, t.Incident, quote(line, 240))}}
			f.setFact("line", line)
			f.setFact("verifier", set.Subject)
			f.setFact("role", role)
			for _, p := range pods {
				if aud := projectedAudience(p); aud != "" {
					f.setFact("token_audience", aud)
					f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s: projected serviceAccountToken audience %s", p.Namespace, p.Name, aud))
				}
				if c := waitingInit(p); c != "" {
					f.setFact("stuck", fmt.Sprintf("pod %s, init container %s", p.Name, c))
					f.Evidence = append(f.Evidence, fmt.Sprintf("pod %s/%s is %s in Init: init container %s has not finished", p.Namespace, p.Name, p.Status.Phase, c))
				}
			}
			for _, c := range ev.Changes {
				if c.Service == subject && matchLine(audienceValueRE, c.Description) {
					f.setFact("token_audience", findSubmatch(audienceValueRE, c.Description)[1])
				}
			}
			for _, c := range ev.Commands {
				if !strings.Contains(c.Command, "auth/") || role != "" && !strings.Contains(c.Command, role) {
					continue
				}
				for _, l := range c.Lines {
					fs := strings.Fields(l)
					if len(fs) >= 2 && (fs[0] == "audience" || fs[0] == "bound_audiences") {
						f.setFact("expected_audience", strings.Trim(strings.Join(fs[1:], " "), "[]"))
						f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", c.Command, strings.Join(fs, " ")))
					}
				}
			}
			out = append(out, f)
		}
	}
	return out
}

// audienceClient names the workload a rejected login belongs to: the
// workload whose pods or service account carry the role's name, the
// role itself when it names a question's subject, else the verifier.
func audienceClient(ev *Gathered, role, verifier string) (string, []corev1.Pod) {
	if role == "" {
		return verifier, nil
	}
	var pods []corev1.Pod
	for _, p := range ev.K8s.Pods {
		if workloadOfName(p.Name) == role || p.Spec.ServiceAccountName == role {
			pods = append(pods, p)
		}
	}
	return role, pods
}

// projectedAudience is the audience of a pod's projected service account
// token, if it sets one.
func projectedAudience(p corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience != "" {
				return s.ServiceAccountToken.Audience
			}
		}
	}
	return ""
}

// waitingInit is the init container a pod still waits on, if any.
func waitingInit(p corev1.Pod) string {
	if p.Status.Phase != corev1.PodPending {
		return ""
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			return s.Name
		}
	}
	return ""
}
