package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// KindKeepAliveRace: a proxy that keeps idle upstream connections open
// longer than the upstream does. The upstream closes an idle connection
// (Node's http.Server keepAliveTimeout of 5 s, a server's idle timeout)
// just as the proxy sends the next request on it: the proxy reads a reset
// or an early close before any response header and answers 502 at once.
// A small share of requests fails, at random, with an upstream time near
// zero, and the upstream logs nothing (the request never reached it).
const KindKeepAliveRace Kind = "keepalive_race"

var keepAliveRace = &mechanism{
	kind:       KindKeepAliveRace,
	class:      classCause,
	label:      "idle keep-alive connections closed by the upstream while the proxy reuses them",
	detect:     detectKeepAliveRace,
	fitsChange: changeSays(keepAliveChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		proxy := orWord(h.fact("proxy"), "the proxy")
		d := fmt.Sprintf("idle keep-alive connections to %s are closed by %s while %s reuses them: requests sent on a connection the upstream is closing get %s before any response header, and %s answers 502 at once (%s lines from %s, to %s)",
			h.Subject, h.Subject, proxy, orWord(h.fact("symptom"), "a reset"), proxy, h.fact("lines"), h.fact("first"), orWord(h.fact("upstreams"), "the upstream"))
		if t := h.fact("upstream_timeout"); t != "" {
			d += fmt.Sprintf("; %s closes idle connections after %s, sooner than %s keeps them", h.Subject, t, proxy)
		}
		d += h.clause("; upstream keepalive was enabled by the ", "keepalive_change")
		d += h.quoteClause(": ", "line", 200)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Make %s keep idle upstream connections to %s for less time than %s does (nginx keepalive_timeout below the upstream's idle timeout), or raise %s's keep-alive timeout (Node: server.keepAliveTimeout above the proxy's, headersTimeout above that)", orWord(h.fact("proxy"), "the proxy"), h.Subject, h.Subject, h.Subject)
		r.med("Let the proxy retry idempotent requests on a fresh connection when a reused one fails before the response (proxy_next_upstream error)")
		r.low("Alert on the proxy's 502s with an upstream time near zero per upstream")
	},
}

var (
	// A proxy's report that the upstream closed or reset a connection
	// before any response header: nginx, Envoy, HAProxy.
	earlyCloseRE  = regexp.MustCompile(`(?i)upstream prematurely closed connection while reading response header|recv\(\) failed \(104: Connection reset by peer\) while reading response header|upstream connect error or disconnect/reset before headers\. reset reason: connection termination|Connection reset by peer\) while reading response header`)
	upstreamURLRE = regexp.MustCompile(`upstream: "[a-z]+://([^/"]+)`)
	requestPathRE = regexp.MustCompile(`request: "(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) (/[^ "?]*)`)
	// A change that makes a proxy reuse upstream connections.
	keepAliveChangeRE = regexp.MustCompile(`(?i)keep-?alive|connection ""|proxy_http_version 1\.1|reuse (upstream )?connections|idle[ _-]?timeout|connection reuse|http/1\.1 to (the )?upstream`)
	// What an upstream logs of its own idle timeout.
	idleTimeoutRE = regexp.MustCompile(`(?i)keepAliveTimeout[=: ]+(\d+\s*m?s)|keep-?alive[ _-]?timeout[=: ]+(\d+\s*m?s?)|idle[ _-]?timeout[=: ]+(\d+\s*m?s?)`)
)

// detectKeepAliveRace reads a proxy's early-close errors, grouped by the
// service behind the upstream.
func detectKeepAliveRace(ev *Gathered, _ []Finding) []Finding {
	type group struct {
		proxy, service string
		upstreams      map[string]bool
		lines          int
		first          time.Time
		example        string
		symptom        string
	}
	groups := map[string]*group{}
	for set, t := range incidentTemplates(ev) {
		if !matchLine(earlyCloseRE, t.Example) {
			continue
		}
		up := ""
		if m := findSubmatch(upstreamURLRE, t.Example); m != nil {
			up = m[1]
		}
		svc := ""
		if m := findSubmatch(requestPathRE, t.Example); m != nil {
			svc = serviceOfRoute(m[1], ev)
		}
		if svc == "" {
			svc = DependencyName(up)
		}
		if svc == "" {
			continue
		}
		g := groups[svc]
		if g == nil {
			g = &group{service: svc, upstreams: map[string]bool{}, proxy: proxyName(set, ev.Scope)}
			groups[svc] = g
		}
		if up != "" {
			g.upstreams[up] = true
		}
		g.lines += t.Incident + t.Baseline
		at := firstOf(t.FirstSeen, t.FirstIncident)
		if g.first.IsZero() || at.Before(g.first) {
			g.first, g.example = at, t.Example
		}
		if strings.Contains(strings.ToLower(t.Example), "reset") {
			g.symptom = "a reset (Connection reset by peer)"
		} else if g.symptom == "" {
			g.symptom = "an early close (upstream prematurely closed connection)"
		}
	}
	var out []Finding
	for _, n := range slices.Sorted(maps.Keys(groups)) {
		g := groups[n]
		if g.lines < 3 {
			continue
		}
		ups := slices.Sorted(maps.Keys(g.upstreams))
		f := Finding{Kind: KindKeepAliveRace, Subject: g.service, Object: "upstream " + g.service, Time: g.first, Severity: SevWarning, Weight: 0.7, Source: SrcLogs}
		f.setFact("proxy", g.proxy)
		f.setFact("caller", g.proxy)
		f.setFact("lines", fmt.Sprintf("%d", g.lines))
		f.setFact("first", ts(g.first))
		f.setFact("upstreams", strings.Join(ups, ", "))
		f.setFact("symptom", g.symptom)
		f.setFact("line", g.example)
		if g.proxy != "" {
			f.Related = append(f.Related, g.proxy)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d early closes or resets of upstream connections to %s before any response header from %s: %s", g.proxy, g.lines, strings.Join(ups, ", "), ts(g.first), quote(ReadableLine(g.example), 220)))
		if n, l := proxy502s(ev.Logs, g.proxy); n > 0 {
			f.setFact("bad_gateway", fmt.Sprintf("%d", n))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s answered %d requests with 502 in the window: %s", g.proxy, n, quote(ReadableLine(l), 220)))
		}
		if tmo := upstreamIdleTimeout(ev.Logs, g.service); tmo != "" {
			f.setFact("upstream_timeout", tmo)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s closes idle connections after %s", g.service, tmo))
			f.Weight += 0.1
		}
		if c := keepAliveChange(ev, g.proxy, g.first); c != "" {
			f.setFact("keepalive_change", c)
			f.Evidence = append(f.Evidence, c)
			f.Weight += 0.15
		}
		f.Summary = fmt.Sprintf("%s's upstream connections to %s are closed under it (%d early closes/resets)", g.proxy, g.service, g.lines)
		out = append(out, f)
	}
	return out
}

// serviceOfRoute names the service a route belongs to when one of its
// segments is the name of a service the evidence knows ("/v1/profile/me"
// → profile-service).
func serviceOfRoute(route string, ev *Gathered) string {
	var known []string
	for _, set := range ev.Logs {
		for _, n := range []string{set.Subject, subjectOfSource(set.Source)} {
			if n != "" {
				known = append(known, strings.ToLower(n))
			}
		}
	}
	for _, seg := range strings.Split(strings.ToLower(route), "/") {
		if len(seg) < 3 || strings.HasPrefix(seg, "v") && len(seg) <= 3 {
			continue
		}
		for _, k := range known {
			if k == seg || strings.HasPrefix(k, seg+"-") || strings.HasPrefix(k, strings.TrimSuffix(seg, "s")+"-") {
				return k
			}
		}
	}
	return ""
}

// proxyName is the proxy whose log a set is: the question's service when
// the source is under it, else the set's subject.
func proxyName(set *LogSet, sc Scope) string {
	if sc.Service != "" && strings.Contains(strings.ToLower(set.Source+" "+set.Subject), strings.ToLower(sc.Service)) {
		return sc.Service
	}
	return orWord(set.Subject, subjectOfSource(set.Source))
}

// upstreamIdleTimeout is the idle (keep-alive) timeout the upstream's own
// log states, if any.
func upstreamIdleTimeout(sets []LogSet, service string) string {
	for _, set := range sets {
		if !strings.EqualFold(set.Subject, service) && !strings.EqualFold(subjectOfSource(set.Source), service) {
			continue
		}
		for _, t := range set.Templates {
			if m := findSubmatch(idleTimeoutRE, t.Example); m != nil {
				return orWord(m[1], orWord(m[2], m[3]))
			}
		}
	}
	return ""
}

// keepAliveChange is a change that made the proxy reuse upstream
// connections, before the first early close.
func keepAliveChange(ev *Gathered, proxy string, first time.Time) string {
	for _, c := range ev.Changes {
		if c.Timestamp.After(first.Add(2*time.Minute)) || !matchLine(keepAliveChangeRE, c.Description) {
			continue
		}
		if proxy != "" && !strings.EqualFold(c.Service, proxy) && !strings.Contains(strings.ToLower(c.Description), "upstream") {
			continue
		}
		return fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description)
	}
	return ""
}

var status502RE = regexp.MustCompile(`" 502 |\bstatus[=:]"?502\b`)

// proxy502s counts the proxy's 502 answers in the window, from its access
// log.
func proxy502s(sets []LogSet, proxy string) (int, string) {
	n, example := 0, ""
	for i := range sets {
		set := &sets[i]
		if proxyName(set, Scope{Service: proxy}) != proxy {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident > 0 && matchLine(status502RE, t.Example) {
				n += t.Incident
				if example == "" {
					example = t.Example
				}
			}
		}
	}
	return n, example
}
