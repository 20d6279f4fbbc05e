package analyst

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// A Service whose selector also matches the pods of another workload: a
// new Deployment given the same app label (a worker split out of the
// service, a sidecar job) joins the Service's endpoints, and the share of
// connections kube-proxy sends to its pods is refused (nothing listens on
// the target port there) or answered by the wrong program. Callers fail
// on and off, every pod of the service itself looks healthy. Read from the
// Service's selector and the pods it selects (their labels), grouped by
// the workload each belongs to: a second workload among them, whose pods
// do not declare the target port or started just before the callers'
// refusals began.

// KindSelectorOverlap is a Service that selects another workload's pods.
const KindSelectorOverlap Kind = "selector_overlap"

var selectorOverlap = &mechanism{
	kind:   KindSelectorOverlap,
	class:  classCause,
	label:  "Service selector also matches another workload's pods",
	detect: detectSelectorOverlap,
	related: func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindConnRefused, KindConnReset, KindErrorRate, KindLogErrors, KindLatency:
			return f.relates(h.Subject) || strings.EqualFold(f.fact("callee"), h.Subject)
		}
		return false
	},
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		o := h.fact("other")
		return o != "" && (strings.EqualFold(c.Subject, o) || strings.Contains(changeText(c), strings.ToLower(o)))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the selector of Service %s (%s) also matches the pods of %s, so %s of its %s endpoints are %s pods",
			h.Subject, h.fact("selector"), h.fact("other"), h.fact("stray"), h.fact("endpoints"), h.fact("other"))
		if p := h.fact("ports"); p != "" {
			d += fmt.Sprintf(", which do not listen on the target port %s (they declare %s)", h.fact("target_port"), p)
		} else {
			d += fmt.Sprintf(", which do not serve %s's port %s", h.Subject, orWord(h.fact("target_port"), ""))
		}
		d += ": the connections sent to them are refused, so callers fail on and off while every pod of " + h.Subject + " is healthy"
		if s := h.fact("started"); s != "" {
			d += fmt.Sprintf("; the pods of %s started at %s, when the refusals began", h.fact("other"), s)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Give the pods of %s a label of their own (or add a label to the selector of %s that only its pods carry, such as component), so %s's endpoints are its own pods only", h.fact("other"), h.Subject, h.Subject)
		r.med("Check kubectl get endpointslices -l kubernetes.io/service-name=%s lists only %s pods after the fix", h.Subject, h.Subject)
		r.low("Lint manifests for Services whose selector matches more than one workload")
	},
}

// podWorkload names the workload of a pod for telling two workloads apart
// that share their labels: the owner, else the pod's name without its
// ReplicaSet hash and suffix when it has a pod-template-hash label.
func podWorkload(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ReplicaSet" || o.Kind == "StatefulSet" || o.Kind == "DaemonSet" || o.Kind == "Job" {
			return WorkloadOfPod(p)
		}
	}
	if h := p.Labels["pod-template-hash"]; h != "" {
		if i := strings.Index(p.Name, "-"+h+"-"); i > 0 {
			return p.Name[:i]
		}
	}
	return WorkloadOfPod(p)
}

func detectSelectorOverlap(ev *Gathered, found []Finding) []Finding {
	// Only where callers are refused by the Service.
	refused := map[string]time.Time{}
	for _, f := range found {
		if f.Kind == KindConnRefused {
			if t, ok := refused[f.Subject]; !ok || f.Time.Before(t) {
				refused[f.Subject] = f.Time
			}
		}
	}
	var out []Finding
	for _, st := range ev.K8s.Services {
		svc := st.Service
		onset, ok := refused[svc.Name]
		if !ok || len(svc.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		groups := map[string][]*corev1.Pod{}
		for i := range ev.K8s.Pods {
			p := &ev.K8s.Pods[i]
			if (svc.Namespace == "" || p.Namespace == "" || p.Namespace == svc.Namespace) && p.Status.Phase == corev1.PodRunning && sel.Matches(labels.Set(p.Labels)) {
				w := podWorkload(p)
				groups[w] = append(groups[w], p)
			}
		}
		if len(groups) < 2 {
			continue
		}
		// The service's own workload: the one named after it, else the
		// larger.
		names := make([]string, 0, len(groups))
		for w := range groups {
			names = append(names, w)
		}
		sort.Strings(names)
		own := ""
		for _, w := range names {
			if strings.EqualFold(w, svc.Name) {
				own = w
			}
		}
		if own == "" {
			continue
		}
		total := 0
		for _, w := range names {
			total += len(groups[w])
		}
		target := ""
		if len(svc.Spec.Ports) > 0 {
			target = svc.Spec.Ports[0].TargetPort.String()
			if svc.Spec.Ports[0].TargetPort == (intstr.IntOrString{}) {
				target = fmt.Sprint(svc.Spec.Ports[0].Port)
			}
		}
		for _, w := range names {
			if w == own {
				continue
			}
			pods := groups[w]
			ports := declaredPorts(pods)
			serves := target != "" && ports != "" && strings.Contains(","+ports+",", ","+target+",")
			if serves {
				continue
			}
			// Without their ports, the pods must have started shortly
			// before the refusals began (they joined the endpoints then).
			var started time.Time
			for _, p := range pods {
				t := p.CreationTimestamp.Time
				if p.Status.StartTime != nil {
					t = p.Status.StartTime.Time
				}
				if started.IsZero() || t.Before(started) {
					started = t
				}
			}
			near := !started.IsZero() && !started.After(onset.Add(5*time.Minute)) && onset.Sub(started) <= 2*time.Hour
			if ports == "" && !near {
				continue
			}
			f := Finding{Kind: KindSelectorOverlap, Subject: svc.Name, Namespace: svc.Namespace, Severity: SevCritical, Weight: 0.85,
				Source: SrcKubernetes, Time: onset, Object: "service " + svc.Name, Related: []string{w}}
			if near {
				f.Time = started
				f.setFact("started", ts(started))
			}
			f.setFact("other", w)
			f.setFact("selector", labels.Set(svc.Spec.Selector).String())
			f.setFact("stray", fmt.Sprint(len(pods)))
			f.setFact("endpoints", fmt.Sprint(total))
			f.setFact("target_port", target)
			f.setFact("ports", ports)
			var pn []string
			for _, p := range pods {
				pn = append(pn, p.Name)
			}
			f.Summary = fmt.Sprintf("Service %s (selector %s) also selects %d pods of %s", svc.Name, f.Facts["selector"], len(pods), w)
			f.Evidence = []string{
				fmt.Sprintf("Service %s selector %s matches %d running pods: %d of %s and %d of %s (%s)", svc.Name, f.Facts["selector"], total, len(groups[own]), own, len(pods), w, strings.Join(pn, ", ")),
			}
			if ports != "" {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s declare ports %s, not the target port %s", w, ports, target))
			}
			if near {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the pods of %s started at %s; callers are refused from %s", w, ts(started), ts(onset)))
			}
			out = append(out, f)
			break
		}
	}
	return out
}

// declaredPorts lists the container ports the pods declare ("9102" or
// "metrics"), "" when their spec is not known.
func declaredPorts(pods []*corev1.Pod) string {
	var ps []string
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				for _, v := range []string{fmt.Sprint(cp.ContainerPort), cp.Name} {
					if v != "" && v != "0" && !slices.Contains(ps, v) {
						ps = append(ps, v)
					}
				}
			}
		}
	}
	return strings.Join(ps, ",")
}
