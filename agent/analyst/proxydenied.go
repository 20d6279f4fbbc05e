package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// An egress forward proxy that refuses a destination its domain allowlist
// lacks. Workloads reach the internet through a proxy (squid, with an
// "acl allowed_domains dstdomain" file; the pods' HTTPS_PROXY points at
// it) that only tunnels to the hosts on its list. When a caller starts
// calling a host the list does not hold (a new SDK or API version on
// another host name, a new provider), the proxy answers its CONNECT with
// 403 (squid's TCP_DENIED/403, ERR_ACCESS_DENIED) and the client reports a
// tunnel failure ("Tunnel connection failed: 403 Forbidden", curl's
// "CONNECT tunnel failed, response 403", Java's "Unable to tunnel through
// proxy. Proxy returns "HTTP/1.1 403 Forbidden"", Node's "tunneling socket
// could not be established, statusCode=403"). The provider is healthy and
// never sees the calls; the credentials are not at fault. The cause is
// the allowlist entry missing for the host the caller now calls.

// KindProxyDenied is a caller whose calls to an external host the egress
// proxy refuses (the host is not on its allowlist).
const KindProxyDenied Kind = "proxy_denied"

var (
	// proxyDeniedClientRE is a client's report of a proxy refusing its
	// CONNECT with 403.
	proxyDeniedClientRE = regexp.MustCompile(`(?i)Tunnel connection failed: 403\b|CONNECT tunnel failed, response 403\b|Received HTTP code 403 from proxy after CONNECT|Unable to tunnel through proxy\. Proxy returns "HTTP/\d(?:\.\d)? 403|tunneling socket could not be established, statusCode=403\b|proxyconnect tcp:[^"]{0,80}\b403\b`)
	// proxyDeniedLogRE is a proxy's access log line of a refused request
	// (squid's native and common formats).
	proxyDeniedLogRE = regexp.MustCompile(`\bTCP_DENIED[/:]`)
	// proxyPassedLogRE is a proxy's line of a request it passed.
	proxyPassedLogRE = regexp.MustCompile(`\bTCP_(?:TUNNEL|MISS|HIT|REFRESH_\w+)[/:]2\d\d\b`)
	// proxyRequestRE is the method and destination of a proxy log line.
	proxyRequestRE = regexp.MustCompile(`(?i)\b(?:CONNECT|GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+"?(?:https?://)?([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,})(?::(\d+))?`)
	// proxyClientHostRE is the destination a client's failure names:
	// urllib3's host='…', a URL, a CONNECT target.
	proxyClientHostRE = regexp.MustCompile(`(?i)host='([a-z0-9][a-z0-9.-]+\.[a-z]{2,})'|https?://([a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.[a-z]{2,})|CONNECT ([a-z0-9][a-z0-9.-]+\.[a-z]{2,}):\d+`)
	// proxyURLRE is a proxy a client's log or environment names.
	proxyURLRE = regexp.MustCompile(`(?i)https?_proxy\s*[=:]\s*"?https?://([a-z0-9][a-z0-9.-]*)`)
	// proxyACLFileRE is a squid ACL naming a file or list of domains.
	proxyACLFileRE = regexp.MustCompile(`(?i)^\s*acl\s+\S+\s+dstdomain\s+(.+)$`)
	// proxyAllowKeyRE is a ConfigMap key that holds an allowlist.
	proxyAllowKeyRE = regexp.MustCompile(`(?i)allow|whitelist|dstdomain|domains`)
	// proxyChangeRE is a change to the proxy or its allowlist.
	proxyAllowChangeRE = regexp.MustCompile(`(?i)allow ?list|whitelist|squid|egress|proxy|dstdomain|allowed.domains`)
)

var proxyDenied = &mechanism{
	kind:   KindProxyDenied,
	class:  classCause,
	label:  "the egress proxy refuses the caller's calls to a host its allowlist lacks",
	detect: detectProxyDenied,
	// The caller's release that moved to a new host, or a change to the
	// proxy's list, triggers it.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy && c.Subject == h.Subject || matchLine(proxyAllowChangeRE, changeText(c))
	},
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject && f.Subject != h.fact("proxy_workload") && f.fact("caller") != h.Subject {
			return false
		}
		switch f.Kind {
		case KindAuth, KindLogErrors, KindErrorRate, KindConnRefused, KindTimeout:
			return true
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		host := orWord(h.fact("host"), "the external host")
		proxy := orWord(h.fact("proxy"), "the egress proxy")
		d := fmt.Sprintf("the egress proxy %s refuses %s's calls to %s", proxy, h.Subject, host)
		if n := h.fact("denied"); n != "" {
			d += fmt.Sprintf(" (%s lines of TCP_DENIED/403 for CONNECT %s)", n, host)
		} else {
			d += " (403 to its CONNECT)"
		}
		if src := h.fact("allowlist"); src != "" {
			d += fmt.Sprintf(": %s is not on the proxy's domain allowlist (%s: %s)", host, src, truncate(h.fact("allowed"), 240))
		} else {
			d += fmt.Sprintf(": %s is not on the proxy's allowlist", host)
		}
		if p := h.fact("passed"); p != "" {
			d += fmt.Sprintf(", while the proxy passes the calls to the hosts it allows (%s)", p)
		}
		d += h.quoteClause(". "+h.Subject+" logs: ", "line", 220)
		d += fmt.Sprintf(". %s itself is not at fault (the calls never reach it), nor are %s's credentials", host, h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		host := orWord(h.fact("host"), "the host")
		src := orWord(h.fact("allowlist"), "the egress proxy's allowlist")
		r.high("Add %s to %s and reload the proxy (squid -k reconfigure, or restart its pods); then replay the failed work", host, src)
		r.rollback()
		r.med("Check from %s's pod that the proxy tunnels to %s (curl -sv https://%s through its HTTPS_PROXY)", h.Subject, host, host)
		r.low("When a release changes the hosts a service calls, update the egress allowlist in the same change; alert on the proxy's TCP_DENIED lines")
	},
}

// isProxyAllowlist reports whether a ConfigMap holds an egress proxy's
// domain allowlist: a squid configuration with a dstdomain ACL, or a key
// named for an allowlist beside it.
func isProxyAllowlist(c *corev1.ConfigMap) bool {
	for _, v := range c.Data {
		for _, l := range strings.Split(v, "\n") {
			if proxyACLFileRE.MatchString(l) {
				return true
			}
		}
	}
	return false
}

// proxyAllowlist is the domains a proxy allowlist ConfigMap lists, with
// the key they come from.
func proxyAllowlist(c *corev1.ConfigMap) (key string, domains []string) {
	keys := make([]string, 0, len(c.Data))
	for k := range c.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := c.Data[k]
		// an ACL listing domains inline
		for _, l := range strings.Split(v, "\n") {
			if m := proxyACLFileRE.FindStringSubmatch(l); m != nil && !strings.Contains(m[1], `"`) {
				for _, d := range strings.Fields(m[1]) {
					if strings.Contains(d, ".") {
						domains = append(domains, d)
					}
				}
				if len(domains) > 0 && key == "" {
					key = k
				}
			}
		}
		if !proxyAllowKeyRE.MatchString(k) {
			continue
		}
		var ds []string
		for _, l := range strings.Split(v, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if strings.ContainsAny(l, " \t=") || !strings.Contains(l, ".") {
				ds = nil
				break
			}
			ds = append(ds, l)
		}
		if len(ds) > 0 {
			key = k
			domains = append(domains, ds...)
		}
	}
	return key, domains
}

// domainAllowed reports whether a squid dstdomain list lets host through:
// an exact entry, or ".example.com" for the domain and its subdomains.
func domainAllowed(host string, domains []string) bool {
	host = strings.ToLower(host)
	for _, d := range domains {
		d = strings.ToLower(d)
		if d == host || strings.HasPrefix(d, ".") && (host == d[1:] || strings.HasSuffix(host, d)) {
			return true
		}
	}
	return false
}

// externalHost reports whether h names a host outside the cluster.
func proxyExternalHost(h string) bool {
	h = strings.ToLower(h)
	return strings.Contains(h, ".") && !strings.HasSuffix(h, ".local") && !strings.HasSuffix(h, ".svc") && !strings.Contains(h, ".svc.") && !strings.HasSuffix(h, ".internal") && !anyIPv4RE.MatchString(h)
}

// detectProxyDenied finds callers whose calls to an external host the
// egress proxy refuses, from the callers' tunnel failures and the
// proxy's own log, with the proxy's allowlist.
func detectProxyDenied(ev *Gathered, _ []Finding) []Finding {
	ipWorkload := map[string]string{}
	for i := range ev.K8s.Pods {
		if p := &ev.K8s.Pods[i]; p.Status.PodIP != "" {
			ipWorkload[p.Status.PodIP] = WorkloadOfPod(p)
		}
	}
	type denial struct {
		f      *Finding
		counts int
	}
	var by keyed[denial]
	// The callers' own reports.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 || set.Subject == "" {
				continue
			}
			line := templateLine(t, proxyDeniedClientRE)
			if line == "" {
				continue
			}
			host := ""
			if m := findSubmatch(proxyClientHostRE, line); m != nil {
				host = orWord(m[1], orWord(m[2], m[3]))
			}
			if host == "" || !proxyExternalHost(host) {
				continue
			}
			d := by.get(set.Subject)
			at := earliest(t.FirstSeen, t.FirstIncident)
			if d.f == nil {
				d.f = &Finding{Kind: KindProxyDenied, Subject: set.Subject, Namespace: set.Namespace, Object: set.Source,
					Time: at, Severity: SevCritical, Weight: 0.9, Source: set.Origin, Facts: map[string]string{}}
				d.f.setFact("line", line)
				d.f.setFact("host", strings.ToLower(host))
			} else if !at.IsZero() && at.Before(d.f.Time) {
				d.f.Time = at
			}
			d.f.Evidence = append(d.f.Evidence, fmt.Sprintf("%s logged %s of a proxy refusing its CONNECT to %s from %s: %s", set.Source, plural(t.Incident, "line", "lines"), host, hm(at), quote(ReadableLine(line), 240)))
		}
	}
	// The proxy's log: refusals by client address, passes by host.
	var passed []string
	type proxyRefusal struct {
		caller, host, line, proxy string
		n                         int
	}
	var refusals []proxyRefusal
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				m := findSubmatch(proxyRequestRE, l)
				if m == nil || !proxyExternalHost(m[1]) {
					continue
				}
				switch {
				case matchLine(proxyDeniedLogRE, l):
					before, _, _ := strings.Cut(l, m[0])
					caller := ""
					if ipm := findSubmatch(anyIPv4RE, before); ipm != nil {
						caller = ipWorkload[ipm[1]]
					}
					refusals = append(refusals, proxyRefusal{caller: caller, host: strings.ToLower(m[1]), line: l, proxy: set.Subject, n: max(t.Count, 1)})
				case matchLine(proxyPassedLogRE, l):
					if h := strings.ToLower(m[1]); !slices.Contains(passed, h) && len(passed) < 4 {
						passed = append(passed, h)
					}
				}
				break
			}
		}
	}
	for _, r := range refusals {
		if r.caller == "" {
			// a refusal of a host some caller reports
			for _, s := range by.order {
				if by.m[s].f.fact("host") == r.host {
					r.caller = s
				}
			}
		}
		if r.caller == "" {
			continue
		}
		d := by.get(r.caller)
		if d.f == nil {
			d.f = &Finding{Kind: KindProxyDenied, Subject: r.caller, Severity: SevCritical, Weight: 0.85, Source: SrcLogs, Facts: map[string]string{}}
			d.f.setFact("host", r.host)
			d.f.setFact("line", r.line)
		}
		if d.f.fact("host") != r.host {
			continue
		}
		d.counts += r.n
		d.f.setFact("proxy", r.proxy)
		d.f.setFact("proxy_workload", r.proxy)
		if d.counts == r.n {
			d.f.Evidence = append(d.f.Evidence, fmt.Sprintf("the proxy %s refuses the CONNECT of %s to %s: %s", r.proxy, r.caller, r.host, quote(ReadableLine(r.line), 200)))
		}
	}
	var out []Finding
	for _, s := range by.order {
		d := by.m[s]
		f := d.f
		if f.Time.IsZero() {
			continue // a proxy's refusal with no dated report of the caller
		}
		host := f.fact("host")
		if d.counts > 0 {
			f.setFact("denied", fmt.Sprint(d.counts))
		}
		if f.fact("proxy") == "" {
			for i := range ev.Logs {
				if ev.Logs[i].Subject != s {
					continue
				}
				for _, t := range ev.Logs[i].Templates {
					if m := findSubmatch(proxyURLRE, t.Example); m != nil {
						f.setFact("proxy", m[1])
					}
				}
			}
		}
		var others []string
		for _, p := range passed {
			if p != host {
				others = append(others, p)
			}
		}
		f.setFact("passed", strings.Join(others, ", "))
		// An allowlist read that holds the host: the refusal is another
		// rule's (a port, a time ACL, the client's address), not this.
		listed := false
		for i := range ev.K8s.ProxyAllowlists {
			if _, domains := proxyAllowlist(&ev.K8s.ProxyAllowlists[i]); domainAllowed(host, domains) {
				listed = true
			}
		}
		if listed {
			continue
		}
		for i := range ev.K8s.ProxyAllowlists {
			c := &ev.K8s.ProxyAllowlists[i]
			key, domains := proxyAllowlist(c)
			if len(domains) == 0 {
				continue
			}
			src := fmt.Sprintf("%s of ConfigMap %s/%s", key, c.Namespace, c.Name)
			f.setFact("allowlist", src)
			f.setFact("allowed", strings.Join(domains, ", "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the proxy's allowlist (%s) does not list %s: %s", src, host, truncate(strings.Join(domains, ", "), 300)))
			break
		}
		f.Summary = fmt.Sprintf("the egress proxy refuses %s's calls to %s (not on its allowlist)", s, host)
		out = append(out, *f)
	}
	return out
}
