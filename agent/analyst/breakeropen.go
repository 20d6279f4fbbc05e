package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A client-side circuit breaker held open by its dependency: a service
// guards its calls to a dependency (often a third-party API) with a
// breaker (Resilience4j, Hystrix, Polly, gobreaker, opossum, Failsafe);
// the dependency slowed down or failed, the breaker's slow-call or
// failure rate crossed its threshold and it opened, and while it is open
// the service rejects the calls at once (CallNotPermittedException,
// BrokenCircuitException, "short-circuited", ErrOpenState) and answers its
// own callers with fast errors. It re-opens after every half-open probe
// while the dependency stays bad. The fast errors look like the service's
// own failure (a 503 in 2 ms, right after its deploy), but the breaker is
// protection doing its job: the cause is the dependency it guards. Read
// from the service's log: the breaker's state changes and rejections (its
// name), the reason it opened (slow call rate, failure rate), and the calls
// to the dependency the breaker is named for (their host and how long they
// took).

// KindBreakerOpen is a service's circuit breaker held open by the
// dependency it guards.
const KindBreakerOpen Kind = "breaker_open"

var (
	// breakerOpenRE is a breaker opening or rejecting calls while open,
	// in the words of the common libraries.
	breakerOpenRE = regexp.MustCompile(`(?i)CircuitBreaker '[^']+' (?:changed state from \w+ to (?:FORCED_)?OPEN|is (?:FORCED_)?OPEN)|CallNotPermittedException|short-circuited|BrokenCircuitException|circuit (?:is now |is )?open\b|circuit breaker is open|breaker is open|EOPENBREAKER|CircuitBreakerOpenException|state changed from (?:closed|half[-_ ]?open) to open`)
	// breakerNameRE is the breaker's name: Resilience4j's 'name',
	// gobreaker's and opossum's name= / breaker=, Hystrix's command key.
	breakerNameRE = regexp.MustCompile(`(?i)CircuitBreaker '([^']+)'|\b(?:breaker|circuit|circuit_?breaker|cb)[_ ]?(?:name)?["']?\s*[=:]\s*["']?([A-Za-z][\w.-]*)|\b([A-Za-z][\w.-]*) short-circuited|\bbreaker ([A-Za-z][\w.-]*)[:,]? (?:state changed|is open)`)
	// breakerReasonRE is why it opened: the slow-call or failure rate
	// over its threshold.
	breakerReasonRE = regexp.MustCompile(`(?i)((?:slow call|failure|error) rate[^)";]*?(?:>=|>|exceeded|threshold)[^)";]*)|exceeded (slow call rate|failure rate) threshold`)
	// breakerSlowRE is a breaker opened on slow calls rather than
	// failures.
	breakerSlowRE = regexp.MustCompile(`(?i)slow call|slowCall|\bslow\b`)
)

var breakerOpen = &mechanism{
	kind:  KindBreakerOpen,
	class: classDependency,
	label: "a circuit breaker held open by the dependency it guards",
	detect: func(ev *Gathered, found []Finding) []Finding {
		return detectBreakerOpen(ev)
	},
	// The guarding service's fast errors and latency, and its callers'
	// failures, are what the open breaker costs them.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		c := h.fact("caller")
		if c == "" {
			return false
		}
		return f.Subject == c || f.fact("caller") == c || f.fact("callee") == c || slices.Contains(f.Related, c)
	}),
	// Only a change to the breaker or to the calls it guards triggers it
	// (its thresholds, the dependency's endpoint or client); the guarding
	// service's other deploys are coincidences.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		// A breaker opened on client errors: the caller's change that
		// began the calls answered with them.
		if h.fact("client_errors") != "" && strings.EqualFold(c.Subject, h.fact("caller")) {
			return true
		}
		for _, w := range []string{h.Subject, h.fact("breaker"), h.fact("host")} {
			if w != "" && strings.Contains(t, strings.ToLower(w)) {
				return true
			}
		}
		return strings.Contains(t, "circuit") || strings.Contains(t, "breaker") || strings.Contains(t, "resilience4j") || strings.Contains(t, "hystrix")
	},
	describe: func(h *Hypothesis, sc Scope) string {
		caller := orWord(h.fact("caller"), "the service")
		dep := h.Subject
		if host := h.fact("host"); host != "" && !strings.EqualFold(host, dep) {
			dep += " (" + host + ")"
		}
		what := "fails"
		if h.fact("slow") != "" {
			what = "answers slowly"
		}
		if ce := h.fact("client_errors"); ce != "" {
			return describeBreakerClientErrors(h, caller, dep, ce)
		}
		d := fmt.Sprintf("%s's circuit breaker %s opened because the dependency it guards, %s, %s", caller, quote(orWord(h.fact("breaker"), h.Subject), 60), dep, what)
		if h.fact("external") != "" {
			d += " (an external, third-party API)"
		}
		if l := h.fact("longest"); l != "" {
			d += fmt.Sprintf(": its calls take up to %s%s", l, h.clause(" since ", "slow_since"))
		}
		d += fmt.Sprintf("; the breaker opened at %s", orWord(h.fact("opened"), "the onset"))
		d += h.wrapped(" (", "reason", ")")
		if h.fact("reopened") != "" {
			d += " and opens again after every half-open probe"
		}
		d += fmt.Sprintf(", and while it is open %s rejects the calls at once and answers its callers with fast errors", caller)
		d += h.quoteClause(" — ", "line", 220)
		d += fmt.Sprintf(". The breaker protects %s; the cause is %s, not a change to %s", caller, h.Subject, caller)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		caller := orWord(h.fact("caller"), "the service")
		if ce := h.fact("client_errors"); ce != "" {
			r.rollback()
			r.high("Stop %s's circuit breaker %s from recording %s answers as failures (Resilience4j's ignoreExceptions or recordFailurePredicate, Polly's and Hystrix's handled exceptions: count only 5xx and timeouts), and treat %s on %s as the absent data it is", caller, quote(orWord(h.fact("breaker"), h.Subject), 60), ce, ce, orWord(h.fact("client_calls"), "these calls"))
			r.med("Do not roll back %s for these errors: it answers as designed; give the new calls a breaker of their own so an optional lookup cannot open the breaker of %s's essential calls", h.Subject, caller)
			r.low("Alert on the breaker's state and on the share of client errors among the calls it records")
			return
		}
		if h.fact("external") != "" {
			r.high("Take %s's %s up with its provider (its status page, support); meanwhile give %s a fallback while the breaker is open (cached answers, a default, a second provider) instead of failing", h.Subject, map[bool]string{true: "slowness", false: "failures"}[h.fact("slow") != ""], caller)
		} else {
			r.high("Restore %s (its latency and errors, its recent changes); meanwhile give %s a fallback while the breaker is open instead of failing", h.Subject, caller)
		}
		r.med("Do not roll back %s for these errors: they are its breaker rejecting calls to %s; check the breaker's thresholds (slow-call duration, failure rate, wait in open state) against %s's normal latency", caller, h.Subject, h.Subject)
		r.low("Alert on the breaker's state (resilience4j_circuitbreaker_state, its state-change log) and on the latency of %s's calls to %s", caller, h.Subject)
	},
}

// describeBreakerClientErrors explains a breaker opened on the
// dependency's client errors.
func describeBreakerClientErrors(h *Hypothesis, caller, dep, ce string) string {
	d := fmt.Sprintf("%s's circuit breaker %s opened on client errors, not on a failure of %s: %s answers %s", caller, quote(orWord(h.fact("breaker"), h.Subject), 60), h.Subject, dep, ce)
	d += h.clause(" to ", "client_calls")
	d += h.clause(" (since ", "client_since") + map[bool]string{true: ")", false: ""}[h.fact("client_since") != ""]
	d += fmt.Sprintf(", an answer by design (the data does not exist), and the breaker records it as a failure; the failure rate crossed its threshold and the breaker opened at %s", orWord(h.fact("opened"), "the onset"))
	d += h.wrapped(" (", "reason", ")")
	if h.fact("reopened") != "" {
		d += " and opens again after every half-open probe"
	}
	d += fmt.Sprintf(", and while it is open %s rejects all its calls to %s at once, the essential ones too", caller, h.Subject)
	d += h.quoteClause(" — ", "line", 200)
	if c := h.Trigger; c != nil && c.Subject == caller {
		d += fmt.Sprintf(". The calls that get %s came with %s's change; %s itself is healthy", ce, caller, h.Subject)
	} else {
		d += fmt.Sprintf(". %s itself is healthy", h.Subject)
	}
	return d
}

// breakerState is what one service's log says of one breaker.
type breakerState struct {
	caller, ns, name, line, reason, host string
	opened, slowSince                    time.Time
	opens, lines                         int
	slow, external                       bool
	longest                              time.Duration
	// The dependency's client errors the caller logs on the calls the
	// breaker guards (404 Not Found, WebClientResponseException$NotFound)
	// and its server errors and timeouts on them.
	clientErr, clientCall, clientLine string
	clientN, serverN                  int
	clientSince                       time.Time
}

var (
	// clientErrorRE is a call answered with a client error: the status
	// and its reason, Spring's WebClientResponseException$NotFound and
	// HttpClientErrorException$NotFound, a status= field of 4xx (not 408,
	// 429: those are the dependency's load).
	clientErrorRE = regexp.MustCompile(`(?i)\b(40[0-79]|41\d|42[0-28]) (Not Found|Bad Request|Conflict|Gone|Unprocessable (?:Entity|Content)|Forbidden|Unauthorized|Precondition Failed)\b|(?:ResponseException|ClientErrorException)\$(NotFound|BadRequest|Conflict|Gone|UnprocessableEntity)\b|\bstatus(?:_code|Code)?["']?\s*[=:]\s*["']?(40[0-79]|41\d|42[0-28])\b`)
	// serverErrorRE is a call answered with a server error or cut by a
	// timeout.
	serverErrorRE = regexp.MustCompile(`(?i)\b5\d\d (?:Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout)|ResponseException\$(?:InternalServerError|BadGateway|ServiceUnavailable|GatewayTimeout)|\bstatus(?:_code|Code)?["']?\s*[=:]\s*["']?5\d\d\b|timed? ?out|TimeoutException|connection refused|connection reset`)
)

// detectBreakerOpen finds breakers opened in a service's log and the
// dependency each guards.
func detectBreakerOpen(ev *Gathered) []Finding {
	var out []Finding
	for i := range ev.Logs {
		set := &ev.Logs[i]
		// A host's log file counts too: a service's log read from a
		// file is named after the service.
		if set.Subject == "" {
			continue
		}
		byName := map[string]*breakerState{}
		var order []string
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := templateLine(t, breakerOpenRE)
			if line == "" {
				continue
			}
			name := breakerName(line)
			if name == "" {
				continue
			}
			b := byName[strings.ToLower(name)]
			if b == nil {
				b = &breakerState{caller: set.Subject, ns: set.Namespace, name: name}
				byName[strings.ToLower(name)] = b
				order = append(order, strings.ToLower(name))
			}
			at := firstOf(t.FirstIncident, t.FirstSeen)
			if b.opened.IsZero() || at.Before(b.opened) {
				b.opened = at
			}
			b.lines += t.Incident
			if changedToOpen(line) {
				b.opens += t.Incident
			} else if b.line == "" || strings.Contains(line, "Exception") {
				b.line = line
			}
			if m := findSubmatch(breakerReasonRE, line); m != nil && b.reason == "" {
				b.reason = strings.TrimSpace(orWord(m[1], m[2]))
				b.slow = b.slow || matchLine(breakerSlowRE, b.reason)
			}
		}
		for _, k := range order {
			b := byName[k]
			if b.line == "" {
				b.line = firstOpenLine(set, b.name)
			}
			breakerCalls(set, b)
			breakerClientErrors(set, b)
			subject := DependencyName(b.name)
			// Named from the calls it guards: the dependency's host.
			if b.clientN > 0 && b.serverN == 0 && b.longest == 0 && b.host != "" {
				subject = DependencyName(b.host)
			}
			f := Finding{Kind: KindBreakerOpen, Subject: subject, Namespace: b.ns, Source: SrcLogs, Object: set.Origin + " " + set.Source,
				Time: firstOf(b.slowSince, b.opened), Severity: SevCritical, Weight: 0.8, Related: []string{b.caller}}
			if !b.slowSince.IsZero() && b.opened.Before(b.slowSince) {
				f.Time = b.opened
			}
			if b.longest > 0 || b.reason != "" {
				f.Weight = 0.9
			}
			f.setFact("caller", b.caller)
			f.setFact("breaker", b.name)
			f.setFact("host", b.host)
			f.setFact("line", b.line)
			f.setFact("reason", b.reason)
			f.setFact("opened", hm(b.opened))
			if b.opens > 1 {
				f.setFact("reopened", "true")
			}
			if b.slow {
				f.setFact("slow", "true")
			}
			if b.external {
				f.setFact("external", "true")
			}
			if b.clientN > 0 && b.serverN == 0 && b.longest == 0 {
				f.setFact("client_errors", b.clientErr)
				f.setFact("client_calls", b.clientCall)
				f.setFact("client_since", hm(b.clientSince))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s's calls to %s are answered %s (%d lines from %s, no server errors or timeouts): %s", b.caller, orWord(b.host, f.Subject), b.clientErr, b.clientN, hm(b.clientSince), quote(ReadableLine(b.clientLine), 240)))
			}
			if b.longest > 0 {
				f.setFact("longest", roundCallDuration(b.longest))
				f.setFact("slow_since", hm(b.slowSince))
			}
			f.Summary = fmt.Sprintf("%s's circuit breaker %s for %s is open (%d lines from %s)", b.caller, quote(b.name, 60), f.Subject, b.lines, hm(b.opened))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logs its circuit breaker %s open from %s: %s", b.caller, quote(b.name, 60), hm(b.opened), quote(ReadableLine(b.line), 240)))
			if b.longest > 0 {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s's calls to %s take up to %s from %s", b.caller, orWord(b.host, f.Subject), roundCallDuration(b.longest), hm(b.slowSince)))
			}
			out = append(out, f)
		}
	}
	return out
}

// breakerName is the name a breaker line gives the breaker ("" for none).
func breakerName(line string) string {
	m := findSubmatch(breakerNameRE, line)
	if m == nil {
		return ""
	}
	for _, s := range m[1:] {
		if s != "" && !stopHosts[strings.ToLower(s)] && !strings.EqualFold(s, "open") && !strings.EqualFold(s, "is") {
			return s
		}
	}
	return ""
}

// changedToOpen reports whether a breaker line is its change to open (not
// a call rejected while open).
func changedToOpen(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "changed state from") || strings.Contains(l, "state changed from") || strings.Contains(l, "circuit is now open") && !strings.Contains(l, "exception")
}

// firstOpenLine is the first incident line of a set naming the breaker
// open.
func firstOpenLine(set *LogSet, name string) string {
	for _, t := range set.Templates {
		if t.Incident > 0 && matchLine(breakerOpenRE, t.Example) && strings.Contains(strings.ToLower(t.Example), strings.ToLower(name)) {
			return t.Example
		}
	}
	return ""
}

// breakerCalls reads the service's calls to the dependency the breaker is
// named for: the lines of the incident that name the breaker's name and
// state a duration (a slow-call warning, a request line) give the
// dependency's host and how long its calls took.
func breakerCalls(set *LogSet, b *breakerState) {
	name := strings.ToLower(b.name)
	for _, t := range set.Templates {
		if t.Incident == 0 {
			continue
		}
		for _, line := range t.Lines() {
			if matchLine(breakerOpenRE, line) || !strings.Contains(strings.ToLower(line), name) {
				continue
			}
			if h := externalHost(line); h != "" && strings.Contains(h, name) {
				b.host, b.external = h, true
			} else if h := DependencyTarget(line); h != "" && b.host == "" && strings.Contains(strings.ToLower(h), name) {
				b.host = h
			}
			d := callDuration(line)
			if d < time.Second || t.Baseline > 0 && !t.New && t.Surge < 3 {
				continue
			}
			if d > b.longest {
				b.longest = d
			}
			if at := firstOf(t.FirstIncident, t.FirstSeen); b.slowSince.IsZero() || at.Before(b.slowSince) {
				b.slowSince = at
			}
			b.slow = true
		}
	}
}

// breakerClientErrors reads the answers the dependency the breaker is
// named for gives the caller's calls: client errors (a 404 for data that
// does not exist, a 400) against server errors and timeouts. A breaker
// opened on client errors alone counts answers the dependency gives by
// design as its failures.
func breakerClientErrors(set *LogSet, b *breakerState) {
	name := alnumLower(b.name)
	if len(name) < 4 {
		return
	}
	for _, t := range set.Templates {
		if t.Incident == 0 {
			continue
		}
		for _, line := range t.Lines() {
			if matchLine(breakerOpenRE, line) {
				continue
			}
			host := ""
			for _, m := range findAllSubmatch(urlRE, line, -1) {
				if h := alnumLower(ShortHost(m[1])); h != "" && (strings.Contains(h, name) || strings.Contains(name, h) && len(h) >= 4) {
					host = m[1]
					break
				}
			}
			if host == "" {
				continue
			}
			if matchLine(serverErrorRE, line) {
				b.serverN += t.Incident
				continue
			}
			ms := findAllSubmatch(clientErrorRE, line, -1)
			if len(ms) == 0 {
				continue
			}
			// The status with its reason, where the line gives both.
			m := ms[0]
			for _, x := range ms {
				if x[1] != "" {
					m = x
					break
				}
			}
			b.clientN += t.Incident
			if b.clientErr == "" {
				switch {
				case m[1] != "":
					b.clientErr = m[1] + " " + m[2]
				case m[3] != "":
					b.clientErr = m[3] + " (" + statusOfException(m[3]) + ")"
				default:
					b.clientErr = "status " + m[4]
				}
				b.clientLine = line
				if pm := findSubmatch(callPathRE, line); pm != nil {
					b.clientCall = pm[1] + " " + routeOf(pm[2])
				}
			}
			if at := firstOf(t.FirstIncident, t.FirstSeen); b.clientSince.IsZero() || at.Before(b.clientSince) {
				b.clientSince = at
			}
			b.host = orWord(b.host, ShortHost(host))
		}
	}
}

// statusOfException is the status a Spring client exception names.
func statusOfException(name string) string {
	switch strings.ToLower(name) {
	case "notfound":
		return "404"
	case "badrequest":
		return "400"
	case "conflict":
		return "409"
	case "gone":
		return "410"
	}
	return "422"
}

// alnumLower is s lower-cased with its letters and digits only.
func alnumLower(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roundCallDuration prints a call's length: 7.4 s, 850 ms.
func roundCallDuration(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}
