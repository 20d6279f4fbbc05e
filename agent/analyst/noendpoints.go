package analyst

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A Service with no ready endpoints: every request to it fails. A symptom
// of pods that are not ready or a selector that matches none.
var noEndpoints = &mechanism{
	kind:  KindNoEndpoints,
	class: classSymptom,
	label: "no ready endpoints",
	objects: func(ev *K8sEvidence, w Window) []Finding {
		return DetectServices(ev.Services, ev.Pods)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		d = fmt.Sprintf("service %s has no ready endpoints, so requests to it fail", s)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		recommendGeneric(h, r)
	},
}

// DetectServices finds services whose selector matches no ready endpoint.
func DetectServices(svcs []ServiceState, pods []corev1.Pod) []Finding {
	var out []Finding
	for _, s := range svcs {
		svc := s.Service
		if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ready, notReady := s.ReadyEndpoints, s.NotReadyEndpoints
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var workloads []string
		for i := range pods {
			p := &pods[i]
			if p.Namespace != svc.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if wl := WorkloadOfPod(p); !slices.Contains(workloads, wl) {
				workloads = append(workloads, wl)
			}
			if !s.Known {
				if podReady(p) {
					ready++
				} else {
					notReady++
				}
			}
		}
		if ready > 0 {
			continue
		}
		obj := "service " + svc.Namespace + "/" + svc.Name
		var mm *Finding
		if len(workloads) == 0 {
			if m, ok := selectorMismatch(svc, pods); ok {
				mm = &m
				workloads = append(workloads, m.Related...)
			}
		}
		f := Finding{Kind: KindNoEndpoints, Subject: svc.Name, Object: obj, Namespace: svc.Namespace, Source: SrcKubernetes,
			Severity: SevCritical, Weight: 0.8, Related: workloads}
		f.Summary = fmt.Sprintf("%s has no ready endpoints (%d not ready)", obj, notReady)
		f.Evidence = []string{fmt.Sprintf("%s (selector %s) has 0 ready endpoints and %d not ready", obj, sel.String(), notReady)}
		out = append(out, f)
		if mm != nil {
			out = append(out, *mm)
		}
	}
	return out
}
