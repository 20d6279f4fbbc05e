package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
)

// An Ingress whose backend names a Service that does not exist (a
// template's "<app>-svc" for a Service called "<app>", a Service renamed
// or deleted by another chart): the controller has no endpoints for that
// backend and answers 503 for every request it routes there, while the
// application's pods are Running and Ready and its real Service has
// endpoints. ingress-nginx logs "Error obtaining Endpoints for Service
// "ns/x": no object matching key", Traefik "service not found", the GCE
// controller's event "could not find service"; kubectl describe ingress
// prints the backend with `<error: endpoints "x" not found>`.

// KindIngressService is an Ingress backend naming a Service that does not
// exist.
const KindIngressService Kind = "ingress_backend_service"

var ingressService = &mechanism{
	kind:   KindIngressService,
	class:  classCause,
	label:  "Ingress backend names a Service that does not exist",
	detect: detectIngressServices,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "ingress") || strings.Contains(t, "service") || strings.Contains(t, "route")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Ingress %s routes %s to backend service %s, which does not exist in namespace %s (its Services: %s), so the ingress controller finds no endpoints for that backend and answers 503 for those paths although the pods are ready",
			orWord(h.fact("ingress"), h.Subject), orWord(h.fact("paths"), "its paths"), orWord(h.fact("service"), "(unnamed)"), orWord(h.fact("namespace"), "its namespace"), orWord(h.fact("services"), "none read"))
		if s := h.fact("likely"); s != "" {
			d += fmt.Sprintf("; the Service meant is probably %s", s)
		}
		d += h.quoteClause("; the controller says: ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if s := h.fact("likely"); s != "" {
			r.high("Point the Ingress %s backend at the Service that exists (%s) instead of %s, or create Service %s", h.fact("ingress"), s, h.fact("service"), h.fact("service"))
		} else {
			r.high("Point the Ingress %s backend at an existing Service, or create Service %s in namespace %s", h.fact("ingress"), h.fact("service"), h.fact("namespace"))
		}
		r.med("Check the Service names a generated Ingress uses against the Services in its namespace before switching traffic to it (kubectl describe ingress shows <error: endpoints ... not found>)")
		r.low("Alert on the ingress controller's 503s per backend and on backends without endpoints")
	},
}

// missingBackendRE is an ingress controller's line saying a backend's
// Service is not there: ingress-nginx, Traefik, HAProxy, the GCE
// controller's events, Contour.
var missingBackendRE = regexp.MustCompile(`(?i)no object matching key|not found|does not exist|could not find service|no such service|missing service`)

// detectIngressServices finds Ingress backends naming a Service that is
// not among the Services gathered of the Ingress's namespace: only when
// that namespace's Services were read (two or more of them, or the
// controller's own word that the backend is missing).
func detectIngressServices(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.Ingresses {
		ing := &ev.K8s.Ingresses[i]
		var have []string
		for _, s := range ev.K8s.Services {
			if s.Service.Namespace == "" || s.Service.Namespace == ing.Namespace {
				have = append(have, s.Service.Name)
			}
		}
		if len(have) == 0 {
			continue // the namespace's Services were not read
		}
		type bad struct {
			svc   string
			paths []string
		}
		var found []*bad
		check := func(b *networkingv1.IngressBackend, path string) {
			if b == nil || b.Service == nil || slices.Contains(have, b.Service.Name) {
				return
			}
			for _, x := range found {
				if x.svc == b.Service.Name {
					x.paths = append(x.paths, path)
					return
				}
			}
			found = append(found, &bad{svc: b.Service.Name, paths: []string{path}})
		}
		eachIngressBackend(ing, check)
		for _, b := range found {
			line, at := controllerSaysMissing(ev.Logs, ing.Namespace, b.svc)
			if line == "" && len(have) < 2 {
				continue // one Service described is not the namespace's list
			}
			f := Finding{Kind: KindIngressService, Subject: ing.Name, Object: "ingress " + ing.Namespace + "/" + ing.Name, Namespace: ing.Namespace,
				Source: SrcKubernetes, Severity: SevCritical, Weight: 0.85, Time: ev.Window.Start, Related: []string{b.svc}}
			f.setFact("ingress", ing.Namespace+"/"+ing.Name)
			f.setFact("service", b.svc)
			f.setFact("namespace", ing.Namespace)
			f.setFact("paths", strings.Join(b.paths, ", "))
			f.setFact("services", strings.Join(have, ", "))
			if s := likelyService(b.svc, ing.Name, have); s != "" {
				f.setFact("likely", s)
			}
			f.Evidence = []string{
				fmt.Sprintf("Ingress %s/%s sends %s to service %s", ing.Namespace, ing.Name, strings.Join(b.paths, ", "), b.svc),
				fmt.Sprintf("no service %s in namespace %s: its Services are %s", b.svc, ing.Namespace, strings.Join(have, ", ")),
			}
			if line != "" {
				f.Weight = 0.95
				f.setFact("line", line)
				f.Evidence = append(f.Evidence, "ingress controller log: "+quote(ReadableLine(line), 240))
				if !at.IsZero() && at.Before(f.Time) {
					f.Time = at
				}
			}
			// It broke when the Ingress was created or changed.
			for _, c := range ev.Changes {
				t := strings.ToLower(c.Description)
				if (strings.EqualFold(c.Service, ing.Name) || strings.Contains(t, "ingress")) && !c.Timestamp.After(ev.Window.End) && c.Timestamp.Before(f.Time) {
					f.Time = c.Timestamp
				}
			}
			f.Summary = fmt.Sprintf("Ingress %s/%s routes to service %s, which does not exist", ing.Namespace, ing.Name, b.svc)
			out = append(out, f)
		}
	}
	return out
}

// controllerSaysMissing is a log line (of an ingress controller, in any
// source read) that names the Service ns/name, or name quoted, as missing,
// and when it was first seen.
func controllerSaysMissing(logs []LogSet, ns, name string) (string, time.Time) {
	keys := []string{ns + "/" + name, `"` + name + `"`, "'" + name + "'", "serviceName=" + name, "service=" + name}
	for _, set := range logs {
		for _, t := range set.Templates {
			l := t.Example
			if !matchLine(missingBackendRE, l) {
				continue
			}
			for _, k := range keys {
				if strings.Contains(l, k) {
					return l, t.FirstSeen
				}
			}
		}
	}
	return "", time.Time{}
}

// likelyService is the Service an Ingress backend probably meant: one
// whose name the backend's extends or shortens ("docs-portal-svc" for
// "docs-portal"), or the one named like the Ingress.
func likelyService(backend, ingress string, have []string) string {
	for _, s := range have {
		if strings.HasPrefix(backend, s+"-") || strings.HasPrefix(s, backend+"-") || strings.HasSuffix(backend, "-"+s) {
			return s
		}
	}
	if slices.Contains(have, ingress) {
		return ingress
	}
	return ""
}

// eachIngressBackend calls visit with each backend of the Ingress and
// where it routes from: its default backend ("its default backend"),
// then each rule's paths ("shop.example.com/api").
func eachIngressBackend(ing *networkingv1.Ingress, visit func(b *networkingv1.IngressBackend, path string)) {
	visit(ing.Spec.DefaultBackend, "its default backend")
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			visit(&p.Backend, strings.TrimSpace(r.Host+orWord(p.Path, "/")))
		}
	}
}
