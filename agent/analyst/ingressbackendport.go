package analyst

import (
	"fmt"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
)

// An Ingress whose backend names a Service port the Service does not have
// (a port renamed or renumbered by the Service's chart while the Ingress,
// from another chart, kept the old one): the controller finds no endpoint
// for that backend and answers 503 for every request, while the pods are
// Running and Ready and the Service's own endpoints are fine.

// KindIngressPort is an Ingress backend naming a port its Service lacks.
const KindIngressPort Kind = "ingress_backend_port"

var ingressPort = &mechanism{
	kind:   KindIngressPort,
	class:  classCause,
	label:  "Ingress backend names a port the Service does not have",
	detect: detectIngressPorts,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "port") || strings.Contains(t, "ingress") || strings.Contains(t, "service")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("the Ingress %s routes %s to service %s port %s, but service %s has no such port (its ports: %s), so the ingress controller finds no endpoint for that backend and answers 503 although the pods are ready",
			h.fact("ingress"), h.fact("paths"), h.Subject, h.fact("port"), h.Subject, h.fact("service_ports"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Point the Ingress %s backend at a port service %s has (%s), or give the Service back a port named %s", h.fact("ingress"), h.Subject, h.fact("service_ports"), h.fact("port"))
		r.med("Keep Service port names part of the chart's interface: change them together with every Ingress, ServiceMonitor and client that names them")
		r.low("Alert on the ingress controller's 503s per backend and on backends without endpoints")
	},
}

// detectIngressPorts finds Ingress backends whose Service port, by name or
// number, is not among the Service's ports.
func detectIngressPorts(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	for i := range ev.K8s.Ingresses {
		ing := &ev.K8s.Ingresses[i]
		type bad struct {
			svc, port string
			paths     []string
			ports     string
		}
		var found []*bad
		check := func(b *networkingv1.IngressBackend, path string) {
			if b == nil || b.Service == nil {
				return
			}
			st := serviceNamed(ev.K8s.Services, ing.Namespace, b.Service.Name)
			if st == nil || len(st.Service.Spec.Ports) == 0 {
				return
			}
			var ports []string
			for _, p := range st.Service.Spec.Ports {
				if b.Service.Port.Name != "" && p.Name == "" {
					return // ports read from a table carry no names: unknown
				}
			}
			for _, p := range st.Service.Spec.Ports {
				if b.Service.Port.Name != "" && p.Name == b.Service.Port.Name || b.Service.Port.Number != 0 && p.Port == b.Service.Port.Number {
					return
				}
				ports = append(ports, strings.TrimSpace(p.Name+" "+strconv.Itoa(int(p.Port))))
			}
			port := b.Service.Port.Name
			if port == "" {
				port = strconv.Itoa(int(b.Service.Port.Number))
			}
			for _, x := range found {
				if x.svc == b.Service.Name && x.port == port {
					x.paths = append(x.paths, path)
					return
				}
			}
			found = append(found, &bad{svc: b.Service.Name, port: port, paths: []string{path}, ports: strings.Join(ports, ", ")})
		}
		eachIngressBackend(ing, check)
		for _, b := range found {
			f := Finding{Kind: KindIngressPort, Subject: b.svc, Object: "ingress " + ing.Namespace + "/" + ing.Name, Namespace: ing.Namespace,
				Source: SrcKubernetes, Severity: SevCritical, Weight: 0.9, Time: ev.Window.Start, Related: []string{ing.Name}}
			f.setFact("ingress", ing.Namespace+"/"+ing.Name)
			f.setFact("port", b.port)
			f.setFact("paths", strings.Join(b.paths, ", "))
			f.setFact("service_ports", b.ports)
			f.Evidence = []string{
				fmt.Sprintf("Ingress %s/%s sends %s to service %s port %s", ing.Namespace, ing.Name, strings.Join(b.paths, ", "), b.svc, b.port),
				fmt.Sprintf("service %s/%s has no port %s: its ports are %s", ing.Namespace, b.svc, b.port, b.ports),
			}
			// It broke when a change to either side touched the ports.
			for _, c := range ev.Changes {
				if (strings.EqualFold(c.Service, b.svc) || strings.EqualFold(c.Service, ing.Name)) && strings.Contains(strings.ToLower(c.Description), "port") &&
					!c.Timestamp.After(ev.Window.End) && (f.Time.Equal(ev.Window.Start) || c.Timestamp.After(f.Time)) {
					f.Time = c.Timestamp
				}
			}
			f.Summary = fmt.Sprintf("Ingress %s/%s names port %s of service %s, which has no such port", ing.Namespace, ing.Name, b.port, b.svc)
			out = append(out, f)
		}
	}
	return out
}

// serviceNamed is the Service ns/name among those gathered, or nil.
func serviceNamed(svcs []ServiceState, ns, name string) *ServiceState {
	for i := range svcs {
		if s := &svcs[i]; s.Service.Name == name && (ns == "" || s.Service.Namespace == "" || s.Service.Namespace == ns) {
			return s
		}
	}
	return nil
}
