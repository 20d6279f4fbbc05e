package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A client configured with a list of servers (an LDAP federation's
// "ldaps://dc1 ldaps://dc2", a driver's host list, a resolver's
// nameservers) tries them in order on every new connection. When the
// first one is gone without refusing (powered off, its address still in
// DNS, a firewall dropping the packets), each connection first waits the
// whole connect timeout on it and only then fails over to the next: every
// call works, but each one takes the timeout longer. The service looks
// slow, not broken, and scaling it changes nothing. The client's own lines
// say it: "previous url ldaps://dc1:636 failed: ... Connect timed out",
// "server ad1:636 unreachable, failing over to ad2:636 ... i/o timeout",
// "Failed to connect to ldap://ad1:389, trying next server ...: connect
// timed out". Such lines often appear only once someone raises the log
// level to look, hours after the latency rose: the latency metric of the
// client dates the onset, and the change that took the first server away
// (a decommission, a shutdown) is named by the server's name.

// KindFailoverWait is a client that waits its connect timeout on a dead
// first server before failing over to the next, on every call.
const KindFailoverWait Kind = "failover_wait"

var (
	// failoverRE is a client saying it moved on from a server to the next.
	failoverRE = regexp.MustCompile(`(?i)\bprevious (?:url|server|host|address)\b|\bfail(?:ing|ed|s)?[ -]?over\b|\btrying (?:the )?next\b|\bnext (?:server|host|url|endpoint|address)\b`)
	// connectNoAnswerRE is a connection attempt that got no answer at all
	// (not a refusal, which costs nothing).
	connectNoAnswerRE = regexp.MustCompile(`(?i)\bconnect(?:ion)? timed out\b|\bconnect timeout\b|\btimed out (?:while )?connecting\b|\bi/o timeout\b|\bETIMEDOUT\b|\bConnectTimeoutException\b|\bSocketTimeoutException: connect\b`)
	// failedServerRE is the server the line says failed (a URL, a
	// dotted host name or a host:port, not an operation's name) right
	// before "failed"/"unreachable"/"timed out", after
	// "failed to connect to", or curl's "connect to HOST port N failed".
	failedServerRE = regexp.MustCompile(`(?i)((?:[a-z][\w+.-]*://[a-z0-9][\w.-]*(?::\d+)?|[a-z0-9][\w-]*(?:\.[\w-]+)+(?::\d+)?|[a-z0-9][\w.-]*:\d+))/?'?,? (?:failed|timed out|is unreachable|unreachable|is not available|not available|did not answer|not responding)\b|\b(?:failed|unable|could not|cannot) (?:to )?connect to '?((?:[a-z][\w+.-]*://[a-z0-9][\w.-]*(?::\d+)?|[a-z0-9][\w-]*(?:\.[\w-]+)+(?::\d+)?|[a-z0-9][\w.-]*:\d+))|\bconnect to ([\w.-]+ port \d+) failed\b`)
	// nextServerRE is the server the client moved on to.
	nextServerRE = regexp.MustCompile(`(?i)(?:fail(?:ing|ed)?[ -]?over|falling back|switch(?:ing|ed)?) to '?((?:[a-z][\w+.-]*://)?[a-z0-9][\w.-]*(?::\d+)?)|\bnext (?:server|host|url|endpoint) '?((?:[a-z][\w+.-]*://)?[a-z0-9][\w.-]*(?::\d+)?)|\bconnection url:? '?((?:[a-z][\w+.-]*://)?[a-z0-9][\w.-]*(?::\d+)?)`)
	// serverURLRE is a server named by its URL.
	serverURLRE = regexp.MustCompile(`(?i)\b[a-z][\w+.-]*://[a-z0-9][\w.-]*(?::\d+)?`)
	// serverGoneRE is a change that takes a server away.
	serverGoneRE = regexp.MustCompile(`(?i)\bdecommission|\bpower(?:ed|ing)? (?:off|down)\b|\bshut ?down\b|\bretir(?:e|ed|ing)\b|\bremov(?:e|ed|ing)\b|\bdemot(?:e|ed|ing)\b|\bdelet(?:e|ed|ing)\b|\bmigrat`)
)

var failoverWait = &mechanism{
	kind:   KindFailoverWait,
	class:  classCause,
	label:  "connect timeout on a dead first server before each failover",
	detect: detectFailoverWait,
	// Only the change that took the server away triggers it: one naming
	// the server (its content fact), or one that retires a server.
	fitsChange:     changeSays(serverGoneRE),
	strictTriggers: true,
	refines:        []Kind{KindSlowOperation, KindLatency, KindTimeout},
	related: func(h *Hypothesis, f *Finding) bool {
		// The caller's timeouts to the dead server are these waits.
		return f.Kind == KindTimeout && strings.EqualFold(f.fact("caller"), h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		failed, next := h.fact("failed"), h.fact("next")
		d := fmt.Sprintf("%s waits on a dead first server: each connection it opens first tries %s, which does not answer (the connect timed out), and only after the connect timeout", h.Subject, failed)
		if w := h.fact("waited"); w != "" {
			d += " (" + w + ")"
		}
		d += " fails over to " + orWord(next, "the next server in its list")
		d += fmt.Sprintf(", so every call that needs a connection takes that much longer; %s itself is not overloaded", h.Subject)
		if at := h.fact("latency_from"); at != "" {
			d += fmt.Sprintf("; its latency rose at %s, when %s stopped answering (the lines that show the failover only begin at %s)", at, failed, h.fact("lines_from"))
		}
		d += h.quoteClause(": ", "line", 240)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		failed, next := h.fact("failed"), orWord(h.fact("next"), "the live servers")
		r.high("Remove %s from the server list %s connects to (or bring it back, or drop its DNS record), so connections go straight to %s", failed, h.Subject, next)
		r.med("Lower the connect timeout of %s's server list to a few seconds, so a dead server costs little until it is removed", h.Subject)
		r.low("Probe each server %s is configured with, not only the pool as a whole, and alert when one stops answering", h.Subject)
	},
}

// failedServer is the server a failover line says failed, and its
// host.
func failedServer(line string) (server, host string) {
	server = strings.TrimRight(firstGroup(findSubmatch(failedServerRE, line)), ".,;:")
	if server == "" {
		return "", ""
	}
	host = server
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = rest
	}
	if h, _, ok := strings.Cut(host, " port "); ok {
		host = h
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	return server, host
}

// detectFailoverWait reads, in each service's log, the lines that say a
// connection to one server timed out and the client moved on to the
// next. The onset is the earliest of the first such line and the rise of
// the service's latency when the latency reached about the wait: the
// lines may only show once debug logging was turned on.
func detectFailoverWait(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for set, t := range incidentTemplates(ev) {
		line := t.Example
		if !matchLine(failoverRE, line) || !matchLine(connectNoAnswerRE, line) {
			continue
		}
		failed, host := failedServer(line)
		if host == "" || seen[set.Subject] || strings.EqualFold(host, set.Subject) {
			continue
		}
		next := strings.TrimRight(firstGroup(findSubmatch(nextServerRE, line)), ".,;:")
		if next != "" && strings.Contains(strings.ToLower(next), strings.ToLower(host)) {
			next = ""
		}
		// Else the other server the line names by its URL.
		for _, u := range findAllString(serverURLRE, line, -1) {
			if next == "" && !strings.Contains(strings.ToLower(u), strings.ToLower(host)) {
				next = u
			}
		}
		seen[set.Subject] = true
		first := orTime(t.FirstIncident, t.FirstSeen)
		f := Finding{Kind: KindFailoverWait, Subject: set.Subject, Namespace: set.Namespace, Source: set.Origin, Object: set.Origin + " " + set.Source,
			Time: first, Severity: SevCritical, Weight: 0.9, Related: []string{host}}
		f.setFact("line", line)
		f.setFact("caller", set.Subject)
		f.setFact("failed", failed)
		f.setFact("next", next)
		// The server is named by its full name and its first label
		// ("dc1" of dc1.corp.example.com), as a change would name it.
		names := host
		if short, _, ok := strings.Cut(host, "."); ok && len(short) >= 4 && !isNumeric(short) {
			names += ", " + short
		}
		f.setFact("failed_server", names)
		wait, ok := lineDuration(line)
		if ok {
			f.setFact("waited", seconds(wait))
		}
		f.Evidence = []string{fmt.Sprintf("%s logs a connection to %s timing out before each failover (%s from %s): %s", set.Subject, failed, plural(t.Incident, "line", "lines"), hm(first), quote(ReadableLine(line), 260))}
		// The caller's latency metric (a series of the service asked
		// about may name no subject) may date the onset: it rose when the
		// server went, before the lines were logged.
		for i := range found {
			l := &found[i]
			if l.Kind != KindLatency || l.Source != SrcMetrics || !strings.EqualFold(orWord(l.Subject, ev.Scope.Service), set.Subject) || !l.Time.Before(first.Add(-5*time.Minute)) {
				continue
			}
			if f.Time.After(l.Time) {
				f.Time = l.Time
				f.setFact("latency_from", l.Time.UTC().Format("2006-01-02 15:04 UTC"))
				f.setFact("lines_from", first.UTC().Format("15:04 UTC"))
			}
		}
		f.Summary = fmt.Sprintf("%s waits the connect timeout on %s before failing over to %s", set.Subject, failed, orWord(next, "the next server"))
		out = append(out, f)
	}
	return out
}

func isNumeric(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
