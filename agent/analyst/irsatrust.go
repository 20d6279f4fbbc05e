package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A pod refused its IAM role by STS: with IRSA, the SDK exchanges the
// ServiceAccount's projected token for the role's credentials
// (AssumeRoleWithWebIdentity), and STS accepts the token only when the
// role's trust policy names the token's subject in its "…:sub" condition,
// system:serviceaccount:NAMESPACE:SERVICEACCOUNT. A workload moved to
// another namespace, or run under a renamed ServiceAccount, keeps its
// annotation (eks.amazonaws.com/role-arn) and its role, but its token now
// names another subject: every call is refused before it reaches the
// service ("Not authorized to perform sts:AssumeRoleWithWebIdentity",
// botocore's, the Go SDK's and the Java SDK's AccessDenied), whatever
// the role's permissions or the service's health. The fix is the trust
// policy's subject, not new permissions on the bucket.

// KindIRSATrust is a pod whose ServiceAccount token the IAM role's trust
// policy does not accept.
const KindIRSATrust Kind = "irsa_trust"

var (
	// webIdentityDeniedRE is STS refusing a web identity token for the
	// role (every AWS SDK quotes STS's message).
	webIdentityDeniedRE = regexp.MustCompile(`(?i)Not authorized to perform sts:AssumeRoleWithWebIdentity`)
	// saSubjectRE is a Kubernetes ServiceAccount as an OIDC token's
	// subject.
	saSubjectRE = regexp.MustCompile(`system:serviceaccount:([\w.*?-]+):([\w.*?-]+)`)
	// roleNameRE is the role a command reads, or an ARN's role.
	roleNameRE = regexp.MustCompile(`--role-name[ =]([\w+=,.@-]+)|:role/([\w+=,.@/-]+)`)
)

var irsaTrust = &mechanism{
	kind:   KindIRSATrust,
	class:  classCause,
	label:  "IAM role's trust policy does not accept the pod's ServiceAccount (IRSA)",
	detect: detectIRSATrust,
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindAuth, KindLogErrors, KindErrorRate, KindCloudDenied:
			return f.Subject == h.Subject || f.fact("caller") == h.Subject
		}
		return false
	},
	// The change that moved the workload or its ServiceAccount, or edited
	// the role's trust.
	fitsChange:     changeSays(regexp.MustCompile(`(?i)\bnamespace\b|service ?account|\birsa\b|role-arn|trust|\brole\b`)),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		role := orWord(h.fact("role"), "its IAM role")
		d := fmt.Sprintf("%s cannot assume %s: STS refuses AssumeRoleWithWebIdentity (Not authorized to perform sts:AssumeRoleWithWebIdentity) because the role's trust policy does not accept the token of the pod's ServiceAccount", h.Subject, role)
		sub := h.fact("subject")
		if sub != "" {
			d += fmt.Sprintf(", whose subject is %s", sub)
		}
		if t := h.fact("trusted"); t != "" {
			d += fmt.Sprintf("; the trust policy's sub condition names only %s", t)
			if h.fact("moved") != "" {
				d += fmt.Sprintf(" — the same ServiceAccount in another namespace: %s now runs in namespace %s and the trust policy did not follow it", h.Subject, h.fact("namespace"))
			}
		} else {
			d += " (its sub condition names another namespace or ServiceAccount)"
		}
		d += fmt.Sprintf("; every AWS call of %s fails before it reaches the service, which is not at fault", h.Subject)
		return d + h.quoteClause(" — ", "line", 200)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		role := orWord(h.fact("role"), "the IAM role")
		r.high("Update the trust policy of %s so that its sub condition accepts %s (aws iam update-assume-role-policy), then let the pods retry", role, orWord(h.fact("subject"), "system:serviceaccount:NAMESPACE:SERVICEACCOUNT"))
		r.med("Manage the role's trust policy with the workload's namespace and ServiceAccount (eksctl create iamserviceaccount, the Terraform module of the IRSA role) so that a move updates both")
		r.low("Alert on AccessDenied from AssumeRoleWithWebIdentity in CloudTrail and in the application's log")
	},
}

// detectIRSATrust finds a workload whose web identity STS refuses, with
// the subject its ServiceAccount token carries and the subjects the role's
// trust policy names, when a command printed it.
func detectIRSATrust(ev *Gathered, _ []Finding) []Finding {
	for x := range incidentMatches(ev, webIdentityDeniedRE) {
		w, ns := x.set.Subject, x.set.Namespace
		if w == "" {
			continue
		}
		first := orTime(x.t.FirstSeen, x.t.FirstIncident)
		// The pod's ServiceAccount: its spec, else a ServiceAccount of
		// the namespace named as the workload.
		sa := ""
		for _, p := range ev.K8s.Pods {
			if p.Spec.ServiceAccountName != "" && (ns == "" || p.Namespace == ns) && WorkloadOfPod(&p) == w {
				sa, ns = p.Spec.ServiceAccountName, p.Namespace
				break
			}
		}
		role := ""
		for _, s := range ev.K8s.ServiceAccounts {
			arn := s.Annotations["eks.amazonaws.com/role-arn"]
			if (ns == "" || s.Namespace == ns) && (s.Name == sa || sa == "" && s.Name == w) {
				sa, ns = s.Name, s.Namespace
				if m := findSubmatch(roleNameRE, arn); m != nil {
					role = firstGroup(m)
				}
			}
		}
		// The trust policy a command printed: the subjects of its sub
		// condition.
		var trusted []string
		for _, c := range ev.Commands {
			if !strings.Contains(strings.Join(c.Lines, "\n"), "AssumeRoleWithWebIdentity") {
				continue
			}
			for _, l := range c.Lines {
				if !strings.Contains(l, ":sub") {
					continue
				}
				for _, m := range findAllSubmatch(saSubjectRE, l, -1) {
					if !slices.Contains(trusted, m[0]) {
						trusted = append(trusted, m[0])
					}
				}
			}
			if role == "" {
				if m := findSubmatch(roleNameRE, c.Command); m != nil {
					role = firstGroup(m)
				}
			}
			for _, l := range c.Lines {
				if m := findSubmatch(roleNameRE, l); m != nil && role == "" && strings.Contains(l, "AWS_ROLE_ARN") {
					role = firstGroup(m)
				}
			}
		}
		subject := ""
		if ns != "" && sa != "" {
			subject = "system:serviceaccount:" + ns + ":" + sa
		}
		f := Finding{Kind: KindIRSATrust, Subject: w, Namespace: ns, Time: first, Severity: SevCritical, Weight: 0.88, Source: SrcLogs}
		f.setFact("line", x.line)
		f.setFact("role", role)
		f.setFact("subject", subject)
		f.setFact("namespace", ns)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d lines refused by STS from %s: %s", w, x.t.Incident, ts(first), quote(ReadableLine(x.line), 200)))
		if len(trusted) > 0 {
			// A trust policy that accepts the subject: not this cause.
			for _, t := range trusted {
				if subject != "" && subjectMatches(t, subject) {
					return nil
				}
			}
			f.setFact("trusted", strings.Join(trusted, ", "))
			f.Weight = 0.93
			f.Evidence = append(f.Evidence, fmt.Sprintf("the trust policy of %s accepts the subject %s only", orWord(role, "the role"), strings.Join(trusted, ", ")))
			for _, t := range trusted {
				if m := findSubmatch(saSubjectRE, t); m != nil && m[2] == sa && m[1] != ns {
					f.setFact("moved", m[1])
				}
			}
		}
		if subject != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s run as ServiceAccount %s/%s: their token's subject is %s", w, ns, sa, subject))
		}
		f.addCount(x.t.Incident)
		f.Summary = fmt.Sprintf("%s refused its IAM role by STS from %s (AssumeRoleWithWebIdentity not authorized)", w, hm(first))
		return []Finding{f}
	}
	return nil
}

// subjectMatches reports whether a trust policy's subject (StringLike
// wildcards * and ?) accepts sub.
func subjectMatches(pattern, sub string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	ok, _ := regexp.MatchString(re, sub)
	return ok
}
