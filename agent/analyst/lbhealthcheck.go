package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// KindLBHealthCheck: a load balancer whose health check fails on the
// servers of a backend takes them out of rotation; with every one down it
// has no server left and answers 503 itself (HAProxy's <NOSRV>, nginx's
// "no live upstreams", Envoy's "no healthy upstream"), while the servers
// are up and serve whatever reaches them. The check's own failure reason
// (a 404 for a health path a release removed, a timeout, a refused port)
// is the cause, not the servers.
const KindLBHealthCheck Kind = "lb_health_check"

var lbHealthCheck = &mechanism{
	kind:   KindLBHealthCheck,
	class:  classCause,
	label:  "load balancer health check failing: servers marked down",
	detect: detectLBHealthCheck,
	// The proxy's own 503s and its error lines about the backend.
	related: func(h *Hypothesis, f *Finding) bool {
		return f.Subject == h.fact("proxy") || strings.Contains(f.fact("line"), h.fact("backend"))
	},
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return strings.Contains(t, "health") || strings.Contains(t, "httpchk") || strings.Contains(t, "probe") ||
			(h.fact("check_path") != "" && strings.Contains(t, strings.ToLower(h.fact("check_path"))))
	},
	describe: describeLBHealthCheck,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		path := orWord(h.fact("check_path"), "the health endpoint")
		r.high("Make the health check of %s pass again: point the load balancer's check at an endpoint the servers serve (or restore %s), or roll back the release that changed it", orWord(h.fact("backend"), h.Subject), path)
		r.med("Keep the health endpoint the load balancer checks part of the service's contract: test it in the release pipeline against the load balancer's configuration")
		r.low("Alert when a backend has fewer than two servers up, before it has none")
	},
}

var (
	// HAProxy: "Server be_partner_api/app-01 is DOWN, reason: Layer7 wrong
	// status, code: 404, info: "Not Found", check duration: 5ms."
	haproxyDownRE = regexp.MustCompile(`Server ([\w.-]+)/([\w.-]+) is DOWN, reason: ([^,]+)(?:, code: (\d{3}))?(?:, info: "([^"]*)")?`)
	// All servers of a backend down.
	noServerRE = regexp.MustCompile(`(?i)backend '?([\w.-]+)'? has no server available|no live upstreams while connecting to upstream|no healthy upstream`)
	// A request line of a health path answered with an error status.
	clusterFieldRE = regexp.MustCompile(`(?i)\b(?:upstream_cluster|cluster(?:_name)?)[=:]\s*"?([\w.-]+)`)
	healthPathRE   = regexp.MustCompile(`(?i)\b(?:GET|HEAD)\s+(/(?:healthz?|health[\w/-]*|healthcheck|status|ping|ready(?:z)?|live(?:z)?|actuator/health)\b)\S*\s*(?:HTTP/[\d.]+"?\s*)?(\d{3})\b`)
)

type lbCheck struct {
	proxy, backend   string
	servers          []string
	reason, code     string
	info             string
	all              bool
	onset            time.Time
	lines, allLine   string
	checkPath        string
	checkLine        string
	checkAnswerCount int
}

// detectLBHealthCheck reads a load balancer's own log of its health checks.
func detectLBHealthCheck(ev *Gathered, _ []Finding) []Finding {
	checks := map[string]*lbCheck{}
	var order []string
	for set, t := range incidentTemplates(ev) {
		for _, l := range t.Lines() {
			if m := findSubmatch(haproxyDownRE, l); m != nil {
				c := checks[m[1]]
				if c == nil {
					c = &lbCheck{proxy: orWord(set.Subject, subjectOfSource(set.Source)), backend: m[1]}
					checks[m[1]] = c
					order = append(order, m[1])
				}
				if !slices.Contains(c.servers, m[2]) {
					c.servers = append(c.servers, m[2])
				}
				c.reason, c.code, c.info = strings.TrimSpace(m[3]), m[4], m[5]
				if c.lines == "" {
					c.lines = t.Example
				}
				at := firstOf(t.FirstIncident, t.FirstSeen)
				if c.onset.IsZero() || at.Before(c.onset) {
					c.onset = at
				}
			}
			if m := findSubmatch(noServerRE, l); m != nil {
				// HAProxy names the backend; nginx the upstream block
				// in its upstream URL; Envoy the cluster.
				b := m[1]
				if b == "" {
					if u := findSubmatch(upstreamURLRE, l); u != nil {
						b = u[1]
					} else if u := findSubmatch(clusterFieldRE, l); u != nil {
						b = u[1]
					}
				}
				if b == "" {
					continue
				}
				c := checks[b]
				if c == nil {
					c = &lbCheck{proxy: orWord(set.Subject, subjectOfSource(set.Source)), backend: b, onset: firstOf(t.FirstIncident, t.FirstSeen)}
					checks[b] = c
					order = append(order, b)
				}
				c.all, c.allLine = true, l
				if c.reason == "" {
					c.reason = "no server passes the health check"
				}
			}
		}
	}
	var out []Finding
	for _, b := range order {
		c := checks[b]
		// One server dropping out is a server's problem; a check that
		// takes every server (or several) out of rotation is the check's.
		if !c.all && len(c.servers) < 2 {
			continue
		}
		subject := backendService(b, ev)
		c.checkPath, c.checkLine, c.checkAnswerCount = healthAnswers(ev.Logs, c)
		f := Finding{Kind: KindLBHealthCheck, Subject: subject, Object: "backend " + b, Time: c.onset, Severity: SevCritical, Weight: 0.8, Source: SrcLogs}
		if c.all {
			f.Weight = 0.92
		}
		sort.Strings(c.servers)
		f.setFact("proxy", c.proxy)
		f.setFact("backend", b)
		f.setFact("servers", strings.Join(c.servers, ", "))
		f.setFact("reason", c.reason)
		f.setFact("code", c.code)
		f.setFact("info", c.info)
		f.setFact("line", c.lines)
		f.setFact("check_path", c.checkPath)
		f.setFact("check_line", c.checkLine)
		if c.all {
			f.setFact("all", "true")
		}
		if c.proxy != "" && c.proxy != subject {
			f.Related = append(f.Related, c.proxy)
			f.setFact("affected", c.proxy)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s marked %s of backend %s DOWN from %s: %s", c.proxy, strings.Join(c.servers, ", "), b, ts(c.onset), quote(ReadableLine(c.lines), 220)))
		if c.all {
			f.Evidence = append(f.Evidence, quote(ReadableLine(c.allLine), 160))
		}
		if c.checkLine != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the servers answer the check's %s with %s: %s", c.checkPath, c.code, quote(ReadableLine(c.checkLine), 200)))
		}
		f.Summary = fmt.Sprintf("the health check of %s fails (%s): servers marked DOWN", b, c.reason)
		out = append(out, f)
	}
	return out
}

// backendService names the service behind a backend ("be_partner_api" →
// partner-api): the question's service or a log source it matches.
func backendService(backend string, ev *Gathered) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		for _, p := range []string{"backend_", "backend-", "be_", "be-", "bk_", "bk-", "upstream_", "upstream-"} {
			s = strings.TrimPrefix(s, p)
		}
		return strings.NewReplacer("_", "", "-", "", ".", "").Replace(s)
	}
	b := norm(backend)
	if svc := ev.Scope.Service; svc != "" && norm(svc) == b {
		return svc
	}
	for _, set := range ev.Logs {
		for _, n := range []string{set.Subject, subjectOfSource(set.Source)} {
			if n != "" && norm(n) == b {
				return n
			}
		}
	}
	return backend
}

// healthAnswers finds, in the servers' own logs, their answers to the
// health path with the status the check rejected (GET /healthz 404).
func healthAnswers(sets []LogSet, c *lbCheck) (path, line string, n int) {
	for _, set := range sets {
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, l := range t.Lines() {
				m := findSubmatch(healthPathRE, l)
				if m == nil || (c.code != "" && m[2] != c.code) || m[2] < "400" {
					continue
				}
				n += t.Incident
				if line == "" {
					path, line = m[1], l
				}
				break
			}
		}
	}
	return path, line, n
}

func describeLBHealthCheck(h *Hypothesis, sc Scope) string {
	b := orWord(h.fact("backend"), h.Subject)
	proxy := orWord(h.fact("proxy"), "the load balancer")
	why := h.fact("reason")
	if c := h.fact("code"); c != "" {
		why += ", code " + c
		if i := h.fact("info"); i != "" {
			why += fmt.Sprintf(" %q", i)
		}
	}
	d := fmt.Sprintf("the load balancer's health check fails on every server of %s: %s marks every server of backend %s DOWN (reason: %s)", h.Subject, proxy, b, why)
	if h.fact("all") == "" {
		d = fmt.Sprintf("the load balancer's health check fails on servers of %s: %s marks %s of backend %s DOWN (reason: %s)", h.Subject, proxy, orWord(h.fact("servers"), "its servers"), b, why)
	} else {
		d += ", so the backend has no server available and the load balancer answers 503 to every request itself while the servers are up"
	}
	if p := h.fact("check_path"); p != "" {
		d += fmt.Sprintf("; the servers answer the health check's %s with %s: %s", p, orWord(h.fact("code"), "an error"), quote(ReadableLine(h.fact("check_line")), 160))
	}
	return d
}
