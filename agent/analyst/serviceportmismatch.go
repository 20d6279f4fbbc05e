package analyst

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// KindPortMismatch: a client connects to a Service on a port the Service
// does not serve (a listener removed or renamed, a client still on the
// old port), so every connection times out or is refused.
const KindPortMismatch Kind = "service_port_mismatch"

// A client calling a cluster Service on a port that Service does not
// expose: the failing calls (timeouts, refusals, a crash on start-up)
// name host:port, and the Service's own ports say which ports exist.
var portMismatch = &mechanism{
	kind:   KindPortMismatch,
	class:  classCause,
	label:  "client calls a port the Service does not serve",
	detect: detectPortMismatch,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "port") || strings.Contains(t, "listener") || strings.Contains(t, "tls")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		return fmt.Sprintf("%s connects to %s on port %s, a port that service %s does not serve (its ports: %s), so the connection cannot be made: the listener on port %s is gone or was moved",
			h.Subject, h.fact("service"), h.fact("port"), h.fact("service"), h.fact("ports"), h.fact("port"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Point %s at a port service %s serves (%s), with the protocol that port expects, or restore the listener on port %s", h.Subject, h.fact("service"), h.fact("ports"), h.fact("port"))
		r.med("Check the client settings of %s (bootstrap servers, URLs, ports) against the Service's ports after every listener change", h.Subject)
		r.low("Alert on clients failing to connect to a Service right after its ports change")
	},
}

// detectPortMismatch finds the failing calls whose host:port names a
// Service that does not serve that port.
func detectPortMismatch(ev *Gathered, found []Finding) []Finding {
	type svcPorts struct {
		ns    string
		ports []string
		nums  map[string]bool
	}
	svcs := map[string]*svcPorts{}
	for _, s := range append(slices.Clone(ev.K8s.Services), ev.K8s.CalledServices...) {
		sp := &svcPorts{ns: s.Service.Namespace, nums: map[string]bool{}}
		for _, p := range s.Service.Spec.Ports {
			n := strconv.Itoa(int(p.Port))
			sp.nums[n] = true
			// The port its pods listen on and the node port reach it too
			// (a log may name the endpoint it resolved).
			if tp := p.TargetPort.String(); tp != "" && tp != "0" {
				sp.nums[tp] = true
			}
			if p.NodePort != 0 {
				sp.nums[strconv.Itoa(int(p.NodePort))] = true
			}
			sp.ports = append(sp.ports, strings.TrimSpace(p.Name+" "+n+"/"+orWord(string(p.Protocol), "TCP")))
		}
		if len(sp.ports) > 0 {
			svcs[s.Service.Name] = sp
		}
	}
	if len(svcs) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	for _, f := range found {
		target, caller := "", ""
		switch {
		case infoOf(f.Kind).class == classDependency:
			target, caller = f.fact("target"), f.fact("caller")
		case f.Kind == KindCrashLoop:
			target, caller = DependencyTarget(f.fact("last_log")), f.Subject
		}
		host, port, err := net.SplitHostPort(target)
		if err != nil || caller == "" {
			continue
		}
		sp := svcs[host]
		if sp == nil || sp.nums[port] || seen[caller+" "+target] {
			continue
		}
		seen[caller+" "+target] = true
		g := Finding{Kind: KindPortMismatch, Subject: caller, Object: f.Object, Namespace: f.Namespace, Time: f.Time, Severity: SevCritical,
			Weight: 0.9, Source: f.Source, Related: []string{host}}
		g.Summary = fmt.Sprintf("%s calls %s, but service %s/%s serves only %s", caller, target, sp.ns, host, strings.Join(sp.ports, ", "))
		g.Evidence = append([]string{fmt.Sprintf("service %s/%s exposes %s, not port %s", sp.ns, host, strings.Join(sp.ports, ", "), port)}, f.Evidence...)
		if len(g.Evidence) > 3 {
			g.Evidence = g.Evidence[:3]
		}
		g.setFact("service", host)
		g.setFact("port", port)
		g.setFact("ports", strings.Join(sp.ports, ", "))
		g.setFact("caller", caller)
		out = append(out, g)
	}
	return out
}
