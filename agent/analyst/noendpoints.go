package analyst

import (
	"fmt"
	"slices"
	"strings"

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
	unlabeled := map[string]bool{} // namespaces with pods read from a table
	for i := range pods {
		if len(pods[i].Labels) == 0 {
			unlabeled[pods[i].Namespace] = true
		}
	}
	for _, s := range svcs {
		svc := s.Service
		if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ready, notReady := s.ReadyEndpoints, s.NotReadyEndpoints
		// Endpoint lists come empty when no Endpoints object was handed
		// over (a bundle with a get svc table): with pods whose labels are
		// unknown too, an empty list says nothing.
		known := s.Known && (ready+notReady > 0 || !unlabeled[svc.Namespace])
		if !known {
			ready, notReady = 0, 0
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		var workloads []string
		unknown := false // pods whose labels were not handed over
		for i := range pods {
			p := &pods[i]
			if p.Namespace != svc.Namespace {
				continue
			}
			if len(p.Labels) == 0 && !known {
				// A pod read from a table (get pods) carries no labels:
				// whether the selector matches it is unknown. Its name
				// stands in when it is the workload a selector value
				// names (app=profile-api, profile-api-7d6c5b8f9-6mfpx)
				// and its state is known (a pod seen only in a kubectl
				// logs line has none); otherwise the endpoints are
				// unknown, not zero.
				if podStateUnknown(p) || !selectorNamesWorkload(svc.Spec.Selector, WorkloadOfPod(p)) {
					unknown = true
					continue
				}
			} else if !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if wl := WorkloadOfPod(p); !slices.Contains(workloads, wl) {
				workloads = append(workloads, wl)
			}
			if !known {
				if podReady(p) {
					ready++
				} else {
					notReady++
				}
			}
		}
		if ready > 0 || unknown && len(workloads) == 0 {
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

// selectorNamesWorkload reports whether one of a selector's values is the
// workload's name: the app or name label a workload's pods usually carry.
func selectorNamesWorkload(sel map[string]string, wl string) bool {
	for _, v := range sel {
		if strings.EqualFold(v, wl) {
			return true
		}
	}
	return false
}
