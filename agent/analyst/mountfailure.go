package analyst

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/finding"
)

// A volume that cannot be mounted (FailedMount): the pods stay in
// ContainerCreating. The kubelet's message names the volume and why (a
// missing ConfigMap, Secret or claim, a volume attached elsewhere).
var mountFailure = &mechanism{
	kind:  KindMountFailure,
	class: classCause,
	label: "volume mount failure",
	event: func(e *corev1.Event) (float64, bool) {
		switch e.Reason {
		case "FailedMount", "FailedAttachVolume", "FailedMapVolume":
			return 0.85, !missingConfigRef(strings.ToLower(e.Message)) && !secretMountDenied(e.Message)
		}
		return 0, false
	},
	detect: func(ev *Gathered, found []Finding) []Finding {
		followMultiAttach(ev, found)
		return nil
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		msg := h.fact("message")
		for _, f := range h.Primary {
			if f.fact("multi_attach") != "" {
				msg = f.fact("message")
				break
			}
		}
		head, out := mountHelperOutput(msg)
		d := fmt.Sprintf("%s pods are stuck because a volume mount fails (FailedMount): %s", s, truncate(head, 200))
		if out != "" {
			d += fmt.Sprintf("; the mount helper says why: %s", quote(out, 420))
		}
		if m := h.fact("multi_attach"); m != "" {
			d += "; " + m
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		if holder := h.fact("multi_attach_rolling"); holder != "" {
			r.add(finding.PriorityHigh, fmt.Sprintf("Set the Deployment %s to strategy Recreate (or RollingUpdate with maxSurge 0 and maxUnavailable 1): with a ReadWriteOnce volume the old pod must stop before the new one can attach it; to finish this rollout now, delete the old pod %s so that its volume detaches", s, holder))
			r.add(finding.PriorityMedium, fmt.Sprintf("If %s must not go down during updates, move it to a StatefulSet or to a volume that several nodes can mount (ReadWriteMany)", s))
			r.add(finding.PriorityLow, "Alert on FailedAttachVolume events with Multi-Attach errors and on rollouts past their progress deadline")
			return
		}
		r.add(finding.PriorityHigh, fmt.Sprintf("Fix the volume of %s: check the PVC, storage class and the referenced secret/configmap exist and the volume is attachable", s))
		r.add(finding.PriorityMedium, "Look for volumes still attached to another node (multi-attach) and detach them")
		r.add(finding.PriorityLow, "Alert on pods stuck in ContainerCreating")
	},
}

// mountHelperOutput splits a kubelet's mount failure into its first line
// and what the mount helper printed ("Output: mount.nfs: access denied by
// server", the EFS helper's "Failed to resolve ... mount target", a CIFS
// error), the reason the first line's "exit status 32" does not say. Lines
// that only point to documentation are dropped; out is empty when the
// message carries no helper output.
func mountHelperOutput(msg string) (head, out string) {
	head, _, _ = strings.Cut(msg, "\n")
	i := strings.Index(msg, "Output:")
	if i < 0 {
		return head, ""
	}
	var kept []string
	for _, l := range strings.Split(msg[i+len("Output:"):], "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "See http") || strings.HasPrefix(l, "Mounting ") {
			continue
		}
		kept = append(kept, l)
	}
	return head, strings.Join(strings.Fields(strings.Join(kept, " ")), " ")
}
