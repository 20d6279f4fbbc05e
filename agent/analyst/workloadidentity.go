package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// A workload refused by its cloud provider as the node it runs on: its pod
// was given no cloud identity of its own (no EKS Pod Identity association
// for its service account, no IRSA eks.amazonaws.com/role-arn annotation),
// so the SDK's default credential chain fell through to the instance
// metadata and calls as the node's instance role, which is not meant to
// hold the workload's permissions. AWS names such a caller
// "assumed-role/NODE-ROLE/i-0123456789abcdef0": the session of an
// instance profile is the instance id. Granting the node role the action
// would give it to every pod on the node; the fix is the workload's own
// identity (a cluster built anew, a namespace or service account renamed,
// loses it). Read by the cloud denial's mechanism (clouddenied.go).

var (
	// nodeSessionRE is an AWS principal whose session is an EC2
	// instance: an instance profile's role.
	nodeSessionRE = regexp.MustCompile(`assumed-role/([\w+=,.@-]+)/(i-[0-9a-f]{8,17})\b`)
	// noAssociationsRE is an empty answer of list-pod-identity-associations
	// (JSON or text).
	noAssociationsRE = regexp.MustCompile(`"associations"\s*:\s*\[\s*\]`)
	// podIdentityEnvRE is the environment a credential webhook or agent
	// injects into a pod that has its own identity.
	podIdentityEnvRE = regexp.MustCompile(`\b(AWS_CONTAINER_CREDENTIALS_FULL_URI|AWS_WEB_IDENTITY_TOKEN_FILE|AWS_ROLE_ARN)\b`)
)

// nodeIdentityWhy marks a cloud denial whose caller is a node's instance
// role: the workload has no identity of its own. It reads the empty Pod
// Identity associations and the injected environment the pod lacks.
func nodeIdentityWhy(ev *Gathered, f *Finding) {
	m := findSubmatch(nodeSessionRE, f.fact("principal"))
	if m == nil {
		return
	}
	f.setFact("node_role", m[1])
	f.setFact("node_instance", m[2])
	f.Evidence = append(f.Evidence, fmt.Sprintf("the caller is the instance role %s of node instance %s, not a role of %s's own", m[1], m[2], f.Subject))
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "pod-identity-association") {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		if matchLine(noAssociationsRE, text) || strings.TrimSpace(text) == "" {
			// The empty answer of the cluster the pods run in, not of
			// another cluster compared.
			f.setFact("no_association", c.Command)
			f.Evidence = append(f.Evidence, fmt.Sprintf("no EKS Pod Identity association: %s returned none", quote(c.Command, 120)))
			break
		}
	}
	// Another place where the same workload has its own identity: a pod
	// whose environment carries what the credential agent injects.
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if v := findString(podIdentityEnvRE, l); v != "" && strings.Contains(c.Command, "env") {
				f.setFact("identity_env", v)
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s is injected where the workload has its own identity (%s)", v, quote(c.Command, 120)))
				break
			}
		}
		if f.fact("identity_env") != "" {
			break
		}
	}
}

// describeNodeIdentity is the clause of a denial to a node's instance
// role.
func describeNodeIdentity(h *Hypothesis) string {
	if h.fact("node_role") == "" {
		return ""
	}
	d := fmt.Sprintf("; the caller is the node's instance role %s (its session is the instance %s), not an identity of %s's own: its pods get no cloud identity (no EKS Pod Identity association, nor an IRSA eks.amazonaws.com/role-arn annotation, for their service account), so the SDK's default chain fell back to the node's instance profile",
		h.fact("node_role"), h.fact("node_instance"), h.Subject)
	if h.fact("no_association") != "" {
		d += "; the cluster's Pod Identity associations for the namespace are empty"
	}
	if v := h.fact("identity_env"); v != "" {
		d += fmt.Sprintf(" (where it works, its pods carry %s, injected for their own identity)", v)
	}
	return d
}

// recommendNodeIdentity recommends the workload's own identity rather
// than more permissions for the node.
func recommendNodeIdentity(h *Hypothesis, r *recommender) bool {
	if h.fact("node_role") == "" {
		return false
	}
	r.high("Give %s its own identity in this cluster: create the EKS Pod Identity association for its namespace and service account with the role it uses elsewhere (aws eks create-pod-identity-association), or annotate the service account with eks.amazonaws.com/role-arn for IRSA, then restart its pods; do not grant %s to the node role %s, which every pod on the node would get", h.Subject, orWord(h.fact("action"), "the action"), h.fact("node_role"))
	return true
}
