package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A GKE workload without its Google identity: Workload Identity maps a
// Kubernetes service account (KSA) to a Google service account (GSA) only
// when the KSA carries the annotation iam.gke.io/gcp-service-account and
// the GSA grants roles/iam.workloadIdentityUser to the member
// PROJECT.svc.id.goog[NAMESPACE/KSA]. A workload moved to another
// namespace (or a KSA recreated, renamed) loses both: its pods run and
// every Google API call is refused ("403 User not authorized to perform
// this action", PERMISSION_DENIED, "Permission 'pubsub.subscriptions.consume'
// denied"), as the pod's identity is the node's or the bare KSA's. The
// GCP counterpart of workloadidentity.go; the fix is the annotation and
// the binding for the new namespace, not new roles on the topic.

// KindGKEWorkloadIdentity is a workload refused by Google APIs because its
// Kubernetes service account is not mapped to its Google service account.
const KindGKEWorkloadIdentity Kind = "gke_workload_identity"

var gkeWorkloadIdentity = &mechanism{
	kind:   KindGKEWorkloadIdentity,
	class:  classCause,
	label:  "GKE Workload Identity missing for the workload's service account",
	detect: detectGKEWorkloadIdentity,
	related: func(h *Hypothesis, f *Finding) bool {
		return (f.Kind == KindAuth || f.Kind == KindLogErrors || f.Kind == KindErrorRate) &&
			(f.Subject == h.Subject || f.fact("caller") == h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s's Kubernetes service account %s has no iam.gke.io/gcp-service-account annotation, so GKE Workload Identity does not map it to a Google service account: every Google API call of %s is refused with 403 permission denied (%s)",
			h.Subject, h.fact("ksa"), h.Subject, quote(ReadableLine(h.fact("line")), 180))
		if b := h.fact("bound_to"); b != "" {
			d += fmt.Sprintf("; the workloadIdentityUser binding of %s names %s, not %s", orWord(h.fact("gsa"), "the Google service account"), b, h.fact("ksa"))
		}
		if h.fact("moved") != "" {
			d += "; the workload moved to another namespace and the identity mapping did not follow it"
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		gsa := orWord(h.fact("gsa"), "GSA@PROJECT.iam.gserviceaccount.com")
		r.high("Annotate the service account %s with iam.gke.io/gcp-service-account=%s and grant roles/iam.workloadIdentityUser on %s to %s[%s] (gcloud iam service-accounts add-iam-policy-binding), then restart %s's pods", h.fact("ksa"), gsa, gsa, orWord(h.fact("pool"), "PROJECT.svc.id.goog"), h.fact("ksa"), h.Subject)
		r.med("Keep the Workload Identity annotation and binding with the workload's manifests (the base, not an overlay), so a namespace move or a new cluster carries them")
		r.low("Alert on PERMISSION_DENIED from Google APIs and on a subscription's backlog growing")
	},
}

var (
	// gcpDeniedRE is a Google API refusing its caller's identity.
	gcpDeniedRE = regexp.MustCompile(`(?i)google\.api_core\.exceptions\.(?:PermissionDenied|Forbidden)|PERMISSION_DENIED|code = PermissionDenied|com\.google\.api\.gax\.rpc\.PermissionDeniedException|Permission '[\w.]+' denied|403 User not authorized to perform this action|Caller does not have required permission|does not have [\w.]+ access to the Google Cloud|iam\.serviceAccounts\.getAccessToken`)
	// wiMemberRE is a Workload Identity member: PROJECT.svc.id.goog[NS/KSA].
	wiMemberRE = regexp.MustCompile(`([\w.-]+)\.svc\.id\.goog\[([\w.-]+)/([\w.-]+)\]`)
	// gsaPolicyRE is the GSA whose IAM policy a command reads.
	gsaPolicyRE = regexp.MustCompile(`service-accounts get-iam-policy\s+([\w.@-]+\.iam\.gserviceaccount\.com)`)
	// gsaEmailRE is a Google service account's email.
	gsaEmailRE = regexp.MustCompile(`[\w-]+@[\w-]+\.iam\.gserviceaccount\.com`)
)

// detectGKEWorkloadIdentity finds a workload refused by Google APIs whose
// Kubernetes service account, as read, has no Workload Identity
// annotation.
func detectGKEWorkloadIdentity(ev *Gathered, _ []Finding) []Finding {
	type denied struct {
		first, last time.Time
		line, ns    string
		n           int
	}
	workloads := map[string]*denied{}
	var order []string
	for x := range incidentMatches(ev, gcpDeniedRE) {
		d := workloads[x.set.Subject]
		if d == nil {
			d = &denied{ns: x.set.Namespace, line: x.line}
			workloads[x.set.Subject] = d
			order = append(order, x.set.Subject)
		}
		d.first = earliest(d.first, orTime(x.t.FirstSeen, x.t.FirstIncident))
		d.last = latest(d.last, x.t.LastSeen)
		d.n += x.t.Incident
	}
	if len(workloads) == 0 {
		return nil
	}
	// The service accounts read back without the annotation, and the
	// bindings and GSAs the transcript shows.
	bare := map[string]string{} // KSA name -> namespace
	var members [][]string
	var gsa string
	for _, c := range ev.Commands {
		text := strings.Join(c.Lines, "\n")
		if m := findSubmatch(gsaPolicyRE, c.Command); m != nil && strings.Contains(text, "workloadIdentityUser") {
			gsa = m[1]
		}
		members = append(members, findAllSubmatch(wiMemberRE, text, -1)...)
	}
	// The cluster uses Workload Identity: a binding names a KSA, or
	// another KSA is annotated. Without it, pods call as the node's
	// Google service account and a bare KSA is no cause.
	inUse := len(members) > 0
	for _, sa := range ev.K8s.ServiceAccounts {
		if _, ok := sa.Annotations["iam.gke.io/gcp-service-account"]; !ok {
			bare[sa.Name] = sa.Namespace
		} else {
			inUse = true
		}
	}
	if !inUse {
		return nil
	}
	if len(bare) == 0 {
		return nil
	}
	for _, w := range order {
		d := workloads[w]
		ksa := ""
		if _, ok := bare[w]; ok {
			ksa = w
		}
		for _, p := range ev.K8s.Pods {
			if sa := p.Spec.ServiceAccountName; ksa == "" && sa != "" && strings.HasPrefix(p.Name, w+"-") {
				if _, ok := bare[sa]; ok {
					ksa = sa
				}
			}
		}
		if ksa == "" {
			continue
		}
		ns := orWord(bare[ksa], d.ns)
		f := Finding{Kind: KindGKEWorkloadIdentity, Subject: w, Namespace: ns, Time: d.first, Severity: SevCritical, Weight: 0.9,
			Source: SrcLogs, Object: "serviceaccount " + ns + "/" + ksa}
		f.setFact("ksa", ns+"/"+ksa)
		f.setFact("line", d.line)
		f.setFact("gsa", gsa)
		if gsa == "" {
			if m := findString(gsaEmailRE, d.line); m != "" {
				f.setFact("gsa", m)
			}
		}
		for _, m := range members {
			if m[3] == ksa {
				f.setFact("pool", m[1]+".svc.id.goog")
			}
			if m[3] == ksa && m[2] != ns {
				f.setFact("bound_to", m[2]+"/"+m[3])
				f.setFact("moved", "yes")
			}
		}
		f.addCount(d.n)
		f.Evidence = append(f.Evidence,
			fmt.Sprintf("%s logged %d lines refused by a Google API from %s to %s: %s", w, d.n, ts(d.first), ts(d.last), quote(ReadableLine(d.line), 200)),
			fmt.Sprintf("the service account %s/%s has no iam.gke.io/gcp-service-account annotation (no Workload Identity mapping)", ns, ksa))
		if b := f.fact("bound_to"); b != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("roles/iam.workloadIdentityUser of %s is granted to %s, another namespace's service account", orWord(f.fact("gsa"), "the Google service account"), b))
		}
		f.Summary = fmt.Sprintf("%s refused by Google APIs from %s: its service account %s/%s has no Workload Identity mapping", w, hm(d.first), ns, ksa)
		return []Finding{f}
	}
	return nil
}
