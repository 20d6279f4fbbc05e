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
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("%s pods are stuck because a volume mount fails (FailedMount): %s", s, truncate(h.fact("message"), 200))
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		s := h.Subject
		r.add(finding.PriorityHigh, fmt.Sprintf("Fix the volume of %s: check the PVC, storage class and the referenced secret/configmap exist and the volume is attachable", s))
		r.add(finding.PriorityMedium, "Look for volumes still attached to another node (multi-attach) and detach them")
		r.add(finding.PriorityLow, "Alert on pods stuck in ContainerCreating")
	},
}
