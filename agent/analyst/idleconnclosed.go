package analyst

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindIdleConnClosed: a client keeps idle keep-alive connections open
// longer than the server, or a load balancer in the path, keeps them. The
// other side closes a connection that sat idle past its own timeout; the
// client, still holding it in its pool, sends the next request on it and
// reads EOF, a reset or "server closed idle connection" at once. Only
// reused connections fail, at random and a few a minute, while the server
// sees nothing wrong (the request never reached it).
const KindIdleConnClosed Kind = "idle_conn_closed"

var idleConnClosed = &mechanism{
	kind:       KindIdleConnClosed,
	class:      classCause,
	label:      "idle keep-alive connections closed by the other side while the client reuses them",
	detect:     detectIdleConnClosed,
	fitsChange: changeSays(keepAliveChangeRE),
	describe: func(h *Hypothesis, sc Scope) string {
		who := orWord(h.fact("caller"), h.Subject)
		to := orWord(h.fact("target"), "its callee")
		d := fmt.Sprintf("%s's idle keep-alive connections to %s are closed by the other side (the server or a load balancer in the path) while %s still holds them for reuse", who, to, who)
		if t := h.fact("client_idle"); t != "" {
			d += fmt.Sprintf(" (its idle timeout is %s)", t)
		}
		d += fmt.Sprintf(": a request sent on a reused connection finds it closed and fails at once with %s (%s lines from %s", orWord(h.fact("symptoms"), "EOF or a reset"), h.fact("lines"), h.fact("first"))
		d += h.clause(", on connections idle for ", "idle_range")
		d += ")"
		if c := h.fact("keepalive_change"); c != "" {
			d += "; the keep-alive timeout in the path was cut by the " + c
		} else if p := h.fact("proxy_closes"); p != "" {
			d += "; " + p
		}
		d += h.quoteClause(": ", "line", 220)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		who := orWord(h.fact("caller"), h.Subject)
		if t := h.fact("server_idle"); t != "" {
			r.high("Set %s's idle connection timeout below %s (the keep-alive timeout of the side that closes them), or restore that timeout above %s's", who, t, who)
		} else {
			r.high("Set %s's idle connection timeout (Go: Transport.IdleConnTimeout) below the keep-alive timeout of the server or load balancer in front of %s", who, orWord(h.fact("target"), "its callee"))
		}
		r.med("Retry idempotent requests once on a fresh connection when a reused connection fails before any response (EOF, reset)")
		r.low("Alert on the client's errors on reused connections per callee, and review keep-alive timeouts on both sides of a load balancer together")
	},
}

var (
	// The client's own words for a request sent on a connection the other
	// side had closed: Go's net/http, Apache HttpClient, OkHttp, urllib3.
	// (Node's "socket hang up" is any reset: it counts only with a sign of
	// reuse, like a reset.)
	idleClosedRE = regexp.MustCompile(`(?i)server closed idle connection|NoHttpResponseException|(?:target server|:\d{2,5}) failed to respond|unexpected end of stream on|RemoteDisconnected|Remote end closed connection without response`)
	// A Go client's error ending in a bare EOF: the connection was closed
	// before any response ("Post \"https://…\": EOF").
	bareEOFRE = regexp.MustCompile(`(?i)(?:GET|POST|PUT|PATCH|DELETE|HEAD) \\?"[^"\\]+\\?": EOF\b`)
	resetRE   = regexp.MustCompile(`(?i)connection reset by peer|ECONNRESET|broken pipe|socket hang up`)
	// A line that says the connection was a reused one.
	reusedRE = regexp.MustCompile(`(?i)"?conn(?:ection)?_?reused"?\s*[:=]\s*"?true|\breused[=:]\s*true|"reused"\s*:\s*true|was_idle[=:]\s*true`)
	// How long the failing connection sat idle.
	connIdleRE = regexp.MustCompile(`(?i)"?(?:conn_)?idle(?:_time)?_ms"?\s*[:=]\s*"?(\d+)`)
	// The client's idle timeout, from its own configuration line.
	clientIdleRE = regexp.MustCompile(`(?i)idle[_ -]?(?:conn(?:ection)?[_ -]?)?timeout"?\s*[=:]\s*"?(\d+(?:\.\d+)?\s*(?:ms|s|m)?)\b`)
	// A keep-alive timeout changed from one value to another.
	keepAliveCutRE = regexp.MustCompile(`(?i)keep-?alive(?:[_ -]?timeout)?\D{0,20}?(\d+\s*m?s)\s*(?:->|→|to)\s*(\d+\s*m?s)`)
	// HAProxy closing a client's idle keep-alive connection: 408 with the
	// client-side termination state cR and no request (<BADREQ>).
	haproxyIdleRE = regexp.MustCompile(`\s408\s.*\bcR--.*<BADREQ>`)
)

// detectIdleConnClosed reads a client's failures on reused connections,
// grouped by the client and the callee they name.
func detectIdleConnClosed(ev *Gathered, _ []Finding) []Finding {
	type group struct {
		caller, target   string
		lines, idleLines int
		first            time.Time
		example          string
		symptoms         map[string]bool
		idleMin, idleMax int
		clientIdle       string
	}
	groups := map[string]*group{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		caller := orWord(set.Subject, subjectOfSource(set.Source))
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			l := t.Example
			idle := matchLine(idleClosedRE, l)
			reused := matchLine(reusedRE, l)
			eof, reset := matchLine(bareEOFRE, l), matchLine(resetRE, l)
			if !idle && !(reused && (eof || reset)) {
				continue
			}
			target := DependencyName(DependencyTarget(l))
			key := caller + "\x00" + target
			g := groups[key]
			if g == nil {
				g = &group{caller: caller, target: target, symptoms: map[string]bool{}, clientIdle: clientIdleTimeout(set)}
				groups[key] = g
			}
			g.lines += t.Incident
			if idle {
				g.idleLines += t.Incident
			}
			switch {
			case strings.Contains(strings.ToLower(l), "server closed idle connection"):
				g.symptoms["\"server closed idle connection\""] = true
			case eof:
				g.symptoms["EOF"] = true
			case reset:
				g.symptoms["\"connection reset by peer\""] = true
			default:
				g.symptoms["an early close"] = true
			}
			if m := findSubmatch(connIdleRE, l); m != nil {
				if ms, err := strconv.Atoi(m[1]); err == nil {
					if g.idleMin == 0 || ms < g.idleMin {
						g.idleMin = ms
					}
					g.idleMax = max(g.idleMax, ms)
				}
			}
			at := firstOf(t.FirstIncident, t.FirstSeen)
			if g.first.IsZero() || at.Before(g.first) || idle && !matchLine(idleClosedRE, g.example) {
				if g.first.IsZero() || at.Before(g.first) {
					g.first = at
				}
				if g.example == "" || idle && !matchLine(idleClosedRE, g.example) {
					g.example = l
				}
			}
		}
	}
	var out []Finding
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		// A few lines do not make a pattern; a reset without any sign of
		// reuse or idleness is the connection-reset rule's.
		if g.lines < 3 {
			continue
		}
		syms := slices.Sorted(maps.Keys(g.symptoms))
		f := Finding{Kind: KindIdleConnClosed, Subject: g.caller, Object: "logs " + g.caller, Time: g.first, Severity: SevWarning, Weight: 0.7, Source: SrcLogs}
		f.setFact("caller", g.caller)
		f.setFact("target", g.target)
		f.setFact("lines", strconv.Itoa(g.lines))
		f.setFact("first", ts(g.first))
		f.setFact("symptoms", strings.Join(syms, ", "))
		f.setFact("line", g.example)
		if g.target != "" {
			f.Related = append(f.Related, g.target)
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d failures on reused keep-alive connections to %s from %s (%s): %s", g.caller, g.lines, orWord(g.target, "its callee"), ts(g.first), strings.Join(syms, ", "), quote(ReadableLine(g.example), 220)))
		if g.idleMax > 0 {
			f.setFact("idle_range", fmt.Sprintf("%.0f-%.0f s", float64(g.idleMin)/1000, float64(g.idleMax)/1000))
		}
		if g.clientIdle != "" {
			f.setFact("client_idle", g.clientIdle)
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s keeps idle connections for %s (its own configuration line)", g.caller, g.clientIdle))
			f.Weight += 0.05
		}
		if c, cut := keepAliveCut(ev, g.first); c != "" {
			f.setFact("keepalive_change", c)
			f.setFact("server_idle", cut)
			f.Weight += 0.15
		}
		if n, proxy, l := proxyIdleCloses(ev); n > 0 {
			f.setFact("proxy_closes", fmt.Sprintf("%s closed %d idle client connections (408, cR)", proxy, n))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s closed %d idle client keep-alive connections in the window (408, termination state cR): %s", proxy, n, quote(ReadableLine(l), 200)))
			if !containsStr(f.Related, proxy) {
				f.Related = append(f.Related, proxy)
			}
		}
		if g.idleLines == 0 && f.fact("keepalive_change") == "" && f.fact("client_idle") == "" {
			// Reused connections failing, with nothing else saying idle
			// timeouts: weaker.
			f.Weight -= 0.15
		}
		f.Summary = fmt.Sprintf("%s's reused keep-alive connections to %s are closed under it (%d failures)", g.caller, orWord(g.target, "its callee"), g.lines)
		out = append(out, f)
	}
	return out
}

// clientIdleTimeout is the idle connection timeout a client's own log
// states (a configuration line at start-up).
func clientIdleTimeout(set *LogSet) string {
	for _, t := range set.Templates {
		if m := findSubmatch(clientIdleRE, t.Example); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// keepAliveCut is a change, before the first failure, that set a
// keep-alive or idle timeout in the path, with the new value when it
// says it.
func keepAliveCut(ev *Gathered, first time.Time) (string, string) {
	var best *struct {
		desc, cut string
		at        time.Time
	}
	for _, c := range ev.Changes {
		if c.Timestamp.After(first.Add(2*time.Minute)) || first.Sub(c.Timestamp) > triggerFar || !matchLine(keepAliveChangeRE, c.Description) {
			continue
		}
		cut := ""
		if m := findSubmatch(keepAliveCutRE, c.Description); m != nil {
			cut = m[2]
		}
		if best == nil || c.Timestamp.After(best.at) {
			best = &struct {
				desc, cut string
				at        time.Time
			}{fmt.Sprintf("%s change of %s at %s: %q", c.Kind, c.Service, ts(c.Timestamp), c.Description), cut, c.Timestamp}
		}
	}
	if best == nil {
		return "", ""
	}
	return best.desc, best.cut
}

// proxyIdleCloses counts a proxy's closes of idle client connections in
// the window, from its own log.
func proxyIdleCloses(ev *Gathered) (int, string, string) {
	n, proxy, example := 0, "", ""
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident > 0 && matchLine(haproxyIdleRE, t.Example) {
				n += t.Incident
				if example == "" {
					proxy, example = orWord(set.Subject, subjectOfSource(set.Source)), t.Example
				}
			}
		}
	}
	return n, proxy, example
}
