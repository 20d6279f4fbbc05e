package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A proxy's route timeout shorter than the work behind the route. Envoy
// (an Istio gateway or sidecar, whose VirtualService sets the route's
// timeout and retries' perTryTimeout; Envoy Gateway, Contour, a standalone
// Envoy) gives up on a request when the route's timeout passes, answers
// 504 with response flag UT (response_timeout, "upstream request timeout")
// and resets the upstream's stream; the upstream finishes the work anyway
// and fails to write its answer (broken pipe), and a retry policy sends the
// same slow request again. When a change set or shortened those timeouts
// (route defaults rolled out to every route, a VirtualService edited), the
// requests that always took longer fail from then on at exactly the
// timeout, whatever the database or the deploy of the hour did.

// KindRouteTimeout is a proxy's route timeout cutting requests that take
// longer than it allows.
const KindRouteTimeout Kind = "route_timeout"

var (
	// routeTimeoutLineRE is a request an Envoy proxy timed out: response
	// flag UT, Istio's response_timeout detail.
	routeTimeoutLineRE = regexp.MustCompile(`" 504 (?:[A-Z]{2,4},)*UT\b|\b504 UT\b|\bresponse_timeout\b`)
	// routeTimeoutSettingRE is a timeout a route sets, as a VirtualService
	// ("timeout: 3s", "perTryTimeout: 1500ms") or the proxy's route config
	// ("timeout": "3s", "perTryTimeout": "1.500s") prints it.
	routeTimeoutSettingRE = regexp.MustCompile(`^\s*"?(timeout|perTryTimeout|per_try_timeout|attempts|numRetries|num_retries)"?\s*:\s*"?(\d+(?:\.\d+)?(?:ms|s|m)?)"?,?\s*$`)
	// routeTimeoutChangeRE is a change to routes' timeouts or retries.
	routeTimeoutChangeRE = regexp.MustCompile(`(?i)timeouts?\b|retr(?:y|ies)\b|virtual ?service|route[- ]defaults|httproute`)
	// routeWorkMSRE is a duration an upstream logs for its own work
	// ("render_ms":8016, duration_ms=4200, took_ms: 9).
	routeWorkMSRE = regexp.MustCompile(`"?(\w*(?:_ms|Ms|duration|took|elapsed)\w*)"?\s*[:=]\s*(\d+(?:\.\d+)?)`)
)

var routeTimeout = &mechanism{
	kind:   KindRouteTimeout,
	class:  classCause,
	label:  "proxy route timeout shorter than the requests behind it (504 UT)",
	detect: detectRouteTimeout,
	// Only a change to the routes' timeouts or retries makes requests
	// that always took this long fail; a deploy or a database upgrade of
	// the hour is a coincidence.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind != KindDeploy && matchLine(routeTimeoutChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		where := "the route's timeout"
		if h.fact("istio") != "" {
			where = fmt.Sprintf("the route timeout the VirtualService for %s sets", h.Subject)
		}
		if s := h.fact("settings"); s != "" {
			where += " (" + s + ")"
		}
		d := fmt.Sprintf("%s is shorter than %s's requests take: %s gives up at the timeout and answers 504 UT (upstream request timeout, %s timed out requests)",
			where, h.Subject, orWord(h.fact("proxy"), "the proxy"), h.fact("count"))
		if w := h.fact("work"); w != "" {
			d += fmt.Sprintf(", while %s keeps working (%s) and then fails to write the answer", h.Subject, w)
		}
		if h.fact("retries") != "" {
			d += "; the retries re-send the same slow requests and add load"
		}
		d += h.changeClause("the timeouts were set by", 180)
		d += h.quoteClause(" — ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise the route timeout for %s above the time its slowest legitimate requests take (the VirtualService's timeout, and perTryTimeout or no retries for non-idempotent, expensive requests), or revert the change that set it", h.Subject)
		r.med("Make the slow requests asynchronous (render, then download) or faster, so they fit a short timeout")
		r.low("Alert on 504 responses with response flag UT per route")
	},
}

func detectRouteTimeout(ev *Gathered, found []Finding) []Finding {
	var f *Finding
	count := 0
	for m := range incidentMatches(ev, routeTimeoutLineRE) {
		r, ok := parseRequestLine(m.line)
		if !ok || r.Status != 504 || r.Upstream == "" {
			continue
		}
		// The cluster, else the authority asked for when the upstream
		// is only an address (a standalone Envoy's default format).
		target := r.Upstream
		if h, p, cut := strings.Cut(target, ":"); cut && isDigits(p) {
			target = h
		}
		if matchLine(ipLikeRE, target) {
			target = upstreamName(r.Host)
			if h, p, cut := strings.Cut(target, ":"); cut && isDigits(p) {
				target = h
			}
		}
		if target == "" {
			continue
		}
		if target == m.set.Subject {
			continue
		}
		at := earliest(m.t.FirstSeen, m.t.FirstIncident)
		if f == nil {
			f = &Finding{Kind: KindRouteTimeout, Subject: target, Namespace: hostNamespace(m.line, target), Object: "route to " + target,
				Time: at, Severity: SevCritical, Weight: 0.85, Source: m.set.Origin, Facts: map[string]string{}}
			f.setFact("proxy", m.set.Subject)
			f.setFact("line", m.line)
			if strings.Contains(m.line, "outbound|") {
				f.setFact("istio", "yes")
			}
		}
		if f.Subject != target {
			continue
		}
		if !at.IsZero() && at.Before(f.Time) {
			f.Time = at
		}
		if !slices.Contains(f.Related, m.set.Subject) {
			f.Related = append(f.Related, m.set.Subject)
		}
		count += m.t.Incident
		if len(f.Evidence) < 2 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s timed out %d requests to %s (%s): %s", m.set.Subject, m.t.Incident, target, flagsMeaning(orWord(r.Flags, "UT")), quote(ReadableLine(m.line), 240)))
		}
	}
	if f == nil {
		return nil
	}
	// An upstream whose own latency rose got slower (overloaded, by
	// retries or its own dependency): the timeout only shows that.
	if slices.ContainsFunc(found, func(g Finding) bool { return g.Kind == KindLatency && g.Subject == f.Subject }) {
		return nil
	}
	// The change that set the timeouts: without one, a slow upstream
	// under an old timeout is the upstream's slowness, not this.
	change := ""
	for _, cs := range [][]evidence.Change{ev.Changes, ev.Earlier} {
		for _, c := range cs {
			if c.Kind == "deploy" || !matchLine(routeTimeoutChangeRE, c.Description) || c.Timestamp.After(f.Time) || f.Time.Sub(c.Timestamp) > 7*24*time.Hour {
				continue
			}
			change = fmt.Sprintf("the change of %s at %s: %s", c.Service, ts(c.Timestamp), quote(c.Description, 180))
			f.Evidence = append(f.Evidence, fmt.Sprintf("the change of %s at %s set routes' timeouts: %s", c.Service, ts(c.Timestamp), quote(c.Description, 200)))
		}
	}
	if change == "" {
		return nil
	}
	f.setFact("change", change)
	f.setFact("count", strconv.Itoa(count))
	routeTimeoutSettings(ev, f)
	// The upstream must be seen finishing its work past the timeout: an
	// upstream that is itself failing or overloaded (by retries, by its
	// own dependency) has a cause of its own, the timeout only shows it.
	if !routeWork(ev, f) {
		return nil
	}
	if strings.Contains(strings.ToLower(change), "virtualservice") || slices.ContainsFunc(ev.Commands, func(c evidence.CommandOutput) bool { return strings.HasPrefix(c.Command, "istioctl") }) {
		f.setFact("istio", "yes")
	}
	f.Summary = fmt.Sprintf("%s times out requests to %s at its route timeout (504 UT)", f.fact("proxy"), f.Subject)
	return []Finding{*f}
}

// routeTimeoutSettings reads the route's timeout and retries from the
// commands that show the target's route (a VirtualService, the proxy's
// route config).
func routeTimeoutSettings(ev *Gathered, f *Finding) {
	var got []string
	for _, c := range ev.Commands {
		text := c.Command + "\n" + strings.Join(c.Lines, "\n")
		if !strings.Contains(text, f.Subject) {
			continue
		}
		for _, l := range c.Lines {
			m := findSubmatch(routeTimeoutSettingRE, l)
			if m == nil {
				continue
			}
			s := m[1] + " " + m[2]
			// "attempts: 0" turns the route's retries off.
			if (strings.Contains(strings.ToLower(m[1]), "retries") || m[1] == "attempts") && strings.Trim(m[2], "0") != "" {
				f.setFact("retries", m[2])
			}
			if !slices.Contains(got, s) {
				got = append(got, s)
			}
		}
		if len(got) > 0 {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", truncate(c.Command, 120), strings.Join(got, ", ")))
			break
		}
	}
	if len(got) > 0 {
		f.setFact("settings", strings.Join(got, ", "))
	}
}

// routeWork reads the longest duration the target logs for its own work
// in the window, in milliseconds, and reports whether it completed work
// taking longer than a second and than the route's timeout.
func routeWork(ev *Gathered, f *Finding) bool {
	best, field := 0.0, ""
	for _, set := range ev.Logs {
		if set.Subject != f.Subject {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			for _, l := range t.Lines() {
				for _, m := range findAllSubmatch(routeWorkMSRE, l, -1) {
					if !strings.Contains(strings.ToLower(m[1]), "ms") {
						continue
					}
					if v, err := strconv.ParseFloat(m[2], 64); err == nil && v > best {
						best, field = v, m[1]
					}
				}
				// A duration with its unit ("took=2024ms", "in 1.8s").
				if v, ok := lineDuration(l); ok && v*1000 > best {
					best, field = v*1000, "its log"
				}
			}
		}
	}
	if best < 1000 || best < routeTimeoutMS(f.fact("settings")) {
		return false
	}
	f.setFact("work", fmt.Sprintf("%s up to %.1f s", field, best/1000))
	return true
}

// routeTimeoutMS is the route's timeout in milliseconds from its settings
// ("timeout 3s, perTryTimeout 1.500s"), 0 when none is read.
func routeTimeoutMS(settings string) float64 {
	for _, s := range strings.Split(settings, ", ") {
		name, v, _ := strings.Cut(s, " ")
		if name != "timeout" {
			continue
		}
		if d, err := time.ParseDuration(v); err == nil {
			return float64(d.Milliseconds())
		}
	}
	return 0
}
