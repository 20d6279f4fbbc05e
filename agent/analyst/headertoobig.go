package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A reverse proxy whose buffer for an upstream's response headers is
// smaller than the headers some responses carry. nginx (and what is built
// on it: ingress-nginx, OpenResty, Kong) reads the status line and headers
// of a proxied response into proxy_buffer_size, one memory page (4k or 8k)
// by default; a response whose headers do not fit — a session cookie that
// grew with the groups or roles an identity provider now puts in the
// token, several Set-Cookie chunks, a large CSP or Link header — is
// dropped with "upstream sent too big header while reading response header
// from upstream" and the client gets 502. Only the users whose headers are
// big fail (those in many groups, admins), the upstream logs every such
// request as answered, and the fix is the proxy's buffer (ingress-nginx's
// proxy-buffer-size) or smaller headers, not the application.

// KindHeaderTooBig is a proxy's response-header buffer too small for the
// headers an upstream sends.
const KindHeaderTooBig Kind = "header_too_big"

var (
	// headerTooBigRE is nginx's error line.
	headerTooBigRE = regexp.MustCompile(`upstream sent too big header while reading response header from upstream`)
	// headerUpstreamRE is the upstream the line names ("upstream:
	// "http://10.20.1.90:3000/path"").
	headerUpstreamRE = regexp.MustCompile(`upstream: "(?:https?|grpcs?|fastcgi|uwsgi)://([^/":]+)(?::\d+)?`)
	// headerServerRE is the virtual server it names.
	headerServerRE = regexp.MustCompile(`\bserver: ([^,\s]+)`)
	// headerBufferRE is the buffer setting as nginx.conf
	// ("proxy_buffer_size 4k;"), ingress-nginx's ConfigMap
	// ("proxy-buffer-size: 8k") or an Ingress annotation prints it.
	headerBufferRE = regexp.MustCompile(`(?i)\bproxy[-_]buffer[-_]size"?\s*[: ]\s*"?(\d+[kKmM]?)\b`)
	// headerGrowthRE is a change that makes responses' headers bigger:
	// claims or groups added to tokens, cookies, headers.
	headerGrowthRE = regexp.MustCompile(`(?i)\bclaims?\b|\bgroups?\b|\broles?\b|cookie|\bheaders?\b|\bmapper\b|\btoken\b|\bscopes?\b`)
)

var headerTooBig = &mechanism{
	kind:       KindHeaderTooBig,
	class:      classCause,
	label:      "proxy buffer too small for the upstream's response headers (upstream sent too big header)",
	lines:      headerTooBigRE,
	lineWeight: 0.85,
	detect:     detectHeaderTooBig,
	// Only a change that makes the headers bigger (claims or groups in
	// the token, cookies) or the buffer smaller fits; a deploy of
	// unrelated features does not.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(headerGrowthRE, changeText(c)) || matchLine(headerBufferRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		proxy := orWord(h.fact("proxy"), "the reverse proxy")
		buf := "its default proxy_buffer_size (one memory page, 4k or 8k)"
		if b := h.fact("buffer"); b != "" {
			buf = "its proxy_buffer_size of " + b
		}
		d := fmt.Sprintf("the response headers %s sends for some requests (a session cookie or Set-Cookie headers grown large, e.g. with the groups or roles a token now carries) no longer fit %s in %s: nginx logs \"upstream sent too big header\" and answers 502 to those users only (%s such responses since %s), while %s logs the requests as answered",
			h.Subject, buf, proxy, h.fact("count"), hm(h.Onset), h.Subject)
		if s := h.fact("sizes"); s != "" {
			d += "; " + s
		}
		d += h.triggerClause("the headers grew with", 180)
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise the proxy buffer for %s above its largest response headers: ingress-nginx annotation nginx.ingress.kubernetes.io/proxy-buffer-size: \"16k\" on its Ingress (or proxy-buffer-size in the controller's ConfigMap; proxy_buffer_size and proxy_buffers in plain nginx)", h.Subject)
		r.med("Make the headers smaller: keep large claims (groups, roles) out of the session cookie or token, or store the session server-side")
		r.low("Alert on \"upstream sent too big header\" in the proxy's error log and on 502s the upstream did not answer")
	},
}

func detectHeaderTooBig(ev *Gathered, _ []Finding) []Finding {
	var f *Finding
	count := 0
	for m := range incidentMatches(ev, headerTooBigRE) {
		set, t, line := m.set, m.t, m.line
		subject := headerUpstream(ev, line)
		if subject == "" {
			continue
		}
		at := earliest(t.FirstSeen, t.FirstIncident)
		if f == nil {
			f = &Finding{Kind: KindHeaderTooBig, Subject: subject, Namespace: workloadNamespace(ev, subject), Object: "response headers of " + subject,
				Time: at, Severity: SevCritical, Weight: 0.9, Source: set.Origin, Facts: map[string]string{}}
			f.setFact("proxy", set.Subject)
			f.setFact("line", line)
		}
		if f.Subject != subject {
			continue
		}
		if !at.IsZero() && at.Before(f.Time) {
			f.Time = at
		}
		if !slices.Contains(f.Related, set.Subject) {
			f.Related = append(f.Related, set.Subject)
		}
		count += t.Incident
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d times from %s that %s's response headers did not fit its buffer: %s", set.Subject, t.Incident, hm(at), subject, quote(ReadableLine(line), 240)))
	}
	if f == nil {
		return nil
	}
	f.setFact("count", fmt.Sprint(count))
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(headerBufferRE, l); m != nil && f.fact("buffer") == "" {
				f.setFact("buffer", m[1])
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), strings.TrimSpace(l)))
			}
		}
	}
	headerSizes(ev, f)
	f.Summary = fmt.Sprintf("%s answers 502 for %s: its response headers do not fit the proxy buffer (upstream sent too big header)", f.fact("proxy"), f.Subject)
	return []Finding{*f}
}

// headerUpstream names the service behind the upstream an error line
// names: the pod with that address, else the Service the proxy's access
// log sends it to, else the service asked about.
func headerUpstream(ev *Gathered, line string) string {
	if m := findSubmatch(headerUpstreamRE, line); m != nil {
		for i := range ev.K8s.Pods {
			if p := &ev.K8s.Pods[i]; p.Status.PodIP == m[1] {
				return WorkloadOfPod(p)
			}
		}
		for _, set := range ev.Logs {
			for _, t := range set.Templates {
				for _, l := range t.Lines() {
					if !strings.Contains(l, m[1]+":") {
						continue
					}
					if r, ok := parseRequestLine(l); ok && r.Upstream != "" {
						if s := ingressUpstreamService(ev, r.Upstream); s != "" {
							return s
						}
					}
				}
			}
		}
	}
	return ev.Scope.Service
}

// ingressUpstreamService reads the Service of an ingress-nginx upstream
// name ("partners-partner-portal-3000": namespace, Service, port).
func ingressUpstreamService(ev *Gathered, up string) string {
	i := strings.LastIndexByte(up, '-')
	if i < 0 || !isDigits(up[i+1:]) {
		return ""
	}
	up = up[:i]
	for _, ns := range []string{ev.Scope.Namespace, workloadNamespace(ev, ev.Scope.Service)} {
		if ns != "" && strings.HasPrefix(up, ns+"-") {
			return strings.TrimPrefix(up, ns+"-")
		}
	}
	for i := range ev.K8s.Pods {
		if ns := ev.K8s.Pods[i].Namespace; strings.HasPrefix(up, ns+"-") {
			return strings.TrimPrefix(up, ns+"-")
		}
	}
	return ""
}

// podNamespace is the namespace of a workload's pods, if any were read.
func workloadNamespace(ev *Gathered, workload string) string {
	for i := range ev.K8s.Pods {
		if p := &ev.K8s.Pods[i]; workload != "" && WorkloadOfPod(p) == workload {
			return p.Namespace
		}
	}
	return ev.Scope.Namespace
}

// headerSizeRE is a size of a header or cookie the upstream logs
// ("session_cookie_bytes":7704, set_cookie_bytes=9120, header_size=...).
var headerSizeRE = regexp.MustCompile(`(?i)"?([\w.]*(?:cookie|header)[\w.]*(?:bytes|size|len(?:gth)?))"?\s*[:=]\s*"?(\d+)`)

// headerSizes reads the largest header or cookie size the upstream's own
// log gives, for the description.
func headerSizes(ev *Gathered, f *Finding) {
	max, field := 0, ""
	var when time.Time
	for _, set := range ev.Logs {
		if set.Subject != f.Subject {
			continue
		}
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(headerSizeRE, l, -1) {
					var n int
					fmt.Sscan(m[2], &n)
					if n > max {
						max, field, when = n, m[1], t.LastSeen
					}
				}
			}
		}
	}
	if max >= 4096 {
		f.setFact("sizes", fmt.Sprintf("%s logs %s up to %d bytes", f.Subject, field, max))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs %s up to %d bytes (%s)", f.Subject, field, max, ts(when)))
	}
}
