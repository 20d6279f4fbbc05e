package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// An Ingress whose ingressClassName no controller serves (a class renamed
// while moving from the kubernetes.io/ingress.class annotation to
// spec.ingressClassName, or a class of another cluster): every controller
// ignores it, no address is published, and the host's requests fall to the
// default backend, which answers 404, while the Service and its pods are
// fine. Read from the cluster's IngressClass list (the class is not in it)
// and from a controller's log saying it ignores the Ingress.

// KindIngressClass is an Ingress that names a class no controller serves.
const KindIngressClass Kind = "ingress_class_unserved"

var ingressClass = &mechanism{
	kind:   KindIngressClass,
	class:  classCause,
	label:  "Ingress names an ingress class no controller serves",
	detect: detectIngressClasses,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "ingress") || strings.Contains(t, "class")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("the Ingress %s names ingressClassName %s, which no ingress controller serves (%s), so every controller ignores it and requests for %s fall to the default backend, which answers 404, although service %s and its pods are fine",
			h.fact("ingress"), h.fact("class"), h.fact("classes"), h.fact("hosts"), h.Subject)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Set the Ingress %s ingressClassName to a class a controller serves (%s)", h.fact("ingress"), h.fact("classes"))
		r.med("Check an Ingress's class against 'kubectl get ingressclass' and its ADDRESS after every ingress change; an Ingress without an address is served by no controller")
		r.low("Alert on Ingresses without an address and on the controller's 'Ignoring ingress' lines")
	},
}

// ignoringIngressRE is a controller's line saying it skips an Ingress
// (ingress-nginx "Ignoring ingress because of error while validating ingress
// class" ingress="ns/name", or "ignoring ingress ns/name ... class").
var ignoringIngressRE = regexp.MustCompile(`(?i)ignoring (?:the )?ingress`)

// detectIngressClasses finds Ingresses whose class is missing from the
// listed IngressClasses or that a controller's log says it ignores.
func detectIngressClasses(ev *Gathered, _ []Finding) []Finding {
	classes, listed := ingressClassesListed(ev.Commands)
	var out []Finding
	for i := range ev.K8s.Ingresses {
		ing := &ev.K8s.Ingresses[i]
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName == "" {
			continue
		}
		class := *ing.Spec.IngressClassName
		missing := listed && !slices.Contains(classes, class)
		ignored := ignoredIngressLine(ev, ing)
		if !missing && ignored == "" {
			continue
		}
		svc, hosts := ingressBackends(ing)
		if svc == "" {
			svc = ing.Name
		}
		f := Finding{Kind: KindIngressClass, Subject: svc, Object: "ingress " + ing.Namespace + "/" + ing.Name, Namespace: ing.Namespace,
			Source: SrcKubernetes, Severity: SevCritical, Weight: 0.8, Time: ev.Window.Start, Related: []string{ing.Name}}
		f.setFact("ingress", ing.Namespace+"/"+ing.Name)
		f.setFact("class", class)
		f.setFact("hosts", orWord(strings.Join(hosts, ", "), "its hosts"))
		f.setFact("classes", "the cluster's classes are "+orWord(strings.Join(classes, ", "), "unknown"))
		f.Evidence = append(f.Evidence, fmt.Sprintf("Ingress %s/%s has ingressClassName %s", ing.Namespace, ing.Name, class))
		if missing {
			f.Evidence = append(f.Evidence, fmt.Sprintf("no IngressClass %s: the cluster's classes are %s", class, strings.Join(classes, ", ")))
		}
		if ignored != "" {
			f.Weight = 0.9
			f.Evidence = append(f.Evidence, "the ingress controller ignores it: "+clip(ignored, 240))
		}
		if len(ing.Status.LoadBalancer.Ingress) == 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("Ingress %s/%s has no address: no controller admitted it", ing.Namespace, ing.Name))
		}
		// It broke when a change touched the Ingress or its class.
		for _, c := range append(slices.Clone(ev.Earlier), ev.Changes...) {
			t := strings.ToLower(c.Description)
			if (strings.EqualFold(c.Service, svc) || strings.EqualFold(c.Service, ing.Name)) && (strings.Contains(t, "ingress") || strings.Contains(t, "class")) &&
				!c.Timestamp.After(ev.Window.End) && (f.Time.Equal(ev.Window.Start) || c.Timestamp.After(f.Time)) {
				f.Time = c.Timestamp
			}
		}
		f.Summary = fmt.Sprintf("Ingress %s/%s names ingress class %s, which no controller serves", ing.Namespace, ing.Name, class)
		out = append(out, f)
	}
	return out
}

// ingressClassesListed reads the NAME column of 'kubectl get ingressclass'
// outputs; listed is false when no such listing was handed over.
func ingressClassesListed(cmds []evidence.CommandOutput) (names []string, listed bool) {
	for _, c := range cmds {
		f := strings.Fields(strings.ToLower(c.Command))
		if c.Exec || len(f) < 3 || f[0] != "kubectl" || !slices.Contains(f, "get") || !strings.Contains(c.Command, "ingressclass") || strings.Contains(c.Command, "|") {
			continue
		}
		head := true
		for _, l := range c.Lines {
			cols := strings.Fields(l)
			if len(cols) == 0 {
				continue
			}
			if head {
				if cols[0] != "NAME" {
					break // not a table (yaml, describe): unknown
				}
				head = false
				listed = true
				continue
			}
			name := strings.TrimPrefix(cols[0], "ingressclass.networking.k8s.io/")
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names, listed
}

// ignoredIngressLine is a controller's line (a command's output or a log
// template) saying it ignores ing, named ns/name or by a quoted name.
func ignoredIngressLine(ev *Gathered, ing *networkingv1.Ingress) string {
	full := ing.Namespace + "/" + ing.Name
	names := func(l string) bool {
		return strings.Contains(l, full) || strings.Contains(l, `"`+ing.Name+`"`) || strings.Contains(l, " "+ing.Name+" ")
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if matchLine(ignoringIngressRE, l) && names(l) {
				return strings.TrimSpace(l)
			}
		}
	}
	for _, ls := range ev.Logs {
		for _, t := range ls.Templates {
			if matchLine(ignoringIngressRE, t.Example) && names(t.Example) {
				return strings.TrimSpace(t.Example)
			}
		}
	}
	return ""
}

// ingressBackends is the first Service an Ingress routes to and its hosts.
func ingressBackends(ing *networkingv1.Ingress) (svc string, hosts []string) {
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		svc = b.Service.Name
	}
	for _, r := range ing.Spec.Rules {
		if r.Host != "" && !slices.Contains(hosts, r.Host) {
			hosts = append(hosts, r.Host)
		}
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if svc == "" && p.Backend.Service != nil {
				svc = p.Backend.Service.Name
			}
		}
	}
	return svc, hosts
}
