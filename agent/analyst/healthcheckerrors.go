package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// KindCheckErrors is an error alert whose errors are a health
// check's: the server errors it counts are answers to a health-check path
// or a synthetic monitor, not to users.
const KindCheckErrors Kind = "health_check_errors"

// Health-check errors: an error-rate alert (or a question whether users
// get errors) checked against the access log. When nearly every server
// error of the window answers a health-check path (/healthz/deep,
// /actuator/health) or a synthetic monitor (Checkly, Pingdom, a blackbox
// probe, a load balancer's checker) while users' requests succeed, the
// alert counts the check, not customers: what the check probes (a
// dependency it still lists) is what fails, and the ratio rises when user
// traffic is low (at night).
var healthCheckErrors = &mechanism{
	kind:   KindCheckErrors,
	class:  classCause,
	label:  "errors from a health check, not users",
	detect: detectHealthCheckErrors,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the server errors counted for %s are a health check's, not users': %s of the %s 5xx answers in the window were to %s", h.Subject,
			orDash(h.fact("check_errors")), orDash(h.fact("errors")), orWord(h.fact("route"), "a health-check path"))
		if a := h.fact("agent"); a != "" {
			d += fmt.Sprintf(" (synthetic monitor %s)", a)
		}
		d += fmt.Sprintf("; users' requests (%s in the window) got %s server errors", orDash(h.fact("user_requests")), orWord(h.fact("user_errors"), "no"))
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Fix or retire the health check %s of %s (what it probes fails: a dependency it still lists), or exclude it from the error-rate alert", orWord(h.fact("route"), ""), h.Subject)
		r.med("Compute the error-rate alert over user routes only (exclude health and synthetic-check paths and user agents)")
		r.low("Require a minimum request rate for ratio alerts so that low night traffic does not magnify a steady trickle of errors")
	},
}

var (
	checkPathRE   = regexp.MustCompile(`(?i)^/(?:[\w.-]+/)?(?:healthz?|health-?check|readyz?|readiness|livez?|liveness|ping|status|_health|__health|actuator/health)(?:/|$)`)
	synthAgentRE  = regexp.MustCompile(`(?i)\b(Checkly|Pingdom|UptimeRobot|StatusCake|Site24x7|Datadog(?:/Synthetics| Synthetics)|blackbox[_-]exporter|kube-probe|ELB-HealthChecker|GoogleHC|Amazon-Route53-Health-Check-Service|NewRelicSynthetics|Better ?Uptime|Prometheus/blackbox)\b`)
	errorAskRE    = regexp.MustCompile(`(?i)error|5xx|\b5\d\d\b|fail`)
	minCheckShare = 0.9
)

// detectHealthCheckErrors reads the access log templates of the window:
// the 5xx answers by whether they went to a health check (its path or its
// user agent), and the users' requests. Only for a question about errors.
func detectHealthCheckErrors(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	if !matchLine(errorAskRE, sc.Message+" "+sc.Alert+" "+sc.Hint) {
		return nil
	}
	var errs, checkErrs, userReqs, userErrs int
	routes := map[string]int{}
	agent, line, subject, object := "", "", "", ""
	for set, t := range incidentTemplates(ev) {
		r, ok := parseRequestLine(t.Example)
		if !ok || r.Status == 0 {
			continue
		}
		status := r.Status
		// A template whose lines differ in status counts as the
		// better of them: only a 5xx all along is an error.
		if t.Last != "" {
			if l, ok := parseRequestLine(t.Last); ok && l.Status < 500 {
				status = l.Status
			}
		}
		a := findString(synthAgentRE, t.Example)
		check := matchLine(checkPathRE, r.Path) || a != ""
		if status >= 500 {
			errs += t.Incident
			if check {
				checkErrs += t.Incident
				routes[r.Route] += t.Incident
				if agent == "" {
					agent = a
				}
				if line == "" {
					line, subject, object = t.Example, orWord(upstreamService(r.Upstream), set.Subject), set.Origin+" "+set.Source
				}
			}
		}
		if !check {
			userReqs += t.Incident
			if status >= 500 {
				userErrs += t.Incident
			}
		}
	}
	if errs < 20 || float64(checkErrs) < minCheckShare*float64(errs) || userReqs < errs {
		return nil
	}
	if sc.Service != "" {
		subject = sc.Service
	}
	var rs []string
	for r := range routes {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return routes[rs[i]] > routes[rs[j]] })
	f := Finding{Kind: KindCheckErrors, Subject: subject, Object: object, Namespace: sc.Namespace, Time: ev.Window.Start, Severity: SevWarning, Weight: 0.85, Source: SrcLogs,
		Facts: map[string]string{}}
	f.setFact("route", strings.Join(rs, ", "))
	f.setFact("agent", agent)
	f.setFact("line", line)
	f.setFact("errors", fmt.Sprint(errs))
	f.setFact("check_errors", fmt.Sprint(checkErrs))
	f.setFact("user_requests", fmt.Sprint(userReqs))
	f.setFact("user_errors", fmt.Sprint(userErrs))
	f.Summary = fmt.Sprintf("%d of %d 5xx answers went to the health check %s; users' %d requests got %d", checkErrs, errs, f.fact("route"), userReqs, userErrs)
	f.Evidence = []string{
		fmt.Sprintf("access log: %d of the %d 5xx answers in the window went to %s%s: %s", checkErrs, errs, f.fact("route"), agentNote(agent), quote(ReadableLine(line), 220)),
		fmt.Sprintf("access log: users' requests (other paths, other agents) in the window: %d, of which %d got a 5xx", userReqs, userErrs),
	}
	return []Finding{f}
}

func agentNote(a string) string {
	if a == "" {
		return ""
	}
	return " from the synthetic monitor " + a
}

// upstreamService names the service behind an ingress upstream
// ("storefront-web-frontend-3000" → "web-frontend" is not knowable without
// the namespace; the name without its port is kept).
func upstreamService(u string) string {
	if i := strings.LastIndexByte(u, '-'); i > 0 && allDigits(u[i+1:]) {
		return u[:i]
	}
	return u
}
