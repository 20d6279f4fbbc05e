package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KindVolumeProvision is a PersistentVolumeClaim that cannot be bound or
// provisioned, so the pods that use it stay Pending.
const KindVolumeProvision Kind = "volume_provisioning"

// A claim that cannot get a volume: the scheduler only says "pod has
// unbound immediate PersistentVolumeClaims"; the claim's own events say
// why (its StorageClass does not exist, the provisioner failed, no volume
// matches and no class is set). The chain runs pod → claim → StorageClass
// → provisioner, and the deepest hop with evidence is the root.
var volumeProvision = &mechanism{
	kind:  KindVolumeProvision,
	class: classCause,
	label: "PersistentVolumeClaim cannot be provisioned",
	detect: func(ev *Gathered, _ []Finding) []Finding {
		return detectClaimFailures(ev.K8s)
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		d := strings.ToLower(c.fact("description") + " " + c.Summary)
		if h.fact("problem") == "kms_key" {
			return strings.Contains(d, "kms") || strings.Contains(d, "encryption key")
		}
		return strings.Contains(d, "storage") || strings.Contains(d, "migrat") || strings.Contains(d, "cluster") || c.Kind == KindInfraChange
	},
	// A change that names the claim or its StorageClass triggers it; a
	// deploy or flag of the subject that says nothing of storage does not.
	contentTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s pods stay Pending because their PersistentVolumeClaim %s cannot get a volume", h.Subject, h.fact("claim"))
		switch h.fact("problem") {
		case "class_missing":
			d += fmt.Sprintf(": its StorageClass %s does not exist in this cluster (not found), so nothing can provision it", h.fact("storage_class"))
		case "provisioner":
			d += fmt.Sprintf(": the provisioner of StorageClass %s fails to create it", orWord(h.fact("storage_class"), "(default)"))
		case "kms_key":
			d += fmt.Sprintf(": the provisioner of StorageClass %s cannot use the KMS encryption key the class encrypts its volumes with (the key's state or its key policy refuses it), so no volume can be created", orWord(h.fact("storage_class"), "(default)"))
		case "no_class":
			d += ": no PersistentVolume matches it and it names no StorageClass (and there is no default)"
		}
		if m := h.fact("message"); m != "" {
			d += " — " + quoteError(m, 240)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		switch h.fact("problem") {
		case "class_missing":
			r.high("Create the StorageClass %s in this cluster, or change the claim (the StatefulSet's volumeClaimTemplates) to a StorageClass that exists (kubectl get storageclass), then delete the Pending claim so it is recreated", h.fact("storage_class"))
		case "kms_key":
			r.high("Make the KMS key of StorageClass %s usable: check its state (aws kms describe-key: Enabled, not PendingDeletion or Disabled; cancel a scheduled deletion) and that its key policy lets the CSI driver's role use it (kms:CreateGrant, kms:GenerateDataKeyWithoutPlaintext), or point the class at a key that is", orWord(h.fact("storage_class"), "(default)"))
		case "provisioner":
			r.high("Fix the volume provisioner of StorageClass %s (its controller's logs: credentials, quota, zone)", orWord(h.fact("storage_class"), "(default)"))
		default:
			r.high("Give the claim %s a StorageClass that exists, or mark one as the default", h.fact("claim"))
		}
		r.med("Check StorageClass names when moving workloads between clusters")
		r.low("Alert on PersistentVolumeClaims Pending for more than a few minutes")
	},
}

var (
	classNotFoundRE = regexp.MustCompile(`(?i)storageclass(?:\.storage\.k8s\.io)? "?([\w.-]+)"? not found`)
	classNameRE     = regexp.MustCompile(`(?i)StorageClass "([\w.-]+)"`)
)

// classifyClaimEvent says what a claim's event reports: "class_missing"
// (with the class), "provisioner", "no_class", or "".
func classifyClaimEvent(e *corev1.Event) (problem, class string) {
	switch e.Reason {
	case "ProvisioningFailed", "FailedBinding":
	default:
		return "", ""
	}
	if m := findSubmatch(classNotFoundRE, e.Message); m != nil {
		return "class_missing", m[1]
	}
	if strings.Contains(strings.ToLower(e.Message), "no storage class is set") {
		return "no_class", ""
	}
	if m := findSubmatch(classNameRE, e.Message); m != nil {
		class = m[1]
	}
	if matchLine(kmsErrorRE, e.Message) {
		return "kms_key", class
	}
	if class != "" {
		return "provisioner", class
	}
	return "provisioner", ""
}

// kmsErrorRE reads a provisioning error caused by the volume's encryption
// key (AWS InvalidKMSKey.*, "KMS key ... pending deletion / disabled",
// kms:CreateGrant denied; GCP/Azure customer-managed key errors).
var kmsErrorRE = regexp.MustCompile(`(?i)\bKMS\b|kms:|kmsKeyId|customer[- ]managed (?:encryption )?key|encryption key|cloudkms|key vault`)

// detectClaimFailures finds claims whose events say they cannot get a
// volume, attributed to the workloads whose pods use them.
func detectClaimFailures(k K8sEvidence) []Finding {
	users := map[string]string{} // ns/claim → workload
	for i := range k.Pods {
		p := &k.Pods[i]
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				users[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = WorkloadOfPod(p)
			}
		}
	}
	byClaim := map[string]*Finding{}
	for i := range k.Events {
		e := &k.Events[i]
		if e.InvolvedObject.Kind != "PersistentVolumeClaim" {
			continue
		}
		problem, class := classifyClaimEvent(e)
		if problem == "" {
			continue
		}
		ns := orWord(e.InvolvedObject.Namespace, e.Namespace)
		key := ns + "/" + e.InvolvedObject.Name
		first, last := eventTime(e)
		f := byClaim[key]
		if f == nil {
			subject := users[key]
			if subject == "" {
				subject = claimWorkload(e.InvolvedObject.Name, k.Pods)
			}
			f = &Finding{Kind: KindVolumeProvision, Subject: subject, Object: "persistentvolumeclaim " + key, Namespace: ns, Time: first,
				Severity: SevCritical, Weight: 0.95, Source: SrcEvents}
			f.setFact("claim", e.InvolvedObject.Name)
			f.setFact("problem", problem)
			f.setFact("storage_class", class)
			f.setFact("message", e.Message)
			if strings.TrimSpace(e.Message) == "" {
				f.setFact("state_only", "true")
			}
			f.Summary = fmt.Sprintf("PersistentVolumeClaim %s cannot get a volume: %s", key, clipMiddle(e.Message, 200))
			byClaim[key] = f
		}
		f.Time = earliest(f.Time, first)
		if len(f.Evidence) < 3 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("event %s on persistentvolumeclaim %s: %s (%s, first %s, last %s)", e.Reason, key, quoteError(e.Message, 240), plural(int(max(e.Count, 1)), "time", "times"), ts(first), ts(last)))
		}
	}
	keys := slices.Sorted(maps.Keys(byClaim))
	out := make([]Finding, 0, len(keys))
	for _, key := range keys {
		out = append(out, *byClaim[key])
	}
	return out
}

// claimWorkload names the workload of a claim no listed pod mounts: a
// StatefulSet's claims are named <template>-<statefulset>-<ordinal>.
func claimWorkload(claim string, pods []corev1.Pod) string {
	for i := range pods {
		if strings.HasSuffix(claim, "-"+pods[i].Name) {
			return WorkloadOfPod(&pods[i])
		}
	}
	if i := strings.IndexByte(claim, '-'); i > 0 {
		return workloadOfName(claim[i+1:])
	}
	return claim
}
