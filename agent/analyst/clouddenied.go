package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A cloud API call refused by the caller's identity policy: the workload's
// credentials are valid (the provider knows who calls: an assumed role, a
// service account, a managed identity) but no policy grants the action it
// asks for on that resource. AWS says "User: ARN is not authorized to
// perform: kms:Decrypt on resource: ARN because no identity-based policy
// allows the kms:Decrypt action" (AccessDeniedException), Google Cloud
// "Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' denied on resource"
// (PERMISSION_DENIED), Azure "The client '...' does not have authorization
// to perform action '...' over scope '...'" (AuthorizationFailed). The
// usual origin is a change to the role's policies (a consolidation that
// dropped an action, a detached policy), which bites a process only when
// it next needs the action: a server that decrypts its keys at start
// (Vault's auto-unseal, an app reading a secret at boot) keeps running
// until it restarts, so the failure shows up at the next restart or node
// rotation, hours after the policy change. Rotating the credential does
// nothing: the policy must grant the action again.

// KindCloudDenied is a cloud API action denied by the caller's identity
// policy.
const KindCloudDenied Kind = "cloud_denied"

var (
	// cloudDeniedRE is a provider's refusal of an action for want of a
	// permission (not an unknown or expired credential).
	cloudDeniedRE = regexp.MustCompile(`(?i)is not authorized to perform:? \S+|AccessDeniedException|Permission '[\w.]+' denied|IAM_PERMISSION_DENIED|PERMISSION_DENIED: Permission|does not have authorization to perform action|\bAuthorizationFailed\b|does not have (?:keys|secrets|certificates) \w+ permission on key vault|\bForbiddenByPolicy\b|\bForbiddenByRbac\b|does not have [\w.]+ access to`)
	// The action refused, in each provider's words.
	cloudActionRE = regexp.MustCompile(`(?i)not authorized to perform:? ([\w-]+:[\w*]+)|Permission '([\w.]+)' denied|perform action '([^']+)'|does not have ((?:keys|secrets|certificates) \w+) permission|does not have ([\w.]+) access to|Action: '([^']+)'`)
	// The identity refused: an AWS principal ARN, a Google service
	// account, an Azure client.
	cloudPrincipalRE = regexp.MustCompile(`(?i)User: (arn:aws[\w-]*:(?:sts|iam)::\d+:[\w+=,.@/-]+)|\b([\w.-]+@[\w-]+\.iam\.gserviceaccount\.com)\b|The client '([^']+)'|Caller: (appid=[\w-]+)`)
	// The resource the action was refused on.
	cloudResourceRE = regexp.MustCompile(`(?i)on resource:? '?([^\s'"\\]+)|denied on resource '([^']+)'|over scope '([^']+)'|Resource: '([^']+)'`)
	// Why, when the provider says: no policy allows it, an explicit deny,
	// no role assignment (Azure RBAC's "Assignment: (not found)").
	cloudWhyRE = regexp.MustCompile(`(?i)because (no [\w-]+ policy allows the [\w:*-]+ action|an explicit deny in an? [\w -]+ policy)|(Assignment: \(not found\))`)
	// newIdentityRE is a change that moves a workload to another identity
	// (a new managed identity, service account or role, a move to
	// workload identity or IRSA): the new one holds none of the old
	// one's grants until they are given again.
	newIdentityRE = regexp.MustCompile(`(?i)\bnew (?:user[- ]assigned |managed |workload )?(?:identity|service account|iam role|role)\b|\b(?:to|onto) (?:azure )?workload identity|\b(?:to|onto) (?:irsa|eks pod identity)\b|\bmigrat\w* (?:from|to) [\w -]*identity`)
	// iamChangeRE is a change to identities and their policies.
	iamChangeRE = regexp.MustCompile(`(?i)\biam\b|\bpolic(?:y|ies)\b|\brole\b|permission|\bgrant|\brevoke|rbac|service account|managed identity|\bscp\b`)
)

var cloudDenied = &mechanism{
	kind:       KindCloudDenied,
	class:      classCause,
	label:      "cloud action denied by the caller's IAM policy",
	lines:      cloudDeniedRE,
	lineWeight: 0.85,
	detect:     detectCloudDenied,
	// Only a change to identities or policies triggers a denial.
	fitsChange:     changeSays(iamChangeRE),
	strictTriggers: true,
	// What the denial starves: the autoscaler that cannot read its metric
	// because its scaler is refused the queue's attributes, the queue
	// whose backlog then grows (the denied resource names it).
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindHPABlind, KindBacklog, KindSaturation:
		default:
			return false
		}
		res := deniedResourceName(orWord(h.fact("resource"), cloudResource(h.fact("line"))))
		if res == "" {
			return false
		}
		if strings.EqualFold(f.Subject, res) {
			return true
		}
		// The autoscaler's metric is named after the queue
		// ("s0-aws-sqs-queue-invoice-jobs").
		return f.Kind == KindHPABlind && len(res) >= 5 && slices.ContainsFunc(f.Evidence, func(e string) bool {
			return strings.Contains(strings.ToLower(e), strings.ToLower(res))
		})
	},
	describe: func(h *Hypothesis, sc Scope) string {
		line := h.fact("line")
		action := orWord(h.fact("action"), cloudAction(line))
		who := orWord(h.fact("principal"), cloudPrincipal(line))
		d := fmt.Sprintf("%s is refused by its cloud provider's IAM: %s is not allowed %s", orWord(h.fact("caller"), h.Subject), orWord(who, "its role"), orWord(action, "the action it calls"))
		if r := orWord(h.fact("resource"), cloudResource(line)); r != "" {
			d += " on " + r
		}
		if w := orWord(h.fact("why"), cloudWhy(line)); w != "" {
			d += " (" + w + ")"
		}
		d += " — access denied, a missing permission, not a bad credential"
		d += describeNodeIdentity(h)
		if c := h.fact("iam_change"); c != "" && matchLine(newIdentityRE, c) {
			d += fmt.Sprintf("; the calls come from the new identity the change at %s moved it to, which was never granted what the old one held: %s", h.fact("iam_change_at"), quote(c, 200))
		} else if c != "" {
			d += fmt.Sprintf("; the permission went with an IAM change at %s: %s", h.fact("iam_change_at"), quote(c, 200))
			if h.fact("restart_bound") != "" {
				d += ", which bit only when the pods restarted and needed the action again"
			}
		}
		d += ": " + quote(ReadableLine(line), 220)
		for _, f := range h.Support {
			if f.Kind == KindHPABlind {
				d += fmt.Sprintf("; so the autoscaler %s cannot read its external metric and does not scale %s out", orWord(f.fact("hpa"), f.Subject), orWord(sc.Service, "the workload"))
				break
			}
		}
		for _, f := range h.Support {
			if f.Kind == KindBacklog {
				d += fmt.Sprintf("; the backlog of %s grows meanwhile", f.Subject)
				break
			}
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		action := orWord(h.fact("action"), cloudAction(h.fact("line")))
		who := orWord(h.fact("principal"), cloudPrincipal(h.fact("line")))
		if recommendNodeIdentity(h, r) {
			// The workload's own identity, not a wider node role.
		} else if c := h.fact("iam_change"); c != "" && matchLine(newIdentityRE, c) {
			r.high("Grant %s to the new identity of %s (%s) on %s, as the old identity's role or role assignment did, then restart the failing pods; or roll back %s until it is granted", orWord(action, "the denied action"), h.Subject, orWord(who, "its principal"), orWord(deniedResourceName(h.fact("resource")), "the resource"), quote(c, 80))
		} else if c != "" {
			r.high("Grant %s back to %s (restore the statement the IAM change %s dropped), then restart the failing pods of %s", orWord(action, "the denied action"), orWord(who, "the role"), quote(c, 80), h.Subject)
		} else {
			r.high("Grant %s to %s on %s in its IAM policy (or the key/resource policy), then retry or restart %s", orWord(action, "the denied action"), orWord(who, "the caller's role"), orWord(h.fact("resource"), "the resource"), h.Subject)
		}
		r.med("Check the change with the provider's policy simulator (aws iam simulate-principal-policy, gcloud policy-troubleshoot iam) before applying IAM changes to roles in use")
		r.low("Alert on AccessDenied/PERMISSION_DENIED in the logs of %s, and on the actions its start needs", h.Subject)
	},
}

func firstGroup(m []string) string {
	if m == nil {
		return ""
	}
	for _, g := range m[1:] {
		if g != "" {
			return g
		}
	}
	return ""
}

func cloudAction(line string) string    { return firstGroup(findSubmatch(cloudActionRE, line)) }
func cloudPrincipal(line string) string { return firstGroup(findSubmatch(cloudPrincipalRE, line)) }
func cloudResource(line string) string {
	return strings.TrimRight(firstGroup(findSubmatch(cloudResourceRE, line)), ".,;")
}
func cloudWhy(line string) string {
	w := firstGroup(findSubmatch(cloudWhyRE, line))
	if strings.HasPrefix(strings.ToLower(w), "assignment:") {
		return "no role assignment grants the caller the action on this scope"
	}
	return w
}

// roleName is the role of an AWS principal (assumed-role/NAME/session,
// role/NAME), or the principal itself.
func roleName(principal string) string {
	if _, rest, ok := strings.Cut(principal, "assumed-role/"); ok {
		name, _, _ := strings.Cut(rest, "/")
		return name
	}
	if _, rest, ok := strings.Cut(principal, ":role/"); ok {
		return rest
	}
	if name, _, ok := strings.Cut(principal, "@"); ok {
		return name
	}
	return principal
}

// detectCloudDenied reads the denial of each caller whose logs show one:
// the action, the principal, the resource, and the change to identities
// or policies (this month's) that names the principal's role or the
// caller, the likely origin even when it lies before the window, as a
// denial at start waits for the next restart.
func detectCloudDenied(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for set, t := range incidentTemplates(ev) {
		line := t.Example
		if !matchLine(cloudDeniedRE, line) || cloudAction(line) == "" {
			if line = t.Last; !matchLine(cloudDeniedRE, line) || cloudAction(line) == "" {
				continue
			}
		}
		if matchLine(cloudTrailEventRE, line) || seen[set.Subject] {
			continue
		}
		seen[set.Subject] = true
		f := Finding{Kind: KindCloudDenied, Subject: set.Subject, Namespace: set.Namespace, Source: set.Origin, Object: set.Origin + " " + set.Source,
			Time: orTime(t.FirstIncident, t.FirstSeen), Severity: SevCritical, Weight: 0.9}
		action, who, res := cloudAction(line), cloudPrincipal(line), cloudResource(line)
		f.setFact("line", line)
		f.setFact("caller", set.Subject)
		f.setFact("action", action)
		f.setFact("principal", who)
		f.setFact("resource", res)
		f.setFact("why", cloudWhy(line))
		// A controller acting for the service (its scaler, its
		// operator) names it in the denied call's line.
		if svc := ev.Scope.Service; svc != "" && !strings.EqualFold(svc, set.Subject) && mentionsName(line, svc) {
			f.Related = append(f.Related, svc)
		}
		f.Summary = fmt.Sprintf("%s: %s denied to %s", set.Subject, action, orWord(who, "its role"))
		f.Evidence = []string{fmt.Sprintf("%s logs %s denied (%d lines from %s): %s", set.Subject, action, t.Incident, hm(f.Time), quote(ReadableLine(line), 240))}
		// A node's instance role calling: the pod has no identity of
		// its own (workloadidentity.go).
		nodeIdentityWhy(ev, &f)
		if c, ok := iamChangeFor(ev, set.Subject, who, f.Time); ok {
			at := c.Timestamp.UTC().Format("2006-01-02 15:04")
			f.setFact("iam_change", c.Description)
			f.setFact("iam_change_at", at+" UTC")
			f.Evidence = append(f.Evidence, fmt.Sprintf("IAM change at %s UTC, %s before the first denial: %s", at, f.Time.Sub(c.Timestamp).Round(time.Minute), quote(c.Description, 200)))
			if restartedAfter(ev, set.Subject, c.Timestamp) {
				f.setFact("restart_bound", "true")
			}
		}
		out = append(out, f)
	}
	return out
}

// iamChangeFor finds the latest change to identities or policies before
// the first denial that names the denied role, the caller or IAM itself.
func iamChangeFor(ev *Gathered, caller, principal string, first time.Time) (c struct {
	Timestamp   time.Time
	Description string
}, ok bool) {
	role := strings.ToLower(roleName(principal))
	for _, ch := range append(slices.Clone(ev.Earlier), ev.Changes...) {
		d := strings.ToLower(ch.Description + " " + ch.Service)
		if !matchLine(iamChangeRE, d) || ch.Timestamp.After(first) {
			continue
		}
		if !strings.Contains(d, strings.ToLower(caller)) && (role == "" || !strings.Contains(d, role)) {
			continue
		}
		if !ok || ch.Timestamp.After(c.Timestamp) {
			c.Timestamp, c.Description, ok = ch.Timestamp, ch.Description, true
		}
	}
	return c, ok
}

// restartedAfter reports whether the caller's pods started after t: a
// permission lost at t bites a process that needs it at start only then.
func restartedAfter(ev *Gathered, caller string, t time.Time) bool {
	for i := range ev.K8s.Pods {
		p := &ev.K8s.Pods[i]
		if !strings.EqualFold(WorkloadOfPod(p), caller) {
			continue
		}
		if p.Status.StartTime != nil && p.Status.StartTime.After(t) {
			return true
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && cs.State.Running.StartedAt.After(t) {
				return true
			}
		}
	}
	return false
}

// deniedResourceName is the short name of a denied resource: the last
// segment of an ARN or a path ("arn:aws:sqs:eu-west-1:1234:invoice-jobs"
// is invoice-jobs; "projects/p/topics/orders" is orders).
func deniedResourceName(res string) string {
	res = strings.TrimRight(res, "/")
	if i := strings.LastIndexAny(res, ":/"); i >= 0 {
		res = res[i+1:]
	}
	if res == "*" || len(res) < 3 {
		return ""
	}
	return res
}
