package analyst

import (
	"fmt"
	"regexp"
	"strings"
)

// KindFailoverCheckRedirect: a DNS failover that never happens because
// the primary's health check passes on a redirect. Route 53 counts any
// 2xx or 3xx answer as healthy; a check of type HTTP on port 80 against a
// load balancer whose port-80 listener redirects every request to HTTPS
// gets a 301 whatever the service behind it does. When the primary region
// is drained (or fails), its record stays healthy, DNS keeps answering
// with it, and clients get the load balancer's 503 while the secondary is
// healthy and idle. The cause is what the check tests, not the secondary.
const KindFailoverCheckRedirect Kind = "failover_check_redirect"

var failoverCheckRedirect = &mechanism{
	kind:   KindFailoverCheckRedirect,
	class:  classCause,
	label:  "DNS failover health check passes on a redirect: no failover",
	detect: detectFailoverCheckRedirect,
	// What exposed it: the primary drained or failed over, or the check
	// itself changed.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(failoverChangeRE, changeText(c))
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the DNS failover of %s never happens: the primary record's health check%s gets %s", h.Subject, h.wrapped(" (", "check", ")"), h.fact("status"))
		if l := h.fact("status_line"); l != "" {
			d += " (" + quote(l, 160) + ")"
		}
		d += ", which the health checker counts as healthy (any 2xx or 3xx passes)"
		if strings.HasPrefix(h.fact("check"), "HTTP ") {
			d += ": the load balancer's plain-HTTP listener redirects every request to HTTPS whatever the service behind it does"
		} else {
			d += ": the redirect is answered whatever the service behind it does"
		}
		d += ", so the primary stays healthy and DNS keeps sending clients to it"
		d += h.clause(", while what it redirects to answers ", "failing")
		d += ". The secondary is not the problem; it never receives the traffic"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make the primary's health check test the service itself: type HTTPS on port 443 (with SNI) at the health path, or a string match on its body, so a redirect no longer passes; to fail over now, invert or disable the primary's health check so DNS answers with the secondary")
		r.med("Set EvaluateTargetHealth on the primary's alias record too, so a load balancer with no healthy targets counts as unhealthy")
		r.low("Test the failover before each planned drain: take the primary down and check that DNS answers with the secondary")
	},
}

var (
	// Route 53's health checker's status: "Success: HTTP Status Code 301,
	// Moved Permanently. Resolved IP: 34.249.12.88".
	checkRedirectRE = regexp.MustCompile(`(?i)\bSuccess: HTTP Status Code (3\d\d)(?:, ([^.]+))?`)
	// The check's configuration as get-health-check prints it.
	r53PortRE = regexp.MustCompile(`"Port"\s*:\s*(\d+)`)
	r53TypeRE = regexp.MustCompile(`"Type"\s*:\s*"(HTTPS?(?:_STR_MATCH)?|TCP)"`)
	r53PathRE = regexp.MustCompile(`"ResourcePath"\s*:\s*"([^"]+)"`)
	// A 5xx answer in a check run by hand: a status line, or curl's -w
	// '%{http_code}' alone on its line.
	fiveXXRE = regexp.MustCompile(`^\s*(?:HTTP/[\d.]+\s+)?(5\d\d)\b`)
	// A change that drains or fails over a region, or touches the check.
	failoverChangeRE = regexp.MustCompile(`(?i)drain|fail ?over|replicas=0|scale[ d].*\b0\b|health ?check|route ?53|evacuat|decommission`)
)

// detectFailoverCheckRedirect reads a health checker's status reports
// that pass on a redirect, with the check's configuration and the 5xx the
// service's clients get.
func detectFailoverCheckRedirect(ev *Gathered, _ []Finding) []Finding {
	var code, reason, line string
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if m := findSubmatch(checkRedirectRE, l); m != nil {
				code, reason = m[1], strings.TrimSpace(m[2])
				line = strings.TrimRight(strings.TrimSpace(l[strings.Index(l, m[0]):]), `",`)
				break
			}
		}
		if code != "" {
			break
		}
	}
	if code == "" {
		return nil
	}
	var failing string
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "curl") {
			continue
		}
		for _, l := range c.Lines {
			if m := findSubmatch(fiveXXRE, l); m != nil {
				failing = m[1]
				break
			}
		}
		if failing != "" {
			break
		}
	}
	// A redirect passing the check matters only when the service fails.
	if failing == "" {
		return nil
	}
	var port, typ, path string
	for _, c := range ev.Commands {
		if !strings.Contains(c.Command, "health-check") && !strings.Contains(c.Command, "healthcheck") {
			continue
		}
		text := strings.Join(c.Lines, "\n")
		if m := findSubmatch(r53PortRE, text); m != nil && port == "" {
			port = m[1]
		}
		if m := findSubmatch(r53TypeRE, text); m != nil && typ == "" {
			typ = m[1]
		}
		if m := findSubmatch(r53PathRE, text); m != nil && path == "" {
			path = m[1]
		}
	}
	var check []string
	if typ != "" {
		check = append(check, typ)
	}
	if port != "" {
		check = append(check, "on port "+port)
	}
	if path != "" {
		check = append(check, "at "+path)
	}
	subject := orWord(ev.Scope.Service, "the service")
	f := Finding{Kind: KindFailoverCheckRedirect, Subject: subject, Namespace: ev.Scope.Namespace, Object: "failover health check of " + subject,
		Time: untimedOnset(ev, failoverChangeRE), Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
	status := "a " + code + " redirect"
	if reason != "" {
		status = fmt.Sprintf("a %s (%s) redirect", code, reason)
	}
	f.setFact("status", status)
	f.setFact("status_line", line)
	f.setFact("check", strings.Join(check, " "))
	f.setFact("failing", failing)
	f.Evidence = append(f.Evidence, "the health checker reports the primary healthy on a redirect: "+quote(line, 200))
	if len(check) > 0 {
		f.Evidence = append(f.Evidence, "the health check: "+strings.Join(check, " "))
	}
	f.Evidence = append(f.Evidence, "clients get "+failing+" from the primary")
	f.Summary = fmt.Sprintf("the failover health check of %s passes on %s while clients get %s", subject, status, failing)
	return []Finding{f}
}
