package analyst

import (
	"context"
	"net"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// A client that dials a Service by its cluster IP ("dial tcp
// 10.96.41.208:9090: connect: connection refused", "connect to
// 10.0.171.12:5432 failed: Connection timed out") names no Service: the
// Service that owns the IP, in whatever namespace, is what it calls, and
// that Service's ports and pods say why the call fails (a targetPort no
// container listens on any more).

// failedDialRE marks a log line of a call that could not be made.
var failedDialRE = regexp.MustCompile(`(?i)connection refused|connect(?:ion)? (?:timed out|timeout)|i/o timeout|no route to host|network is unreachable|connection reset|ECONNREFUSED|ETIMEDOUT|EHOSTUNREACH|Unavailable`)

// libpqServerRE reads the address of libpq's "connection to server at
// "10.96.3.4", port 5432 failed".
var libpqServerRE = regexp.MustCompile(`server at "([0-9a-fA-F.:]+)", port \d+`)

// dialedIPs are the IP addresses the failing calls of the mined logs dial.
func dialedIPs(sets []LogSet) []string {
	var out []string
	seen := map[string]bool{}
	for _, set := range sets {
		for _, t := range set.Templates {
			if !matchLine(failedDialRE, t.Example) {
				continue
			}
			host, _, err := net.SplitHostPort(DependencyTarget(t.Example))
			if err != nil {
				// libpq: connection to server at "10.96.3.4", port 5432 failed
				m := findSubmatch(libpqServerRE, t.Example)
				if m == nil {
					continue
				}
				host = m[1]
			}
			if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() || seen[host] {
				continue
			}
			seen[host] = true
			out = append(out, host)
		}
	}
	return out
}

// serviceOfIP is the Service among svcs whose cluster IP is ip.
func serviceOfIP(svcs []ServiceState, ip string) *ServiceState {
	for i := range svcs {
		s := &svcs[i].Service
		if s.Spec.ClusterIP == ip || slices.Contains(s.Spec.ClusterIPs, ip) {
			return &svcs[i]
		}
	}
	return nil
}

// gatherDialedServices finds the Services, of any namespace, whose cluster
// IPs the failing calls dial, and the pods they select (with their
// container ports): one listing of the Services of all namespaces, and of
// the pods of each namespace found.
func (g *gatherer) gatherDialedServices(ctx context.Context, sp specialist) {
	if !sp.run.Has("list_services") || !sp.run.Has("list_pods") {
		return
	}
	var ips []string
	for _, ip := range dialedIPs(g.logSets) {
		if serviceOfIP(g.k8s.Services, ip) == nil && serviceOfIP(g.k8s.CalledServices, ip) == nil {
			ips = append(ips, ip)
		}
	}
	if len(ips) == 0 || ctx.Err() != nil {
		return
	}
	out, ok := g.call(ctx, sp, "list_services", map[string]any{"namespace": "all"})
	if !ok {
		return
	}
	all := serviceStates(out)
	listed := map[string]bool{g.sc.Namespace: true}
	for _, ip := range ips {
		s := serviceOfIP(all, ip)
		if s == nil {
			continue
		}
		ns := s.Service.Namespace
		if ns == g.sc.Namespace || ns == "" {
			// The namespace under investigation: its Services are listed
			// with it.
			if serviceOfIP(g.k8s.Services, ip) == nil {
				g.k8s.Services = append(g.k8s.Services, *s)
			}
			continue
		}
		g.k8s.CalledServices = append(g.k8s.CalledServices, *s)
		if listed[ns] || ctx.Err() != nil {
			continue
		}
		listed[ns] = true
		out, ok := g.call(ctx, sp, "list_pods", map[string]any{"namespace": ns})
		if !ok {
			continue
		}
		pods, _ := as[[]corev1.Pod](out)
		for i := range pods {
			if selectsPod(s.Service.Spec.Selector, &pods[i]) {
				g.k8s.CalledPods = append(g.k8s.CalledPods, pods[i])
			}
		}
	}
}

// selectsPod reports whether a Service's selector selects pod p (an empty
// selector selects none: its endpoints are managed by hand).
func selectsPod(sel map[string]string, p *corev1.Pod) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if p.Labels[k] != v {
			return false
		}
	}
	return true
}
