package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A workload whose cloud SDK found no credentials at all: not refused
// (that is a denial, clouddenied.go), but with nothing to sign its calls
// with — botocore's NoCredentialsError "Unable to locate credentials",
// the Java SDKs' "Unable to load (AWS) credentials from any (of the)
// provider(s) in the chain", the Go SDKs' NoCredentialProviders or "no
// EC2 IMDS role found", the JavaScript SDK's CredentialsProviderError. On
// Kubernetes a pod gets its cloud identity from its ServiceAccount: IRSA's
// eks.amazonaws.com/role-arn annotation makes the webhook inject a web
// identity token and AWS_ROLE_ARN; without it (a ServiceAccount recreated
// by a chart that does not set it, a renamed one) the SDK's chain finds
// nothing, as the node's metadata service is closed to pods. The chain
// goes one hop further, from the error to the ServiceAccount the pods run
// as and what it lacks, which the other ServiceAccounts of the namespace
// carry. Read by the failed Job's mechanism (jobfailed.go).

// kindNoCredentialsHandled marks, in a failed Job's recommendations, a
// run whose missing credentials were already recommended on.
const kindNoCredentialsHandled Kind = "no_credentials_handled"

var (
	// noCredentialsRE is a cloud SDK that found no credentials.
	noCredentialsRE = regexp.MustCompile(`(?i)NoCredentialsError|Unable to locate credentials|Unable to load (?:AWS )?credentials from any (?:of the )?providers? in the chain|NoCredentialProviders: no valid providers in chain|no EC2 IMDS role found|failed to refresh cached credentials|CredentialsProviderError: Could not load credentials from any providers|Failed to resolve AWS credentials|Unable to get IAM security credentials from EC2 Instance Metadata`)
	// identityAnnotations are the ServiceAccount annotations that give a
	// pod its cloud identity (IRSA, GKE and Azure workload identity).
	identityAnnotations = []string{"eks.amazonaws.com/role-arn", "iam.gke.io/gcp-service-account", "azure.workload.identity/client-id"}
)

// noCredentialsWhy follows a run's "no credentials" error to the
// ServiceAccount its pods run as: when the ServiceAccount was read and
// carries no identity annotation, that is why. It sets no_creds_sa (the
// ServiceAccount), no_creds_annotation (what it lacks), no_creds_peers
// (ServiceAccounts of the namespace that carry it) and no_creds_made
// (when and by what it was created, when its labels say).
func noCredentialsWhy(ev *Gathered, f *Finding) {
	if !matchLine(noCredentialsRE, f.fact("line")) {
		return
	}
	ns := f.Namespace
	saName := ""
	for i := range ev.K8s.Pods {
		if p := &ev.K8s.Pods[i]; p.Name == f.fact("pod") && (ns == "" || p.Namespace == ns) {
			saName, ns = p.Spec.ServiceAccountName, p.Namespace
			break
		}
	}
	if saName == "" {
		for i := range ev.K8s.Jobs {
			if j := &ev.K8s.Jobs[i]; j.Name == f.fact("job") && (ns == "" || j.Namespace == ns) {
				saName, ns = j.Spec.Template.Spec.ServiceAccountName, j.Namespace
				break
			}
		}
	}
	if saName == "" || ns == "" {
		return
	}
	sa := serviceAccountNamed(ev.K8s.ServiceAccounts, ns, saName)
	if sa == nil || identityOf(sa) != "" {
		return
	}
	// What the namespace's other ServiceAccounts carry says which identity
	// the cluster gives its pods; without any, nothing says one is used.
	ann := ""
	var peers []string
	for i := range ev.K8s.ServiceAccounts {
		o := &ev.K8s.ServiceAccounts[i]
		if o.Namespace != ns || o.Name == saName {
			continue
		}
		if a := identityOf(o); a != "" {
			ann = orWord(ann, a)
			if len(peers) < 3 {
				peers = append(peers, o.Name)
			}
		}
	}
	if ann == "" {
		return
	}
	slices.Sort(peers)
	f.setFact("no_creds_sa", saName)
	f.setFact("no_creds_annotation", ann)
	f.setFact("no_creds_peers", strings.Join(peers, ", "))
	made := ""
	// A ServiceAccount made in the last two weeks was (re)created: by
	// what, when its labels say.
	if t := sa.CreationTimestamp; !t.IsZero() && !ev.Window.End.IsZero() && t.After(ev.Window.End.Add(-14*24*time.Hour)) && !t.After(ev.Window.End) {
		made = "it was created at " + ts(t.Time)
		if c := sa.Labels["helm.sh/chart"]; c != "" {
			made += " by the chart " + c
		}
		f.setFact("no_creds_made", made)
	}
	e := fmt.Sprintf("the pods run as ServiceAccount %s/%s, which carries no %s annotation; %s in the namespace carry it", ns, saName, ann, strings.Join(peers, ", "))
	if made != "" {
		e += "; " + made
	}
	f.Evidence = append(f.Evidence, e)
}

// identityOf is the identity annotation a ServiceAccount carries, or "".
func identityOf(sa *corev1.ServiceAccount) string {
	for _, a := range identityAnnotations {
		if strings.TrimSpace(sa.Annotations[a]) != "" {
			return a
		}
	}
	return ""
}

// describeNoCredentials is the clause of a run whose SDK found no
// credentials because its ServiceAccount has no cloud identity.
func describeNoCredentials(h *Hypothesis) string {
	sa := h.fact("no_creds_sa")
	if sa == "" {
		return ""
	}
	d := fmt.Sprintf("; the SDK found no credentials because the pods' ServiceAccount %s carries no %s annotation (%s), so no cloud identity is injected into them, while %s in the namespace carry it",
		sa, h.fact("no_creds_annotation"), identityWords(h.fact("no_creds_annotation")), h.fact("no_creds_peers"))
	d += h.clause("; ", "no_creds_made")
	return d
}

// identityWords names the workload identity an annotation gives.
func identityWords(ann string) string {
	switch ann {
	case "eks.amazonaws.com/role-arn":
		return "IRSA, the IAM role for the service account"
	case "iam.gke.io/gcp-service-account":
		return "GKE Workload Identity"
	}
	return "Azure Workload Identity"
}

// recommendNoCredentials recommends giving the ServiceAccount its
// identity back.
func recommendNoCredentials(h *Hypothesis, r *recommender, what string) bool {
	sa := h.fact("no_creds_sa")
	if sa == "" {
		return false
	}
	r.high("Set the %s annotation on the ServiceAccount %s again (in the chart's values, serviceAccount.annotations, so the next release keeps it) with the role it used before, then re-run %s", h.fact("no_creds_annotation"), sa, what)
	return true
}
