package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindLBIdleAboveKeepAlive: a load balancer that keeps idle connections
// to its targets open longer than the targets do. An ALB, ELB, nginx,
// Envoy or HAProxy in front of a server reuses a connection the server
// has just closed for being idle past its keep-alive timeout (Node's
// keepAliveTimeout, gunicorn's --keep-alive, Tomcat's keepAliveTimeout, Go's
// IdleTimeout): the request meets a reset or a close before any response
// and the balancer answers 502 itself, with no target time and no target
// status. A few requests fail every few minutes, the server logs no error
// (the request never reached it), and the change that raised the
// balancer's idle timeout above the server's keep-alive is the trigger,
// not the release beside it.
const KindLBIdleAboveKeepAlive Kind = "lb_idle_above_keepalive"

var lbIdleAboveKeepAlive = &mechanism{
	kind:           KindLBIdleAboveKeepAlive,
	class:          classCause,
	label:          "load balancer idle timeout longer than the backend's keep-alive timeout",
	detect:         detectLBIdleAboveKeepAlive,
	fitsChange:     changeSays(lbIdleChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the load balancer in front of %s keeps idle keep-alive connections for %s (%s) while %s closes them after %s of idle (%s): the balancer reuses connections %s has just closed, the request meets a reset or an early close before any response, and the balancer answers 502 itself (%s)",
			h.Subject, h.fact("lb_idle"), h.fact("lb_source"), h.Subject, h.fact("keepalive"), h.fact("keepalive_source"), h.Subject, h.fact("bad_gateway"))
		if c := h.fact("idle_change"); c != "" {
			d += "; the idle timeout was raised by the " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Raise %s's keep-alive timeout above the load balancer's idle timeout of %s (Node server.keepAliveTimeout, with headersTimeout above it; gunicorn --keep-alive; Tomcat keepAliveTimeout; Go IdleTimeout), or lower the balancer's idle timeout below %s", h.Subject, h.fact("lb_idle"), h.fact("keepalive"))
		r.med("A long-lived stream that needed the longer idle timeout (SSE, websockets) can send keep-alive comments instead, or go through its own listener")
		r.low("Alert on the balancer's own 502s (HTTPCode_ELB_502_Count, 502s with no target status) apart from the targets' 5xx")
	},
}

var (
	// A balancer's idle timeout as its configuration or API states it:
	// ALB attributes (annotation or describe-load-balancer-attributes
	// table), the classic ELB's and NLB's annotations, HAProxy's
	// http-keep-alive, Envoy's idle_timeout, nginx's upstream keep-alive.
	lbIdleRE = regexp.MustCompile(`(?i)(idle_timeout\.timeout_seconds|aws-load-balancer-connection-idle-timeout|upstream-keepalive-timeout|timeout http-keep-alive|ConnectionSettings\.IdleTimeout|"?IdleTimeout"?|\bidle_timeout)["'\s|:=,]+(?:Value["'\s:=]+)?"?(\d+)(ms|s|m)?\b`)
	// A change that raised or set a balancer's idle timeout.
	lbIdleChangeRE = regexp.MustCompile(`(?i)idle[ _.-]?timeout|connection-idle-timeout|http-keep-alive|keepalive[ _-]timeout`)
	// The number a change sets the idle timeout to ("60 -> 300").
	lbIdleChangeToRE = regexp.MustCompile(`(?i)(?:idle[ _.-]?timeout|connection-idle-timeout|http-keep-alive)[a-z_.\s:=]*\d+\s*(?:s|seconds)?\s*(?:->|→|to)\s*(\d+)\s*(ms|s|m)?`)
	// A server's own keep-alive timeout, with the unit each server takes
	// when none is written: Node's and Tomcat's keepAliveTimeout and *_MS
	// settings in milliseconds; gunicorn, uvicorn, Apache, puma in seconds.
	serverKeepAlive = []struct {
		re   *regexp.Regexp
		unit time.Duration
	}{
		{regexp.MustCompile(`(?i)(?:keep_?alive_?timeout_ms|keepalive_ms)["'\s:=]+(\d+)\b`), time.Millisecond},
		{regexp.MustCompile(`\bkeepAliveTimeout["'\s:=]+"?(\d+)(ms|s)?\b`), time.Millisecond},
		{regexp.MustCompile(`(?i)(?:--keep-alive|--timeout-keep-alive|\bkeepalive|\bKeepAliveTimeout|persistent_timeout|keep_alive_timeout)["'\s:=]+(\d+)(ms|s)?\b`), time.Second},
	}
	// The balancer's own 502, the target never answering: an ALB access
	// log line with no target times and no target status, or its count.
	albNoTargetRE = regexp.MustCompile(`\s-1 -1 502 - `)
	lb502MetricRE = regexp.MustCompile(`(?i)HTTPCode_ELB_502|ELB_502|HTTPCode_ELB_5XX|backend_connection_errors|upstream_cx_destroy_remote_with_active_rq|upstream_rq_502`)
)

// detectLBIdleAboveKeepAlive compares the balancer's idle timeout with
// the keep-alive timeout its backend states, and keeps the comparison
// when the balancer answers 502s the backend never saw.
func detectLBIdleAboveKeepAlive(ev *Gathered, _ []Finding) []Finding {
	lbIdle, lbSource, backend := time.Duration(0), "", ""
	for i := range ev.K8s.Ingresses {
		ing := ev.K8s.Ingresses[i]
		for k, v := range ing.Annotations {
			if d, ok := lbIdleOf(k + "=" + v); ok && d > lbIdle {
				lbIdle, lbSource = d, "Ingress "+ing.Name+" annotation "+k+": "+v
				backend, _ = ingressBackends(&ing)
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if d, ok := lbIdleOf(l); ok && d > lbIdle {
				lbIdle, lbSource = d, strings.Join(strings.Fields(strings.Trim(l, "|")), " ")+" (from "+quote(c.Command, 80)+")"
			}
		}
	}
	var change *evidence.Change
	for i := range ev.Changes {
		c := &ev.Changes[i]
		m := findSubmatch(lbIdleChangeToRE, c.Description)
		if m == nil {
			continue
		}
		change = c
		if d := durationOf(m[1], m[2], time.Second); d > lbIdle {
			lbIdle, lbSource = d, "set by the change of "+ts(c.Timestamp)
		}
	}
	if lbIdle == 0 {
		return nil
	}
	subject := orWord(backend, ev.Scope.Service)
	keep, keepSource := time.Duration(0), ""
	for _, set := range ev.Logs {
		if subject != "" && !strings.EqualFold(set.Subject, subject) && !strings.EqualFold(subjectOfSource(set.Source), subject) {
			continue
		}
		for _, t := range set.Templates {
			if d, ok := keepAliveOf(t.Example); ok {
				keep, keepSource = d, "its log: "+quote(ReadableLine(t.Example), 160)
				break
			}
		}
		if keep > 0 {
			break
		}
	}
	if keep == 0 {
		for _, c := range ev.Commands {
			for _, l := range c.Lines {
				if _, lb := lbIdleOf(l); lb {
					continue
				}
				if d, ok := keepAliveOf(l); ok {
					keep, keepSource = d, quote(l, 120)+" (from "+quote(c.Command, 80)+")"
					break
				}
			}
			if keep > 0 {
				break
			}
		}
	}
	if keep == 0 || lbIdle <= keep {
		return nil
	}
	n502, example, first := balancer502s(ev)
	if n502 == 0 {
		return nil
	}
	at := first
	if change != nil && (at.IsZero() || change.Timestamp.Before(at)) {
		at = change.Timestamp
	}
	if at.IsZero() {
		at = ev.Window.Start
	}
	f := Finding{Kind: KindLBIdleAboveKeepAlive, Subject: subject, Object: "load balancer in front of " + subject, Time: at, Severity: SevWarning, Weight: 0.85, Source: SrcLogs}
	f.setFact("lb_idle", fmtSeconds(lbIdle))
	f.setFact("lb_source", lbSource)
	f.setFact("keepalive", fmtSeconds(keep))
	f.setFact("keepalive_source", keepSource)
	f.setFact("bad_gateway", example)
	f.setFact("why", fmt.Sprintf("the balancer's idle timeout %s is longer than %s's keep-alive timeout %s", fmtSeconds(lbIdle), subject, fmtSeconds(keep)))
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("the load balancer keeps idle connections %s: %s", fmtSeconds(lbIdle), lbSource),
		fmt.Sprintf("%s closes idle keep-alive connections after %s: %s", subject, fmtSeconds(keep), keepSource),
		fmt.Sprintf("the balancer answered 502 itself, the target never answering: %s", example))
	if change != nil {
		f.setFact("idle_change", fmt.Sprintf("%s change of %s at %s: %q", change.Kind, change.Service, ts(change.Timestamp), change.Description))
		f.Weight += 0.05
	}
	f.Summary = fmt.Sprintf("the load balancer's idle timeout (%s) is longer than %s's keep-alive timeout (%s): it answers 502 on connections %s closed", fmtSeconds(lbIdle), subject, fmtSeconds(keep), subject)
	return []Finding{f}
}

// lbIdleOf reads a balancer's idle timeout from one line.
func lbIdleOf(l string) (time.Duration, bool) {
	m := findSubmatch(lbIdleRE, l)
	if m == nil {
		return 0, false
	}
	d := durationOf(m[2], m[3], time.Second)
	return d, d > 0
}

// keepAliveOf reads a server's keep-alive timeout from one line.
func keepAliveOf(l string) (time.Duration, bool) {
	for _, k := range serverKeepAlive {
		if m := findSubmatch(k.re, l); m != nil {
			unit := ""
			if len(m) > 2 {
				unit = m[2]
			}
			if d := durationOf(m[1], unit, k.unit); d > 0 {
				return d, true
			}
		}
	}
	return 0, false
}

// durationOf is n in the unit written, else in def.
func durationOf(n, unit string, def time.Duration) time.Duration {
	v, err := strconv.Atoi(n)
	if err != nil || v <= 0 {
		return 0
	}
	switch strings.ToLower(unit) {
	case "ms":
		return time.Duration(v) * time.Millisecond
	case "s":
		return time.Duration(v) * time.Second
	case "m":
		return time.Duration(v) * time.Minute
	}
	return time.Duration(v) * def
}

func fmtSeconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// balancer502s counts the balancer's own 502s: access-log lines with no
// target time and status (in a transcript or a log), early closes a
// proxy logged, or the balancer's 502 count series.
func balancer502s(ev *Gathered) (int, string, time.Time) {
	n, example := 0, ""
	var first time.Time
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if matchLine(albNoTargetRE, l) {
				n++
				if example == "" {
					example = quote(l, 200)
				}
			}
		}
	}
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			if t.Incident > 0 && (matchLine(albNoTargetRE, t.Example) || matchLine(earlyCloseRE, t.Example)) {
				n += t.Incident
				if example == "" {
					example = quote(ReadableLine(t.Example), 200)
				}
			}
		}
	}
	for _, s := range ev.Metrics {
		if !matchLine(lb502MetricRE, s.Name) {
			continue
		}
		sum := 0.0
		for _, se := range s.Series {
			for _, p := range se.Points {
				if !p.T.Before(ev.Window.Start) && p.V > 0 {
					sum += p.V
					if first.IsZero() || p.T.Before(first) {
						first = p.T
					}
				}
			}
		}
		if sum > 0 {
			n += int(sum)
			if example == "" {
				example = fmt.Sprintf("%s summed %.0f in the window", s.Name, sum)
			} else {
				example += fmt.Sprintf("; %s summed %.0f in the window", s.Name, sum)
			}
		}
	}
	return n, example, first
}
