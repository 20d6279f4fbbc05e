package analyst

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	// A caller's failing calls to the Service's cluster IP on the port
	// its pods no longer serve (and the lines a log search found of them)
	// are its consequence, whoever logs them.
	related: func(h *Hypothesis, f *Finding) bool {
		ip, tp := h.fact("cluster_ip"), h.fact("target_port")
		if ip == "" || tp == "" {
			return false
		}
		return strings.Contains(f.fact("line")+" "+f.fact("target"), ip+":"+h.fact("service_port"))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "port") || strings.Contains(t, "listen") || strings.Contains(t, "tls")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		if tp := h.fact("target_port"); tp != "" && h.fact("port_names") != "" {
			// A named targetPort no container declares: the endpoints
			// controller leaves every pod out of the Service's endpoints.
			d := fmt.Sprintf("service %s sends its traffic to the named targetPort %s, but no container of the pods of %s declares a port named %s (their ports: %s; a renamed port the Service was not updated for), so the Service gets no endpoints and every connection to it is refused although the pods are ready",
				h.fact("service"), tp, h.Subject, tp, h.fact("port_names"))
			if c := h.fact("refused"); c != "" {
				d += ": " + quote(ReadableLine(c), 220)
			}
			return d
		}
		if tp := h.fact("target_port"); tp != "" {
			d := fmt.Sprintf("service %s sends its traffic to targetPort %s, but the pods of %s listen on %s (their declared container ports), so every connection to them is refused although the pods are ready",
				h.fact("service"), tp, h.Subject, h.fact("ports"))
			if c := h.fact("refused"); c != "" {
				d += ": " + quote(ReadableLine(c), 220)
			}
			return d
		}
		if pr := h.fact("probe"); pr != "" {
			return fmt.Sprintf("the %s probe of %s checks port %s, but its container listens on %s (its declared ports), so the probe fails and the pods never become ready",
				pr, h.Subject, h.fact("port"), h.fact("ports"))
		}
		return fmt.Sprintf("%s connects to %s on port %s, a port that service %s does not serve (its ports: %s), so the connection cannot be made: the listener on port %s is gone or was moved",
			h.Subject, h.fact("service"), h.fact("port"), h.fact("service"), h.fact("ports"), h.fact("port"))
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if tp := h.fact("target_port"); tp != "" && h.fact("port_names") != "" {
			r.high("Set the targetPort of service %s to a port name its pods declare (%s), in the release's values or the Service itself, so that its endpoints are filled again", h.fact("service"), h.fact("port_names"))
			r.rollback()
			r.low("Check a Service's named targetPort against its pods' container port names when a chart renames ports")
			return
		}
		if tp := h.fact("target_port"); tp != "" {
			r.high("Set the targetPort of service %s to the port its pods listen on (%s), or better to the container port's name, so that they cannot drift apart", h.fact("service"), h.fact("ports"))
			r.rollback()
			r.low("Check a Service's targetPort against its pods' container ports when a release changes the listen port")
			return
		}
		if pr := h.fact("probe"); pr != "" {
			r.rollback()
			r.high("Point the %s probe of %s at the port its server listens on (%s), or name the port in the probe so they cannot drift apart", pr, h.Subject, h.fact("ports"))
			r.low("Review probes with the ports when a server's listen address changes")
			return
		}
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

	var out []Finding
	seen := map[string]bool{}
	out = append(out, probePortMismatch(ev, found)...)
	out = append(out, targetPortMismatch(ev, found)...)
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

// probePortMismatch finds probes failing against a port their container
// does not declare: the kubelet checks a port nothing listens on.
func probePortMismatch(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, f := range found {
		if f.Kind != KindProbeFailure && f.Kind != KindLivenessKill || !strings.HasPrefix(f.Object, "pod ") || seen[f.Subject] {
			continue
		}
		key := strings.TrimPrefix(f.Object, "pod ")
		var p *corev1.Pod
		for i := range ev.K8s.Pods {
			if q := &ev.K8s.Pods[i]; q.Namespace+"/"+q.Name == key {
				p = q
			}
		}
		if p == nil {
			continue
		}
		// Ports need not be declared: the mismatch counts only when the
		// process runs (no crash, no restart) and refuses the probe's
		// connection, so nothing listens on the port it checks.
		if !strings.Contains(strings.ToLower(f.fact("message")), "connection refused") {
			continue
		}
		kind := orWord(f.fact("probe"), "readiness")
		for _, c := range p.Spec.Containers {
			if !runsSteadily(p, c.Name) {
				continue
			}
			probe := map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe}[kind]
			port, declared := probePort(probe, c.Ports)
			if port == "" && probe != nil {
				// The kubelet's message names the port it checked.
				if m := findSubmatch(probeTargetRE, f.fact("message")); m != nil {
					port = m[1]
				}
			}
			if port == "" || len(c.Ports) == 0 || slices.Contains(declared, port) {
				continue
			}
			seen[f.Subject] = true
			var ports []string
			for _, cp := range c.Ports {
				ports = append(ports, fmt.Sprintf("%d/%s", cp.ContainerPort, orWord(string(cp.Protocol), "TCP")))
			}
			g := Finding{Kind: KindPortMismatch, Subject: f.Subject, Object: f.Object, Namespace: f.Namespace, Time: f.Time, Severity: SevCritical,
				Weight: 0.9, Source: SrcKubernetes, Related: f.Related}
			g.Summary = fmt.Sprintf("the %s probe of %s checks port %s; container %s declares %s", kind, f.Subject, port, c.Name, strings.Join(ports, ", "))
			g.Evidence = append([]string{fmt.Sprintf("container %s of %s declares port %s; its %s probe checks port %s", c.Name, key, strings.Join(ports, ", "), kind, port)}, f.Evidence...)
			if len(g.Evidence) > 3 {
				g.Evidence = g.Evidence[:3]
			}
			g.setFact("probe", kind)
			g.setFact("port", port)
			g.setFact("ports", strings.Join(ports, ", "))
			out = append(out, g)
			break
		}
	}
	return out
}

// runsSteadily reports whether a pod's container runs without having
// crashed or restarted (a pod row without container states counts).
func runsSteadily(p *corev1.Pod, name string) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.RestartCount == 0 && cs.State.Waiting == nil && cs.State.Terminated == nil
		}
	}
	return p.Status.Phase == corev1.PodRunning
}

// probeTargetRE reads the port a failed HTTP or TCP probe checked from
// the kubelet's message: Get "http://10.244.2.57:8080/healthz": dial tcp
// 10.244.2.57:8080: connect: connection refused.
var probeTargetRE = regexp.MustCompile(`(?:https?://|dial tcp )\[?[\w.:-]*?\]?:(\d{2,5})\b`)

// probePort is the port a probe checks (a named port resolved against
// the container's ports), with the container's port numbers.
func probePort(p *corev1.Probe, ports []corev1.ContainerPort) (string, []string) {
	var declared []string
	for _, cp := range ports {
		declared = append(declared, strconv.Itoa(int(cp.ContainerPort)))
	}
	if p == nil {
		return "", declared
	}
	var port intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		port = p.HTTPGet.Port
	case p.TCPSocket != nil:
		port = p.TCPSocket.Port
	default:
		return "", declared
	}
	if port.Type == intstr.String {
		for _, cp := range ports {
			if cp.Name == port.StrVal {
				return strconv.Itoa(int(cp.ContainerPort)), declared
			}
		}
		return "", declared // a name the container does not declare: the kubelet says so itself
	}
	if port.IntVal == 0 {
		return "", declared
	}
	return strconv.Itoa(int(port.IntVal)), declared
}

// targetPortMismatch finds Services whose targetPort no container of the
// pods they select declares (a number not among the containerPorts, a name
// no port carries): the Service's endpoints point at a port nothing listens
// on, so connections are refused while the pods, probed on their real
// port, stay ready.
func targetPortMismatch(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	// The Services of other namespaces that failing calls dial by their
	// cluster IP are checked with the pods they select.
	allPods := append(slices.Clone(ev.K8s.Pods), ev.K8s.CalledPods...)
	for _, s := range append(slices.Clone(ev.K8s.Services), ev.K8s.CalledServices...) {
		sel := s.Service.Spec.Selector
		if len(sel) == 0 {
			continue
		}
		selects := func(labels map[string]string) bool {
			for k, v := range sel {
				if labels[k] != v {
					return false
				}
			}
			return true
		}
		var pods []*corev1.Pod
		for i := range allPods {
			p := &allPods[i]
			if p.Namespace == s.Service.Namespace && p.Status.Phase == corev1.PodRunning && selects(p.Labels) {
				pods = append(pods, p)
			}
		}
		// Pods read from a table carry no spec: the pod template of the
		// Deployment whose pods the Service selects says the same.
		for i := range ev.K8s.Deployments {
			d := &ev.K8s.Deployments[i]
			if d.Namespace != s.Service.Namespace || !selects(d.Spec.Template.Labels) {
				continue
			}
			p := &corev1.Pod{Spec: d.Spec.Template.Spec}
			p.Name, p.Namespace, p.Labels = d.Name, d.Namespace, d.Spec.Template.Labels
			p.OwnerReferences = nil
			p.CreationTimestamp = d.CreationTimestamp
			pods = append(pods, p)
		}
		if len(pods) == 0 {
			continue
		}
		nums, names := map[string]bool{}, map[string]bool{}
		var named []string // "web 8080"
		// A port read from describe text or a table has no name there: a
		// named targetPort cannot be checked against it (unknown, not
		// missing).
		unnamed := false
		var declared []string
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				for _, cp := range c.Ports {
					n := strconv.Itoa(int(cp.ContainerPort))
					if !nums[n] {
						declared = append(declared, n)
					}
					nums[n] = true
					if cp.Name != "" {
						if !names[cp.Name] {
							named = append(named, cp.Name+" "+n)
						}
						names[cp.Name] = true
					} else {
						unnamed = true
					}
				}
			}
		}
		if len(declared) == 0 {
			continue // ports not declared: nothing to compare with
		}
		for _, sp := range s.Service.Spec.Ports {
			tp := sp.TargetPort
			if tp.Type == intstr.Int && tp.IntVal == 0 {
				tp = intstr.FromInt32(sp.Port)
			}
			if tp.Type == intstr.String && (names[tp.StrVal] || unnamed) || tp.Type == intstr.Int && nums[strconv.Itoa(int(tp.IntVal))] {
				continue
			}
			wl := WorkloadOfPod(pods[0])
			if pods[0].Status.Phase == "" {
				wl = pods[0].Name // a Deployment's template
			}
			f := Finding{Kind: KindPortMismatch, Subject: wl, Object: "service " + s.Service.Namespace + "/" + s.Service.Name, Namespace: s.Service.Namespace,
				Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes, Related: []string{s.Service.Name}}
			f.setFact("service", s.Service.Name)
			f.setFact("target_port", tp.String())
			f.setFact("service_port", strconv.Itoa(int(sp.Port)))
			if ip := s.Service.Spec.ClusterIP; net.ParseIP(ip) != nil {
				f.setFact("cluster_ip", ip)
				f.Related = append(f.Related, ip)
			}
			f.setFact("ports", strings.Join(declared, ", "))
			if tp.Type == intstr.String && len(named) > 0 {
				f.setFact("port_names", strings.Join(named, ", "))
			}
			f.Evidence = []string{fmt.Sprintf("service %s/%s: port %d → targetPort %s; the pods it selects (%s) declare container ports %s",
				s.Service.Namespace, s.Service.Name, sp.Port, tp.String(), pods[0].Name, strings.Join(declared, ", "))}
			// Connections refused on that port (a proxy's upstream, a
			// caller) show it; the first such line dates it.
			for _, g := range found {
				if g.Kind != KindConnRefused {
					continue
				}
				l := g.fact("line")
				if strings.Contains(l, ":"+tp.String()) || strings.HasSuffix(g.fact("target"), ":"+tp.String()) {
					f.setFact("refused", l)
					f.Time = earliest(f.Time, g.Time)
					if len(f.Evidence) < 3 {
						f.Evidence = append(f.Evidence, g.Evidence...)
					}
				}
			}
			// Since the latest release of the workload (the port moved with
			// it), else since its pods were created.
			refused := !f.Time.IsZero()
			if f.Time.IsZero() {
				for _, g := range found {
					if infoOf(g.Kind).class == classChange && g.Subject == wl && g.Time.After(f.Time) && ev.Window.recent(g.Time) && !g.Time.After(ev.Window.End) {
						f.Time = g.Time.Add(time.Second)
					}
				}
			}
			// A port a container does not declare may still be served
			// (declaring ports is informational): without refused
			// connections or a release that moved it, it is no finding.
			if f.Time.IsZero() {
				continue
			}
			// Its pods answering clients since then (their access log)
			// show the Service reaches them: the reading is wrong (a port
			// the listing did not name), not the traffic.
			if _, ok := servesClients(ev, wl, s.Service.Namespace, f.Time); ok {
				continue
			}
			if !refused {
				f.Weight = 0.8
			}
			f.Summary = fmt.Sprintf("service %s targets port %s, but its pods listen on %s", s.Service.Name, tp.String(), strings.Join(declared, ", "))
			out = append(out, f)
		}
	}
	return out
}
