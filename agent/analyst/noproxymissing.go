package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// In-cluster calls sent to the egress proxy: a workload's environment sets
// HTTP_PROXY/HTTPS_PROXY (from a shared ConfigMap, a platform default) and
// its NO_PROXY does not list the cluster's domains (.svc, .cluster.local).
// HTTP clients that honour these variables (Python requests, Go's
// net/http, curl, Node's proxy agents, the JVM's with
// -Dhttp.nonProxyHosts) then send even a call to another Service through
// the proxy, which refuses destinations it does not allow (squid's 403
// TCP_DENIED, a 407 asking for credentials) or cannot reach them (502,
// 503). The caller logs a 403 or 503 from what looks like its callee, the
// callee sees none of these requests and looks healthy. New pods pick the
// variables at start: the change to them shows when the pods restart.

// KindNoProxyMissing is a workload whose in-cluster calls go through the
// egress proxy because its NO_PROXY lacks the cluster's domains.
const KindNoProxyMissing Kind = "no_proxy_missing"

var (
	// An environment variable naming a proxy, or the hosts it skips.
	proxyVarRE   = regexp.MustCompile(`^(?i)(?:export\s+)?(https?_proxy|all_proxy)\s*[=:]\s*"?(\S+?)"?$`)
	noProxyVarRE = regexp.MustCompile(`^(?i)(?:export\s+)?no_proxy\s*[=:]\s*"?(\S*?)"?$`)
	// A cluster-internal host name.
	clusterHostRE = regexp.MustCompile(`(?i)\b([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:svc\.cluster\.local|svc|cluster\.local))\b`)
	// A proxy's log of a request for a cluster host that it refused:
	// squid ("GET http://x.svc.cluster.local:8080/… HTTP/1.1" 403 …
	// TCP_DENIED), a CONNECT refused, Envoy's or nginx's forward proxy.
	proxiedClusterRE = regexp.MustCompile(`(?i)"(?:GET|POST|PUT|PATCH|DELETE|HEAD|CONNECT) (?:https?://)?[a-z0-9][a-z0-9.-]*\.(?:svc\.cluster\.local|svc|cluster\.local)(?::\d+)?\S* HTTP/[\d.]+" (40[37]|50[234])\b`)
	// A change to the proxy settings.
	proxyChangeRE = regexp.MustCompile(`(?i)proxy|no_proxy|egress`)
	// A client's failed call: an HTTP error status the proxy answers with.
	proxyStatusRE = regexp.MustCompile(`(?i)\b(403|407|502|503)\b|Forbidden|Proxy Authentication Required|Tunnel connection failed|Unable to tunnel through proxy|ERR_ACCESS_DENIED`)
)

var noProxyMissing = &mechanism{
	kind:           KindNoProxyMissing,
	class:          classCause,
	label:          "in-cluster calls sent to the egress proxy (NO_PROXY lacks the cluster domains)",
	detect:         detectNoProxyMissing,
	strictTriggers: true,
	fitsChange:     changeSays(proxyChangeRE),
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject && f.fact("caller") != h.Subject {
			return false
		}
		switch f.Kind {
		case KindAuth, KindLogErrors, KindErrorRate, KindConnRefused, KindTimeout:
			return true
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		target := orWord(h.fact("target"), "other Services")
		d := fmt.Sprintf("%s sends its in-cluster calls to the egress proxy %s: the NO_PROXY its pods run with (%s) does not list the cluster's domains (.svc, .cluster.local), so its HTTP client sends the call to %s through the proxy",
			h.Subject, orWord(h.fact("proxy"), "it is configured with"), orWord(h.fact("no_proxy"), "empty"), target)
		if r := h.fact("refusal"); r != "" {
			d += ", which refuses it: " + quote(ReadableLine(r), 200)
		} else {
			d += ", which refuses it"
		}
		if c := h.fact("contrast"); c != "" {
			d += fmt.Sprintf(". %s", c)
		}
		if cal := h.fact("callee"); cal != "" {
			d += fmt.Sprintf(". %s itself is healthy: the calls never reach it", cal)
		}
		d += "; the pods read these variables at start, so the change shows as they restart"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		src := orWord(h.fact("source"), "the proxy settings of "+h.Subject)
		r.high("Add the cluster domains back to NO_PROXY in %s (.svc,.cluster.local, and the cluster's Service and pod CIDRs) and restart %s so that its pods read it", src, h.Subject)
		r.med("Until then, set NO_PROXY on the Deployment of %s itself, or call the Service with the proxy bypassed", h.Subject)
		r.low("Check the shared proxy settings in CI: NO_PROXY must keep the cluster domains, tested by a call from a pod to an in-cluster Service")
	},
}

// proxyEnv is what a pod's environment says of its proxy.
type proxyEnv struct {
	pod, proxy, noProxy string
	set                 bool // a proxy is set
}

// readProxyEnv reads the proxy variables of an env listing.
func readProxyEnv(lines []string) proxyEnv {
	var e proxyEnv
	noSeen := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if m := findSubmatch(proxyVarRE, l); m != nil && m[2] != "" {
			e.set = true
			if e.proxy == "" {
				e.proxy = m[2]
			}
		}
		if m := findSubmatch(noProxyVarRE, l); m != nil && !noSeen {
			e.noProxy, noSeen = m[1], true
		}
	}
	return e
}

// bypassesCluster reports whether a NO_PROXY list keeps cluster host
// names off the proxy.
func bypassesCluster(noProxy string) bool {
	for _, d := range strings.Split(strings.ToLower(noProxy), ",") {
		if d = strings.TrimSpace(d); d == "*" {
			return true
		}
		d = strings.TrimPrefix(strings.TrimPrefix(d, "*"), ".")
		switch d {
		case "svc", "cluster.local", "svc.cluster.local", "local":
			return true
		}
	}
	return false
}

// detectNoProxyMissing finds workloads whose pods' environment sends
// cluster host names to a proxy, and whose calls to them fail.
func detectNoProxyMissing(ev *Gathered, found []Finding) []Finding {
	envs := map[string]proxyEnv{}
	var order []string
	var contrast string
	for _, c := range ev.Commands {
		if !c.Exec || !strings.Contains(strings.ToLower(c.Run+" "+c.Command), "env") {
			continue
		}
		e := readProxyEnv(c.Lines)
		if !e.set {
			continue
		}
		wl := workloadOfPodName(orWord(c.Pod, strings.TrimPrefix(c.Target, "deploy/")))
		e.pod = orWord(c.Pod, c.Target)
		if bypassesCluster(e.noProxy) {
			if contrast == "" {
				contrast = fmt.Sprintf("%s's pods run with NO_PROXY=%s, which keeps the cluster's domains off the proxy", wl, e.noProxy)
			}
			continue
		}
		if _, ok := envs[wl]; !ok {
			order = append(order, wl)
		}
		envs[wl] = e
	}
	// Proxy logs refusing cluster hosts.
	var refusal string
	var refusedAt time.Time
	refused := 0
	for i := range ev.Logs {
		for _, t := range ev.Logs[i].Templates {
			if t.Incident == 0 || !matchLine(proxiedClusterRE, t.Example) {
				continue
			}
			refused += t.Incident
			if on := orTime(t.FirstIncident, t.FirstSeen); refusal == "" || on.Before(refusedAt) {
				refusal, refusedAt = t.Example, on
			}
		}
	}
	var out []Finding
	for _, wl := range order {
		e := envs[wl]
		// Its calls to cluster hosts fail: its own log, or a curl from its
		// pod answered by the proxy.
		var fails []Finding
		target := ""
		for _, g := range found {
			if g.Subject != wl && g.fact("caller") != wl || infoOf(g.Kind).class == classChange {
				continue
			}
			l := g.fact("line")
			if m := findSubmatch(clusterHostRE, l); m != nil && matchLine(proxyStatusRE, l) {
				fails = append(fails, g)
				if target == "" {
					target = m[1]
				}
			}
		}
		curled := ""
		for _, c := range ev.Commands {
			if !c.Exec || workloadOfPodName(c.Pod) != wl || !strings.Contains(c.Run, "curl") || strings.Contains(c.Run, "noproxy") {
				continue
			}
			if m := findSubmatch(clusterHostRE, c.Run); m != nil && slices.ContainsFunc(c.Lines, func(l string) bool { return matchLine(proxyStatusRE, l) }) {
				curled = fmt.Sprintf("%s in %s: %s", strings.TrimSpace(c.Run), c.Pod, strings.Join(c.Lines, "; "))
				target = orWord(target, m[1])
			}
		}
		if len(fails) == 0 && curled == "" && refused == 0 {
			continue
		}
		f := Finding{Kind: KindNoProxyMissing, Subject: wl, Object: "pod " + e.pod, Namespace: ev.Scope.Namespace, Severity: SevCritical,
			Weight: 0.9, Source: SrcKubernetes}
		f.setFact("proxy", e.proxy)
		f.setFact("no_proxy", e.noProxy)
		f.setFact("target", ShortHost(target))
		f.setFact("contrast", contrast)
		f.Evidence = []string{fmt.Sprintf("the environment of %s: HTTP(S)_PROXY=%s, NO_PROXY=%s (no .svc or .cluster.local)", e.pod, e.proxy, e.noProxy)}
		if refusal != "" {
			f.setFact("refusal", refusal)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the proxy refused %d requests for cluster hosts, first: %s", refused, quote(ReadableLine(refusal), 200)))
		}
		if curled != "" {
			f.Evidence = append(f.Evidence, curled)
		}
		for _, g := range fails {
			f.Time = earliest(f.Time, g.Time)
			if len(f.Evidence) < 4 {
				f.Evidence = append(f.Evidence, g.Evidence...)
			}
		}
		f.Time = earliest(f.Time, refusedAt)
		if callee := ShortHost(target); callee != "" {
			if _, ok := servesClients(ev, callee, "", time.Time{}); ok {
				f.setFact("callee", callee)
			}
		}
		for _, ch := range ev.Changes {
			if matchLine(proxyChangeRE, ch.Description) && ch.Service != wl {
				if m := findSubmatch(configMapNameRE, ch.Description); m != nil {
					f.setFact("source", "ConfigMap "+m[1])
				}
			}
		}
		f.setFact("why", fmt.Sprintf("its pods' NO_PROXY (%s) sends cluster host names to the proxy %s", e.noProxy, e.proxy))
		f.Summary = fmt.Sprintf("%s's calls to %s go through the egress proxy %s (NO_PROXY lacks .svc/.cluster.local)", wl, orWord(target, "cluster Services"), e.proxy)
		out = append(out, f)
	}
	return out
}

// configMapNameRE is the ConfigMap a change names.
var configMapNameRE = regexp.MustCompile(`(?i)ConfigMap[ /]+([a-z0-9][a-z0-9.-]*)`)
