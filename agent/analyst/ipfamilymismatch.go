package analyst

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A Service of one IP family in front of a server that listens on the
// other. A cluster moving to IPv6 (or dual-stack) recreates Services with
// ipFamilyPolicy SingleStack and ipFamilies [IPv6]: their ClusterIP and
// their EndpointSlices (addressType IPv6) are IPv6 addresses, and DNS
// answers AAAA only. A server that binds 0.0.0.0 (Fastify's and Express's
// "host: '0.0.0.0'", uvicorn --host 0.0.0.0, gunicorn -b 0.0.0.0:8000)
// listens on IPv4 only, so every connection through the Service, to its
// IPv6 ClusterIP or to a pod's IPv6 address, is refused: "connect to
// fd00:10:96::3a1f port 8080 ... failed: Connection refused", [Errno 111],
// ECONNREFUSED. The pods stay Ready, because the kubelet probes the pod's
// first (IPv4) address, and a call to a pod's IPv4 address answers. Read
// from the Service (its ipFamilies, or an IPv6 ClusterIP in a listing),
// the server's listening sockets (ss -ltn, netstat -tln: 0.0.0.0:PORT and
// no [::]:PORT, *:PORT or :::PORT) or its own startup line ("Server
// listening at http://0.0.0.0:8080"), and the callers' refused
// connections to the Service.

// KindIPFamilyMismatch is a Service of one IP family in front of a server
// listening on the other only.
const KindIPFamilyMismatch Kind = "ip_family_mismatch"

var ipFamilyMismatch = &mechanism{
	kind:   KindIPFamilyMismatch,
	class:  classCause,
	label:  "Service IP family the server does not listen on",
	detect: detectIPFamilyMismatch,
	// The callers' refused connections to the Service are what the
	// mismatch produces.
	related: func(h *Hypothesis, f *Finding) bool {
		svc := h.fact("service")
		if f.Kind != KindConnRefused && f.Kind != KindLogErrors && f.Kind != KindErrorRate && f.Kind != KindBacklog {
			return false
		}
		if strings.EqualFold(f.fact("dependency"), svc) || strings.EqualFold(f.fact("target"), svc) {
			return true
		}
		return slices.Contains(strings.Split(h.fact("callers"), ", "), f.Subject)
	},
	// Only a change of the Service's addresses (its IP family, a
	// migration to IPv6 or dual-stack) or of the server's listen address
	// explains it; a caller's deploy does not.
	strictTriggers: true,
	fitsChange:     changeSays(ipFamilyChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		wl := orWord(h.fact("workload"), h.Subject)
		svc, fam := orWord(h.fact("service"), wl), orWord(h.fact("family_short"), "IPv6")
		d := fmt.Sprintf("the Service %s is %s%s but %s listens on %s only (IPv4%s)", svc, orWord(h.fact("family"), "IPv6 single-stack"), h.wrapped(" (", "service_shown", ")"),
			wl, orWord(h.fact("listen"), "an IPv4 address"), h.clause(": ", "listen_shown"))
		d += fmt.Sprintf(", so every connection through the Service, to its %s ClusterIP or to the pods' %s addresses, is refused", fam, fam)
		if c := h.fact("callers"); c != "" {
			d += fmt.Sprintf(": %s gets connection refused from %s", c, svc)
		}
		d += h.quoteClause(" (", "refused_line", 160)
		if h.fact("refused_line") != "" {
			d += ")"
		}
		d += fmt.Sprintf(". The pods stay Ready because the kubelet probes their IPv4 address, which %s does answer", wl)
		d += h.clause(" (", "ipv4_call")
		if h.fact("ipv4_call") != "" {
			d += ")"
		}
		if c := h.Trigger; c != nil {
			d += fmt.Sprintf("; the change at %s moved the Service to %s: %s", hm(c.Time), fam, truncate(c.fact("description"), 200))
		}
		return d + fmt.Sprintf(". %s itself is healthy: its address family and the Service's do not meet", wl)
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		wl := orWord(h.fact("workload"), h.Subject)
		svc := orWord(h.fact("service"), wl)
		r.high("Make %s listen on both families (bind \"::\" instead of 0.0.0.0, e.g. host: '::' or --host ::), or recreate the Service %s with ipFamilyPolicy PreferDualStack (or back on IPv4) until it does", wl, svc)
		r.med("Before moving a Service to IPv6 single-stack, check its pods' listening sockets (kubectl exec ... ss -ltn shows [::]:PORT or *:PORT)")
		r.low("Probe %s through its Service's address family (a blackbox check of the ClusterIP), not only the pod's first IP", wl)
	},
}

var (
	// ipFamilyChangeRE is a change of a Service's address family or a
	// server's listen address.
	ipFamilyChangeRE = regexp.MustCompile(`(?i)ipv6|ip ?famil|single-?stack|dual-?stack|listen address|bind address|\bhost: ?['"]?(?:0\.0\.0\.0|::)`)
	// ipv4ListenLineRE is a server's startup line naming the IPv4
	// wildcard it listens on.
	ipv4ListenLineRE = regexp.MustCompile(`(?i)\b(?:listen(?:ing)?|running|serving|started|bound|bind(?:ing)?)\b[^\n]{0,40}?(?:^|[\s/=("'@])(?:https?://)?(0\.0\.0\.0):(\d{2,5})\b`)
	// listenSocketRE is a listening socket in ss -ltn ("LISTEN 0 511
	// 0.0.0.0:8080 0.0.0.0:*") or netstat -tln ("tcp 0 0 0.0.0.0:8080
	// 0.0.0.0:* LISTEN", "tcp6 0 0 :::8080 :::* LISTEN"): its local
	// address and port.
	listenSocketRE = regexp.MustCompile(`^(?:LISTEN\s+\d+\s+\d+\s+|tcp6?\s+\d+\s+\d+\s+)(\S+):(\d+)\s+\S+(?:\s+LISTEN)?(?:\s|$)`)
	// refusedV6RE is a refused connection to an IPv6 address (curl -v,
	// a Go or Node error).
	refusedV6RE = regexp.MustCompile(`(?i)(?:connect to \[?([0-9a-f:]*:[0-9a-f:]+)\]? port \d+.*connection refused|dial tcp \[([0-9a-f:]+)\]:\d+: connect: connection refused|ECONNREFUSED \[?([0-9a-f:]*:[0-9a-f:]+)\]?:\d+)`)
)

// serviceFamily is the single IP family a Service's addresses belong to:
// "IPv6" or "IPv4" from its ipFamilies (SingleStack or one family
// listed), else from its ClusterIPs; "" for a dual-stack or headless one.
func serviceFamily(s *corev1.Service) (family, shown string) {
	if len(s.Spec.IPFamilies) == 1 {
		shown = "ipFamilies [" + string(s.Spec.IPFamilies[0]) + "]"
		if p := s.Spec.IPFamilyPolicy; p != nil {
			shown = "ipFamilyPolicy " + string(*p) + ", " + shown
		}
		if ip := s.Spec.ClusterIP; ip != "" && ip != "None" {
			shown += ", ClusterIP " + ip
		}
		return string(s.Spec.IPFamilies[0]), shown
	}
	if len(s.Spec.IPFamilies) > 1 {
		return "", ""
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	fam := ""
	for _, ip := range ips {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return "", ""
		}
		f := "IPv4"
		if a.Is6() && !a.Is4In6() {
			f = "IPv6"
		}
		if fam != "" && fam != f {
			return "", ""
		}
		fam = f
	}
	if fam == "" {
		return "", ""
	}
	return fam, "ClusterIP " + strings.Join(ips, ", ")
}

// listenFamilies reads the listening sockets of one ss or netstat output:
// by port, whether a socket accepts IPv4 and whether one accepts IPv6
// (a wildcard "*", "[::]" or ":::" accepts both on Linux unless the
// server set IPV6_V6ONLY), with the line of an IPv4-only one.
func listenFamilies(lines []string) map[int]*listenPort {
	out := map[int]*listenPort{}
	for _, l := range lines {
		m := findSubmatch(listenSocketRE, strings.TrimSpace(l))
		if m == nil {
			continue
		}
		port, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		addr := strings.Trim(m[1], "[]")
		p := out[port]
		if p == nil {
			p = &listenPort{}
			out[port] = p
		}
		switch {
		case addr == "*" || addr == "::" || addr == "" || addr == ":":
			p.v4, p.v6 = true, true
		case strings.Contains(addr, ":"):
			a, err := netip.ParseAddr(strings.Split(addr, "%")[0])
			if err == nil && a.IsLoopback() {
				continue
			}
			p.v6 = true
		default:
			a, err := netip.ParseAddr(strings.Split(addr, "%")[0])
			if err == nil && a.IsLoopback() {
				continue
			}
			p.v4 = true
			if p.line == "" {
				p.line = strings.Join(strings.Fields(l), " ")
				p.addr = addr
			}
		}
	}
	return out
}

type listenPort struct {
	v4, v6     bool
	line, addr string
}

// detectIPFamilyMismatch finds an IPv6 single-stack Service whose server
// listens on IPv4 only, with callers refused.
func detectIPFamilyMismatch(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	svcs := append(append([]ServiceState(nil), ev.K8s.Services...), ev.K8s.CalledServices...)
	seen := map[string]bool{}
	for i := range svcs {
		s := &svcs[i].Service
		fam, shown := serviceFamily(s)
		if fam != "IPv6" || seen[s.Namespace+"/"+s.Name] {
			continue
		}
		seen[s.Namespace+"/"+s.Name] = true
		pods := servicePods(ev.K8s.Pods, s)
		ports := servicePorts(s, pods)
		wl := s.Name
		if len(pods) > 0 {
			wl = WorkloadOfPod(&pods[0])
		}
		// How the server listens: its sockets, else its startup line.
		listen, listenShown := "", ""
		for _, c := range ev.Commands {
			if !c.Exec || !execInPods(c, pods, wl) {
				continue
			}
			for port, p := range listenFamilies(c.Lines) {
				if !slices.Contains(ports, port) {
					continue
				}
				if p.v6 {
					listen, listenShown = "", ""
					break
				}
				listen = p.addr + ":" + strconv.Itoa(port)
				listenShown = fmt.Sprintf("%s in %s shows %q and no [::]:%d", firstWord(c.Run), orWord(c.Pod, c.Target), p.line, port)
			}
			if listen != "" {
				break
			}
		}
		var line string
		for _, set := range ev.Logs {
			if set.Host || set.Subject != wl {
				continue
			}
			for _, t := range set.Templates {
				if m := findSubmatch(ipv4ListenLineRE, t.Example); m != nil && !matchLine(listenSocketRE, strings.TrimSpace(t.Example)) {
					if p, _ := strconv.Atoi(m[2]); slices.Contains(ports, p) || len(ports) == 0 {
						line = strings.TrimSpace(t.Example)
						break
					}
				}
			}
			if line != "" {
				break
			}
		}
		if line == "" {
			line = listenLineInCommands(ev.Commands, pods, wl, ports)
		}
		if listen == "" && line != "" {
			m := findSubmatch(ipv4ListenLineRE, line)
			listen, listenShown = m[1]+":"+m[2], fmt.Sprintf("its log says %s", quote(ReadableLine(line), 160))
		} else if listen != "" && line != "" {
			listenShown += fmt.Sprintf("; its log says %s", quote(ReadableLine(line), 160))
		}
		if listen == "" {
			continue
		}
		// The callers refused.
		callers, refused, at := refusedCallers(ev, found, s)
		if len(callers) == 0 && refused == "" {
			continue
		}
		f := Finding{Kind: KindIPFamilyMismatch, Subject: wl, Namespace: s.Namespace, Severity: SevCritical, Weight: 0.93,
			Source: SrcKubernetes, Object: "Service " + s.Name, Time: at}
		if t := s.CreationTimestamp.Time; ev.Window.recent(t) && (f.Time.IsZero() || t.Before(f.Time)) {
			f.Time = t
		}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.setFact("service", s.Name)
		f.setFact("workload", wl)
		f.setFact("family", "IPv6 single-stack")
		f.setFact("family_short", "IPv6")
		f.setFact("service_shown", shown)
		f.setFact("listen", listen)
		f.setFact("listen_shown", listenShown)
		f.setFact("callers", strings.Join(callers, ", "))
		f.setFact("refused_line", refused)
		f.setFact("affected", strings.Join(append([]string{wl}, callers...), ", "))
		if c := ipv4Call(ev.Commands, pods, ports); c != "" {
			f.setFact("ipv4_call", c)
		}
		f.Related = callers
		f.Evidence = append(f.Evidence, fmt.Sprintf("Service %s: %s", s.Name, shown))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s listens on %s only: %s", wl, listen, listenShown))
		if refused != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("connection to %s refused: %s", s.Name, quote(refused, 200)))
		}
		f.Summary = fmt.Sprintf("Service %s is IPv6 single-stack, %s listens on %s only", s.Name, wl, listen)
		out = append(out, f)
	}
	return out
}

// servicePods are the pods a Service selects, by their labels or, when the
// listing shows none, by the workload its name names.
func servicePods(pods []corev1.Pod, s *corev1.Service) []corev1.Pod {
	var out []corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != "" && s.Namespace != "" && p.Namespace != s.Namespace {
			continue
		}
		if len(p.Labels) > 0 && len(s.Spec.Selector) > 0 {
			match := true
			for k, v := range s.Spec.Selector {
				match = match && p.Labels[k] == v
			}
			if match {
				out = append(out, *p)
			}
			continue
		}
		if WorkloadOfPod(p) == s.Name {
			out = append(out, *p)
		}
	}
	return out
}

// servicePorts are the ports a Service's pods serve it on: its target
// ports, by number or by the name of a container port, else its ports.
func servicePorts(s *corev1.Service, pods []corev1.Pod) []int {
	var out []int
	for _, sp := range s.Spec.Ports {
		switch {
		case sp.TargetPort.IntValue() > 0:
			out = append(out, sp.TargetPort.IntValue())
		case sp.TargetPort.String() != "" && sp.TargetPort.String() != "0":
			for _, p := range pods {
				for _, c := range p.Spec.Containers {
					for _, cp := range c.Ports {
						if cp.Name == sp.TargetPort.String() {
							out = appendPort(out, int(cp.ContainerPort))
						}
					}
				}
			}
			out = appendPort(out, int(sp.Port))
		default:
			out = appendPort(out, int(sp.Port))
		}
	}
	return out
}

// execInPods reports whether a command ran in one of the pods (or the
// workload kubectl exec named).
func execInPods(c evidence.CommandOutput, pods []corev1.Pod, wl string) bool {
	if c.Pod != "" {
		if slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == c.Pod }) {
			return true
		}
		return workloadOfName(c.Pod) == wl
	}
	_, name, _ := strings.Cut(c.Target, "/")
	return name == wl
}

// listenLineInCommands is a startup line of the server printed by a
// kubectl logs in a transcript and kept as text.
func listenLineInCommands(cmds []evidence.CommandOutput, pods []corev1.Pod, wl string, ports []int) string {
	for _, c := range cmds {
		if c.Exec || !strings.Contains(c.Command, " logs ") {
			continue
		}
		if !strings.Contains(c.Command, wl) {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(ipv4ListenLineRE, l); m != nil && !matchLine(listenSocketRE, strings.TrimSpace(l)) {
				if p, _ := strconv.Atoi(m[2]); slices.Contains(ports, p) {
					return strings.TrimSpace(l)
				}
			}
		}
	}
	return ""
}

// refusedCallers are the workloads whose connections to the Service are
// refused (findings of refused connections naming it), a line saying so
// (a refused IPv6 connection in a transcript, else the first caller's),
// and when the refusals began.
func refusedCallers(ev *Gathered, found []Finding, s *corev1.Service) (callers []string, line string, at time.Time) {
	for i := range found {
		f := &found[i]
		if f.Kind != KindConnRefused && Kind(f.fact("line_kind")) != KindConnRefused {
			continue
		}
		dep := orWord(f.fact("dependency"), f.fact("target"))
		if !strings.EqualFold(dep, s.Name) && !strings.Contains(strings.ToLower(f.fact("line")), s.Name+".") {
			continue
		}
		who := orWord(f.fact("caller"), f.Subject)
		if who == s.Name {
			continue
		}
		callers = appendNew(callers, who)
		at = earliest(at, f.Time)
		if line == "" {
			line = ReadableLine(f.fact("line"))
		}
	}
	ips := append([]string{s.Spec.ClusterIP}, s.Spec.ClusterIPs...)
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(refusedV6RE, l)
			if m == nil {
				continue
			}
			ip := m[1] + m[2] + m[3]
			if slices.Contains(ips, ip) || strings.Contains(c.Run, s.Name) {
				return callers, strings.TrimLeft(strings.TrimSpace(l), "* "), at
			}
		}
	}
	return callers, line, at
}

// ipv4Call is a call in a transcript to one of the pods' IPv4 addresses on
// the served port that got an answer.
func ipv4Call(cmds []evidence.CommandOutput, pods []corev1.Pod, ports []int) string {
	for _, c := range cmds {
		if c.ExitCode > 0 || len(c.Lines) == 0 {
			continue
		}
		for _, p := range pods {
			ip := p.Status.PodIP
			if ip == "" || strings.Contains(ip, ":") {
				continue
			}
			for _, port := range ports {
				target := ip + ":" + strconv.Itoa(port)
				if strings.Contains(c.Run, target) && !strings.Contains(strings.ToLower(strings.Join(c.Lines, " ")), "refused") {
					return fmt.Sprintf("a call to the pod's IPv4 address %s answers: %s", target, quote(truncate(strings.TrimSpace(c.Lines[0]), 100), 120))
				}
			}
		}
	}
	return ""
}

func appendPort(ports []int, p int) []int {
	if slices.Contains(ports, p) {
		return ports
	}
	return append(ports, p)
}
