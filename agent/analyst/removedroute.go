package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindRemovedRoute: an error-ratio alert (an SLO's error-budget burn, a
// 4xx/5xx ratio) whose errors are one route answering 404 since a release
// removed it, while its caller keeps calling it. The route answered 2xx
// before and its 404s replace them one for one; the other routes serve as
// before. When the caller is a probe (blackbox exporter, a synthetic
// check, an uptime monitor) no user sees the errors: the alert fires on
// the probe's calls and the SLO counts 4xx.
const KindRemovedRoute Kind = "removed_route"

var removedRoute = &mechanism{
	kind:   KindRemovedRoute,
	class:  classCause,
	label:  "a removed route still called",
	detect: detectRemovedRoute,
	// The release that removed the route; another change is a
	// coincidence.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Subject == h.Subject && c.Kind == KindDeploy
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		route := h.fact("route")
		d := fmt.Sprintf("%s answers %s on %s (%s, %s of the requests it counts as errors) since %s, where it answered %s before: the route was removed and something still calls it",
			h.Subject, h.fact("code"), route, h.fact("rate"), h.fact("share"), h.fact("since"), h.fact("was"))
		if alert := h.fact("alert"); alert != "" {
			d = fmt.Sprintf("the %s alert counts %s's 404s: ", alert, h.Subject) + d
		}
		if p := h.fact("caller"); p != "" {
			if h.fact("probe") != "" {
				d += fmt.Sprintf("; the caller is a probe, not users: %s", p)
				if t := h.fact("probe_target"); t != "" {
					d += fmt.Sprintf(" (%s)", t)
				}
				d += ", so the errors are synthetic and not user-facing"
			} else {
				d += "; the caller is " + p
			}
		}
		if r := h.fact("others"); r != "" {
			d += fmt.Sprintf("; the other requests fail at %s", r)
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		route := h.fact("route")
		if h.fact("probe") != "" {
			r.high("Point the probe at a route %s still serves (or delete it): it calls %s, removed by the release", h.Subject, route)
			r.med("Keep probe traffic out of the availability SLO of %s, or count only 5xx there, so a probe of a removed route does not burn the error budget", h.Subject)
		} else {
			r.high("Move the caller of %s (%s) to the route that replaces it, or serve %s again until it has moved", route, orWord(h.fact("caller"), "see the access log's user agent"), route)
		}
		r.low("Before removing a route, check who still calls it (access logs by user agent, probes and synthetic checks)")
	},
}

var (
	// routeLabels name the route of a request series.
	routeLabels = []string{"handler", "route", "http_route", "path", "uri", "endpoint", "url", "operation"}
	// probeAgentRE recognises the user agents of probes and synthetic
	// checks.
	probeAgentRE = regexp.MustCompile(`(?i)blackbox|kube-probe|pingdom|uptimerobot|uptime-kuma|synthetic|statuscake|site24x7|checkly|health.?check|Route53-Health|GoogleStackdriverMonitoring|NewRelicPinger|Better ?Uptime|prober\b|heartbeat`)
	lastQuotedRE = regexp.MustCompile(`"([^"]+)"\s*$`)
	uaFieldRE    = regexp.MustCompile(`(?i)\b(?:ua|user_?agent|http_user_agent)\s*[=:]\s*"([^"]+)"`)
	errorAlertRE = regexp.MustCompile(`(?i)error.?budget|budget.?burn|burn.?rate|\bSLO\b|availability|error.?(rate|ratio)|\b4xx\b|\b404s?\b|ErrorRate|ErrorBudget|HighErrors?`)
)

// seriesRoute is the route a request series is about.
func seriesRoute(l evidence.Labels) string {
	for _, k := range routeLabels {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

// meanIn is a series' mean over [from, to).
func meanIn(s evidence.Series, from, to time.Time) (float64, bool) {
	sum, n := 0.0, 0
	for _, p := range s.Points {
		if !p.T.Before(from) && p.T.Before(to) {
			sum += p.V
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// lastIn is the mean of a series' last points (its current level).
func lastIn(s evidence.Series, n int) float64 {
	if len(s.Points) == 0 {
		return 0
	}
	k := max(0, len(s.Points)-n)
	sum := 0.0
	for _, p := range s.Points[k:] {
		sum += p.V
	}
	return sum / float64(len(s.Points)-k)
}

// detectRemovedRoute finds, for an error-ratio question or alert, a route
// whose 2xx requests turned into 404s and that carries most of the
// errors, and who calls it from the access log.
func detectRemovedRoute(ev *Gathered, _ []Finding) []Finding {
	sc := ev.Scope
	if !matchLine(errorAlertRE, sc.Message+" "+sc.Hint+" "+sc.Alert) {
		return nil
	}
	type route struct {
		subject, name   string
		okBefore, okNow float64
		nfBefore, nfNow float64
		flipAt          time.Time
		series404       evidence.Series
		code            string
		okCodes         []string
	}
	routes := map[string]*route{}
	errNow := map[string]float64{}  // subject → error requests per second now
	total := map[string]float64{}   // subject → requests per second now
	fiveNow := map[string]float64{} // subject → 5xx per second now
	for _, set := range ev.Metrics {
		if set.Class != MetricRequests {
			continue
		}
		for _, s := range set.Series {
			code, ok := statusLabel(s.Labels)
			r := seriesRoute(s.Labels)
			subj := SubjectOfLabels(s.Labels)
			if !ok || r == "" || len(code) != 3 || subj == "" {
				continue
			}
			before, okB := meanIn(s, ev.Window.BaselineStart, ev.Window.Start)
			now := lastIn(s, 5)
			total[subj] += now
			if code[0] == '5' {
				fiveNow[subj] += now
			}
			// Counted as errors: 4xx and 5xx but an auth refusal.
			if (code[0] == '4' || code[0] == '5') && code != "401" && code != "403" && code != "429" {
				errNow[subj] += now
			}
			key := subj + " " + r
			x := routes[key]
			if x == nil {
				x = &route{subject: subj, name: r}
				routes[key] = x
			}
			switch {
			case code[0] == '2' && okB:
				x.okBefore += before
				x.okNow += now
				x.okCodes = append(x.okCodes, code)
			case code == "404" || code == "410":
				x.nfBefore += before
				x.nfNow += now
				x.code = code
				x.series404 = s
			}
		}
	}
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(routes)) {
		x := routes[k]
		// The route served before and answers 404 now, about as often.
		if x.okBefore <= 0 || x.okNow > 0.1*x.okBefore || x.nfNow < 0.5*x.okBefore || x.nfBefore > 0.1*x.nfNow {
			continue
		}
		if errNow[x.subject] <= 0 || x.nfNow < 0.5*errNow[x.subject] {
			continue // not what the errors are
		}
		for _, p := range x.series404.Points {
			if p.V >= 0.5*x.nfNow {
				x.flipAt = p.T
				break
			}
		}
		if sc.Service != "" && !strings.EqualFold(x.subject, sc.Service) {
			continue
		}
		f := Finding{Kind: KindRemovedRoute, Subject: x.subject, Object: "route " + x.name, Namespace: orWord(x.series404.Labels["namespace"], sc.Namespace),
			Time: x.flipAt, Severity: SevWarning, Weight: 0.85, Source: SrcMetrics}
		f.setFact("route", x.name)
		f.setFact("code", x.code)
		f.setFact("rate", fmt.Sprintf("%.2f/s", x.nfNow))
		f.setFact("share", fmt.Sprintf("%.0f%%", 100*x.nfNow/errNow[x.subject]))
		f.setFact("since", ts(x.flipAt))
		f.setFact("was", strings.Join(x.okCodes, "/"))
		if sc.Alert != "" {
			f.setFact("alert", sc.Alert)
		}
		if rest := total[x.subject] - x.nfNow; rest > 0 {
			f.setFact("others", fmt.Sprintf("%.3f%% (5xx, %s)", 100*fiveNow[x.subject]/rest, fmt.Sprintf("%.2f/s of %.1f/s", fiveNow[x.subject], rest)))
		}
		f.Evidence = []string{fmt.Sprintf("%s{%s}: %s answered %s at %.2f/s before %s and %s at %.2f/s since, %s of the errors counted (4xx and 5xx but 401/403/429)",
			set404Name(ev.Metrics), x.name, x.name, f.fact("was"), x.okBefore, ts(x.flipAt), x.code, x.nfNow, f.fact("share"))}
		if r := f.fact("others"); r != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("the other requests of %s fail at %s", x.subject, r))
		}
		routeCaller(ev, &f, x.name, x.code)
		// Who still calls the route is what makes the answer: without it
		// (no access log, no probe object) the reading stays unsure.
		if c := f.fact("caller"); c != "" {
			why := fmt.Sprintf("the errors are %ss on %s, a route gone since %s, called by %s", x.code, x.name, ts(x.flipAt), c)
			if f.fact("probe") != "" {
				why = fmt.Sprintf("the errors are %ss on %s, a route gone since %s, called by a probe (%s)", x.code, x.name, ts(x.flipAt), c)
			}
			f.setFact("why", why)
		} else {
			f.Weight = 0.55
		}
		f.Summary = fmt.Sprintf("%s answers %s on %s since %s (%s of its errors)", x.subject, x.code, x.name, ts(x.flipAt), f.fact("share"))
		out = append(out, f)
	}
	return out
}

// set404Name is the name of the request metric read.
func set404Name(sets []MetricSet) string {
	for _, s := range sets {
		if s.Class == MetricRequests {
			return s.Name
		}
	}
	return "requests"
}

// routeCaller reads who calls the removed route from the access-log lines
// of its 404s (their user agent), and the probe objects a transcript
// printed that target it.
func routeCaller(ev *Gathered, f *Finding, route, code string) {
	path := strings.TrimSuffix(route, "/")
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			l := t.Example
			if !strings.Contains(l, path) {
				continue
			}
			req, ok := parseRequestLine(l)
			if !ok || !strings.HasPrefix(req.Path, path) || strconv.Itoa(req.Status) != code {
				continue
			}
			ua := req.Agent
			if m := findSubmatch(uaFieldRE, l); m != nil {
				ua = m[1] // a quoted ua= field, spaces and all
			} else if m := findSubmatch(lastQuotedRE, l); ua == "" && m != nil {
				ua = m[1] // the combined format's last field
			}
			if ua == "" || ua == "-" {
				continue
			}
			f.setFact("caller", fmt.Sprintf("user agent %q", ua))
			if matchLine(probeAgentRE, ua) {
				f.setFact("probe", "true")
			}
			f.Evidence = append(f.Evidence, fmt.Sprintf("the access log of %s shows who calls it: %s", set.Subject, quote(ReadableLine(l), 220)))
			break
		}
		if f.fact("caller") != "" {
			break
		}
	}
	for _, c := range ev.Commands {
		if !strings.Contains(strings.Join(c.Lines, "\n"), path) || !matchLine(probeAgentRE, c.Command+" "+strings.Join(c.Lines, "\n")) && !strings.Contains(strings.ToLower(c.Command), "probe") {
			continue
		}
		f.setFact("probe", "true")
		f.setFact("probe_target", fmt.Sprintf("a probe object targets %s: `%s`", path, truncate(c.Command, 120)))
		if f.fact("caller") == "" {
			f.setFact("caller", "the probe that "+truncate(c.Command, 120)+" shows")
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), quote(strings.Join(strings.Fields(strings.Join(c.Lines, "\n")), " "), 200)))
		break
	}
}
