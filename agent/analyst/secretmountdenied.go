package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A secret volume that the Secrets Store CSI driver cannot mount because
// the cloud refuses the pod's identity the secret. The driver's provider
// fetches each object of the pod's SecretProviderClass with the pod's
// workload identity (an IRSA role on EKS, a Google service account through
// Workload Identity, an Azure managed identity or app, a Vault role) when
// the pod starts; one object the identity may not read fails the whole
// mount and the pod waits in ContainerCreating, with the kubelet's
// FailedMount quoting the provider's refusal: AWS "AccessDeniedException:
// User: arn:aws:sts::…:assumed-role/ROLE/… is not authorized to perform:
// secretsmanager:GetSecretValue on resource: NAME", Google "PermissionDenied
// desc = Permission 'secretmanager.versions.access' denied for resource
// 'projects/…/secrets/NAME/versions/latest'", Azure Key Vault "does not
// have secrets get permission on key vault" or "Caller is not authorized to
// perform action on resource … ForbiddenByRbac", Vault "Code: 403 …
// permission denied". The pods that run were started before and keep their
// mount; the usual origin is a change that added a secret to the class
// (or a new identity) without granting the identity that secret. The
// identity's missing permission is the root; the mount failure is how it
// shows.

// KindSecretMountDenied is a secret volume the cloud refuses to the pod's
// identity.
const KindSecretMountDenied Kind = "secret_mount_denied"

var (
	// secretStoreRE is a FailedMount from the Secrets Store CSI driver
	// (or a provider of it).
	secretStoreRE = regexp.MustCompile(`(?i)secrets[ -]store|SecretProviderClass|keyvault\.|key vault|secretmanager|secretsmanager|ssm:GetParameter|vault\.[\w.-]*:8200`)
	// secretDeniedRE is the provider's refusal for want of a permission.
	secretDeniedRE = regexp.MustCompile(`(?i)AccessDenied|is not authorized to perform|PermissionDenied|PERMISSION_DENIED|Permission '[\w.]+' denied|does not have (?:keys|secrets|certificates) \w+ permission|Caller is not authorized|ForbiddenByRbac|ForbiddenByPolicy|StatusCode=403|Code: 403|permission denied`)
	// The secret the provider failed to fetch, in each provider's words.
	secretObjectRE = regexp.MustCompile(`(?i)Failed fetching (?:secret|parameters?) ([^\s:]+)|failed to handle secret ([^\s:]+)|objectName:([^\s,]+)|couldn't read secret \\?"([^"\\]+)`)
	// The resource refused, where the cloud names it.
	secretResourceRE = regexp.MustCompile(`(?i)on resource:? '?([^\s'"\\]+)|denied for resource '([^']+)'|Resource: '([^']+)'|on key vault '([^';]+)|URL: \w+ (https?://\S+)`)
	// The action refused, where the cloud names it.
	secretActionRE = regexp.MustCompile(`(?i)not authorized to perform:? ([\w-]+:[\w*]+)|Permission '([\w.]+)' denied|Action: '([^']+)'|does not have ((?:keys|secrets|certificates) \w+) permission`)
	// The identity refused: an AWS principal, an Azure app, a Google
	// service account.
	secretPrincipalRE = regexp.MustCompile(`(?i)User: (arn:aws[\w-]*:(?:sts|iam)::\d+:[\w+=,.@/-]+)|application '(appid=[\w-]+)|Caller: (appid=[\w-]+)|\b([\w.-]+@[\w-]+\.iam\.gserviceaccount\.com)\b`)
	// The volume whose mount failed.
	secretVolumeRE = regexp.MustCompile(`for volume \\?"([^"\\]+)`)
	// identityAnnotationRE is a workload identity bound to a service
	// account, as kubectl prints its annotation or the value alone.
	identityAnnotationRE = regexp.MustCompile(`(arn:aws[\w-]*:iam::\d+:role/[\w+=,.@/-]+)|([\w.-]+@[\w-]+\.iam\.gserviceaccount\.com)`)
)

// secretMountDenied reports whether a FailedMount message is a secret
// store's provider refused the secret for want of a permission.
func secretMountDenied(msg string) bool {
	return matchLine(secretStoreRE, msg) && matchLine(secretDeniedRE, msg)
}

var secretMountDeniedM = &mechanism{
	kind:  KindSecretMountDenied,
	class: classCause,
	label: "secret volume denied to the pod's cloud identity",
	event: func(e *corev1.Event) (float64, bool) {
		return 0.9, e.Reason == "FailedMount" && secretMountDenied(e.Message)
	},
	eventCritical: true,
	eventFacts: func(f *Finding, e *corev1.Event) {
		secretMountFacts(f, e.Message)
	},
	detect: detectSecretMountGrants,
	// A change that names the refused secret (added it to the class), or
	// one to identities and their policies, triggers the refusal.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		for _, s := range []string{h.fact("secret"), secretShortName(h.fact("secret"))} {
			if len(s) >= 4 && strings.Contains(t, strings.ToLower(s)) {
				return true
			}
		}
		return matchLine(iamChangeRE, t) || strings.Contains(t, "secretproviderclass")
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		id := orWord(h.fact("identity_word"), "the pod's cloud identity")
		d := fmt.Sprintf("%s pods are stuck in ContainerCreating: the Secrets Store CSI driver cannot mount the volume %q because %s refuses %s the secret %s",
			h.Subject, orWord(h.fact("volume"), "secrets-store"), orWord(h.fact("provider"), "the cloud"), id, orWord(h.fact("secret"), "it asks for"))
		if a := h.fact("action"); a != "" {
			d += fmt.Sprintf(" (%s is not authorized to perform %s on %s)", orWord(h.fact("identity"), "the identity"), a, orWord(h.fact("resource"), h.fact("secret")))
		}
		d += fmt.Sprintf(": %s", orWord(h.fact("denial"), "access denied"))
		d += h.clause("; ", "granted")
		d += ". One object the identity may not read fails the whole mount; the pods started before keep theirs"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		id := orWord(h.fact("identity"), "the pod's identity (its service account's IAM role, Google service account or managed identity)")
		r.high("Grant %s %s on %s (add the secret to its policy or role assignment), or remove the secret from the SecretProviderClass until it is granted", id, orWord(h.fact("action"), "read access"), orWord(h.fact("resource"), orWord(h.fact("secret"), "the secret")))
		if t := h.Trigger; t != nil {
			r.high("The change that added the secret, %s (%s), needs the grant shipped with it, or roll it back", orWord(t.fact("revision"), t.Subject), truncate(t.fact("description"), 120))
		}
		r.med("Check that %s's service account is bound to the identity you granted (eks.amazonaws.com/role-arn, iam.gke.io/gcp-service-account, azure.workload.identity/client-id) and that the secret's name and region are right", h.Subject)
		r.low("Alert on pods stuck in ContainerCreating and on FailedMount events of secret volumes; test new secrets against the identity before rollout")
	},
}

// secretMountFacts reads what a provider's refusal says: the secret, the
// identity, the action, the resource and the provider.
func secretMountFacts(f *Finding, msg string) {
	if m := findSubmatch(secretVolumeRE, msg); m != nil {
		f.setFact("volume", m[1])
	}
	if s := firstGroup(findSubmatch(secretObjectRE, msg)); s != "" {
		f.setFact("secret", strings.Trim(s, `"'`))
	}
	if a := firstGroup(findSubmatch(secretActionRE, msg)); a != "" {
		f.setFact("action", a)
	}
	if r := firstGroup(findSubmatch(secretResourceRE, msg)); r != "" {
		f.setFact("resource", strings.TrimRight(r, ".,;"))
	}
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "secretsmanager") || strings.Contains(l, "ssm:") || strings.Contains(l, "arn:aws"):
		f.setFact("provider", "AWS IAM")
	case strings.Contains(l, "secretmanager") || strings.Contains(l, "projects/"):
		f.setFact("provider", "Google Cloud IAM")
	case strings.Contains(l, "keyvault") || strings.Contains(l, "key vault") || strings.Contains(l, "sts.windows.net"):
		f.setFact("provider", "Azure Key Vault")
	case strings.Contains(l, "vault"):
		f.setFact("provider", "Vault")
	}
	if p := firstGroup(findSubmatch(secretPrincipalRE, msg)); p != "" {
		secretIdentity(f, p)
	}
	d := "access denied"
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`(?i)AccessDeniedException|AccessDenied|ForbiddenByRbac|ForbiddenByPolicy|PermissionDenied|PERMISSION_DENIED|Code: 403[^*]*\* (?:1 error occurred:\s*\*\s*)?permission denied|permission denied`)} {
		if m := findString(re, msg); m != "" {
			d = strings.Join(strings.Fields(m), " ")
		}
	}
	if w := cloudWhy(msg); w != "" {
		d += ": " + w
	}
	f.setFact("denial", d)
	f.setFact("why", "the cloud refused the pod's identity the secret ("+d+")")
}

// secretIdentity names the identity refused, the role behind an AWS
// assumed-role session.
func secretIdentity(f *Finding, principal string) {
	f.setFact("principal", principal)
	switch {
	case strings.HasPrefix(principal, "arn:aws"):
		role := roleName(principal)
		f.setFact("identity", "IAM role "+role)
		f.setFact("identity_word", "the role "+role+" (the pod's IRSA or EKS Pod Identity role)")
	case strings.HasSuffix(principal, ".iam.gserviceaccount.com"):
		f.setFact("identity", "Google service account "+principal)
		f.setFact("identity_word", "the service account "+principal+" (the pod's Workload Identity)")
	default:
		f.setFact("identity", "Azure identity "+principal)
		f.setFact("identity_word", "the identity "+principal+" (the pod's workload or managed identity)")
	}
}

// secretShortName is the secret's own name in its path, ARN or Google
// resource name (projects/p/secrets/NAME/versions/latest).
func secretShortName(s string) string {
	if i := strings.Index(s, "/secrets/"); i >= 0 {
		s = s[i+len("/secrets/"):]
		if j := strings.IndexByte(s, '/'); j >= 0 {
			s = s[:j]
		}
		return s
	}
	if i := strings.LastIndexAny(s, "/:"); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	return s
}

// detectSecretMountGrants adds what the terminal shows of the refused
// identity: the service account annotation that binds it, and the
// policy the role has (what it grants instead of the refused secret).
func detectSecretMountGrants(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for i := range found {
		f := &found[i]
		if f.Kind != KindSecretMountDenied {
			continue
		}
		g := Finding{Kind: KindSecretMountDenied, Subject: f.Subject, Namespace: f.Namespace, Object: f.Object, Source: SrcKubernetes, Time: f.Time, Severity: SevWarning, Weight: 0.5}
		role := roleName(f.fact("principal"))
		for _, c := range ev.Commands {
			text := strings.Join(c.Lines, "\n")
			saCommand := strings.Contains(c.Command, "serviceaccount") || strings.Contains(c.Command, " sa ")
			if f.fact("principal") == "" && saCommand {
				if m := findSubmatch(identityAnnotationRE, text); m != nil {
					secretIdentity(&g, firstGroup(m))
					g.Evidence = append(g.Evidence, fmt.Sprintf("service account of %s is bound to %s (%s)", f.Subject, firstGroup(m), c.Command))
				}
			}
			if allowed, name := policyResources(text); len(allowed) > 0 && (role == "" || strings.Contains(c.Command, role) || strings.Contains(text, role)) {
				res := orWord(f.fact("secret"), f.fact("resource"))
				if res != "" && slices.ContainsFunc(allowed, func(a string) bool { return policyCovers(a, res) }) {
					continue
				}
				w := fmt.Sprintf("the role's policy %s grants it only on %s", orWord(name, ""), strings.Join(allowed, ", "))
				w = strings.ReplaceAll(w, "policy  grants", "policy grants")
				g.setFact("granted", w)
				g.Evidence = append(g.Evidence, fmt.Sprintf("%s: %s, not %s", c.Command, w, orWord(res, "the refused secret")))
			}
		}
		if len(g.Evidence) > 0 {
			g.Summary = fmt.Sprintf("%s: %s", f.Subject, g.Evidence[0])
			out = append(out, g)
		}
	}
	return out
}

// policyResources reads an IAM policy as the aws CLI prints it
// (get-role-policy's PolicyDocument, get-policy-version's Document): the
// resources its Allow statements grant, and its name.
func policyResources(text string) (allowed []string, name string) {
	var doc struct {
		PolicyName     string
		PolicyDocument *iamPolicy
		PolicyVersion  *struct{ Document *iamPolicy }
	}
	if i := strings.IndexByte(text, '{'); i < 0 || json.Unmarshal([]byte(text[i:]), &doc) != nil {
		return nil, ""
	}
	p := doc.PolicyDocument
	if p == nil && doc.PolicyVersion != nil {
		p = doc.PolicyVersion.Document
	}
	if p == nil {
		return nil, ""
	}
	var stmts []iamStatement
	if json.Unmarshal(p.Statement, &stmts) != nil {
		var one iamStatement
		if json.Unmarshal(p.Statement, &one) != nil {
			return nil, ""
		}
		stmts = []iamStatement{one}
	}
	for _, s := range stmts {
		if s.Effect != "Allow" {
			continue
		}
		allowed = append(allowed, stringList(s.Resource)...)
	}
	return allowed, doc.PolicyName
}

type iamPolicy struct {
	Statement json.RawMessage
}

type iamStatement struct {
	Effect   string
	Resource json.RawMessage
}

// stringList reads a JSON string or list of strings.
func stringList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// policyCovers reports whether a policy's resource pattern covers a
// secret (its name or ARN): a wildcard, or the name inside the pattern.
func policyCovers(pattern, secret string) bool {
	if pattern == "*" {
		return true
	}
	p := strings.TrimSuffix(strings.TrimSuffix(pattern, "*"), "-")
	if i := strings.Index(p, ":secret:"); i >= 0 {
		p = p[i+len(":secret:"):]
	}
	return p != "" && strings.HasPrefix(secret, p)
}
