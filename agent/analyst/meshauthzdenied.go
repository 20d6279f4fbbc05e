package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A caller refused by the service mesh's authorization at the server's
// sidecar: Envoy's RBAC filter (Istio's AuthorizationPolicy, Consul's
// intentions) answers 403 with the body "RBAC: access denied" and logs
// rbac_access_denied_matched_policy[…] as the response details when no
// ALLOW rule matches the caller's identity (or a DENY rule does). Under
// mutual TLS the identity is the caller's ServiceAccount, its principal
// cluster.local/ns/NAMESPACE/sa/SERVICEACCOUNT (spiffe://…): a release
// that runs the caller under a new ServiceAccount, or moves it to another
// namespace, changes its principal, and the server's policy that lists
// the old one refuses every call. The server's application never sees the
// requests (its own release is not at fault); no credential of the
// caller's is revoked. The fix is the policy's principals (or the caller's
// ServiceAccount back).

// KindMeshAuthzDenied is a caller refused by the mesh authorization
// policy of the server it calls.
const KindMeshAuthzDenied Kind = "mesh_authz_denied"

var (
	// meshRBACDeniedRE is Envoy's RBAC refusal: the local reply's body
	// the caller sees, or the response details in the server sidecar's
	// access log.
	meshRBACDeniedRE = regexp.MustCompile(`RBAC: access denied|rbac_access_denied_matched_policy\[`)
	// sidecarRBACRE is the server side's access-log form.
	sidecarRBACRE = regexp.MustCompile(`rbac_access_denied_matched_policy\[([^\s"',]*)\]`)
	// meshPrincipalRE is a mesh principal: a ServiceAccount's SPIFFE
	// identity.
	meshPrincipalRE = regexp.MustCompile(`(?:spiffe://)?[\w.-]+/ns/([\w.-]+)/sa/([\w.-]+)`)
)

var meshAuthzDenied = &mechanism{
	kind:   KindMeshAuthzDenied,
	class:  classCause,
	label:  "caller refused by the mesh's authorization policy (RBAC: access denied)",
	detect: detectMeshAuthzDenied,
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindAuth, KindLogErrors, KindErrorRate:
			return strings.EqualFold(f.Subject, h.Subject) || f.fact("caller") == h.Subject ||
				strings.EqualFold(f.Subject, h.fact("server")) && matchLine(meshRBACDeniedRE, f.fact("line"))
		}
		return false
	},
	refines: []Kind{KindAuth},
	// The change that gave the caller a new identity (a ServiceAccount,
	// a namespace) or edited the policy.
	fitsChange:     changeSays(regexp.MustCompile(`(?i)service ?account|\bnamespace\b|authorizationpolicy|authorization ?polic|principal|\bintention|peerauthentication|\bmtls\b`)),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		server := orWord(h.fact("server"), "the service it calls")
		d := fmt.Sprintf("%s is refused by %s's service-mesh authorization: %s's sidecar (Envoy's RBAC filter) answers 403 RBAC: access denied", h.Subject, server, server)
		deny := false
		switch p := h.fact("matched_policy"); p {
		case "":
		case "none":
			d += fmt.Sprintf(" (rbac_access_denied_matched_policy[%s]: no ALLOW rule matched)", p)
		default:
			deny = true
			d += fmt.Sprintf(" (rbac_access_denied_matched_policy[%s]: a DENY rule matched)", p)
		}
		if deny {
			d += fmt.Sprintf(" because a DENY rule of its authorization policy (Istio AuthorizationPolicy%s) matches the caller's identity, the principal of the ServiceAccount %s runs as",
				map[bool]string{true: " " + h.fact("policies"), false: ""}[h.fact("policies") != ""], h.Subject)
		} else {
			d += fmt.Sprintf(" because no rule of its authorization policy (Istio AuthorizationPolicy%s) allows the caller's identity, the principal of the ServiceAccount %s runs as",
				map[bool]string{true: " " + h.fact("policies"), false: ""}[h.fact("policies") != ""], h.Subject)
		}
		if p := h.fact("principal"); p != "" {
			d += fmt.Sprintf(" (%s)", p)
		}
		if sa := h.fact("service_account"); sa != "" && !deny {
			d += fmt.Sprintf("; %s runs under the ServiceAccount %s (a new or renamed ServiceAccount, or another namespace, is a new principal the policy does not list)", h.Subject, sa)
		}
		d += fmt.Sprintf("; the requests never reach %s's application, and no credential of %s is revoked", server, h.Subject)
		return d + h.quoteClause(" — ", "line", 200)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		server := orWord(h.fact("server"), "the server")
		who := orWord(h.fact("principal"), "cluster.local/ns/NAMESPACE/sa/SERVICEACCOUNT of "+h.Subject)
		r.high("Add %s to the principals of %s's AuthorizationPolicy%s (or run %s under the ServiceAccount the policy allows again)", who, server, map[bool]string{true: " " + h.fact("policies"), false: ""}[h.fact("policies") != ""], h.Subject)
		r.med("Change a workload's ServiceAccount or namespace together with the authorization policies of the services it calls; check with istioctl x authz check on the server's pod")
		r.low("Alert on 403 responses with response flag rbac_access_denied in the mesh's access logs and metrics (response_flags)")
	},
}

// detectMeshAuthzDenied finds a caller whose requests the mesh's RBAC
// filter refuses: its own log quoting "RBAC: access denied", with the
// server read from the server sidecar's access log, the caller's
// ServiceAccount from its pods, and the server namespace's authorization
// policies.
func detectMeshAuthzDenied(ev *Gathered, found []Finding) []Finding {
	var callers []Finding
	server, serverNS, matched := "", "", ""
	for _, f := range found {
		if f.Kind != KindAuth && f.Kind != KindLogErrors {
			continue
		}
		line := f.fact("line")
		if m := findSubmatch(sidecarRBACRE, line); m != nil {
			server, serverNS, matched = f.Subject, f.Namespace, m[1]
			continue
		}
		if matchLine(meshRBACDeniedRE, line) {
			callers = append(callers, f)
		}
	}
	var out []Finding
	for _, c := range callers {
		if slices.ContainsFunc(out, func(o Finding) bool { return o.Subject == c.Subject }) {
			continue
		}
		g := c
		g.Facts = nil
		g.Kind, g.Weight, g.Severity = KindMeshAuthzDenied, max(c.Weight, 0.9), SevCritical
		g.Evidence = append([]string(nil), c.Evidence...)
		g.setFact("line", c.fact("line"))
		g.setFact("caller", c.Subject)
		if server != "" && server != c.Subject {
			g.setFact("server", server)
			g.setFact("matched_policy", matched)
			g.Related = append(append([]string(nil), c.Related...), server)
			g.Evidence = append(g.Evidence, fmt.Sprintf("%s's sidecar logs the refusals: rbac_access_denied_matched_policy[%s]", server, matched))
		}
		ns := c.Namespace
		for _, p := range ev.K8s.Pods {
			if WorkloadOfPod(&p) == c.Subject && (ns == "" || p.Namespace == ns) && p.Spec.ServiceAccountName != "" {
				ns = p.Namespace
				g.setFact("service_account", p.Spec.ServiceAccountName)
				g.setFact("principal", "cluster.local/ns/"+p.Namespace+"/sa/"+p.Spec.ServiceAccountName)
				break
			}
		}
		// A principal the evidence shows for the caller (its workload
		// certificate's SPIFFE URI), when its pods were not read.
		if g.fact("principal") == "" {
			for _, cmd := range ev.Commands {
				if !strings.Contains(cmd.Command, c.Subject) {
					continue
				}
				for _, l := range cmd.Lines {
					if m := findSubmatch(meshPrincipalRE, l); m != nil && strings.Contains(l, "spiffe://") {
						g.setFact("principal", strings.TrimSpace(m[0][strings.Index(m[0], "spiffe://"):]))
						g.setFact("service_account", m[2])
					}
				}
			}
		}
		var pols []string
		for _, o := range ev.K8s.Custom {
			if o.Kind == "AuthorizationPolicy" && (serverNS == "" || o.Namespace == serverNS) {
				pols = append(pols, o.Namespace+"/"+o.Name)
			}
		}
		g.setFact("policies", strings.Join(pols, ", "))
		g.Summary = fmt.Sprintf("%s refused by %s's mesh authorization (403 RBAC: access denied)", c.Subject, orWord(g.fact("server"), "its server"))
		out = append(out, g)
	}
	return out
}
