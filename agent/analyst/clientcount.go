package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// One client driving a service's load, read from a count someone took of
// an access log rather than from its lines: a terminal transcript that
// counts one client's requests in the ingress or proxy log in front of the
// service (`kubectl logs ingress-nginx-controller-… --since=3h | grep -c
// 'CompareIt-Feedbot'`, `| grep 10.4.7.19 | wc -l`) while the service's
// request rate rose and its autoscaler ran to its maximum. The count
// over the span the client was seen in (from its first line in the log
// read, else the --since span) is a request rate, compared with how much
// the service's rate rose: a client that makes up most of the rise is the
// load's source. What was counted must name a client: a User-Agent, an
// address or a client id the log's request lines carry, or a crawler's
// name.

// logCount is one count of a pod's log lines matching a pattern.
type logCount struct {
	pod, namespace string
	pattern        string
	filters        []string // the greps before the counting one
	since          time.Duration
	n              int
	command        string
}

// crawlerWordRE is a client that names itself a crawler or a bot.
var crawlerWordRE = regexp.MustCompile(`(?i)bot\b|bot/|crawl|spider|scrap|feed(?:bot|fetcher)|slurp|fetcher`)

// readLogCounts reads the counts of log lines among command outputs.
func readLogCounts(cmds []evidence.CommandOutput) []logCount {
	var out []logCount
	for _, c := range cmds {
		if c.Exec || len(c.Lines) != 1 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(c.Lines[0]))
		if err != nil || n <= 0 {
			continue
		}
		if lc, ok := parseLogCount(c.Command); ok {
			lc.n = n
			lc.namespace = orWord(lc.namespace, c.Namespace)
			lc.pod = orWord(lc.pod, c.Target)
			out = append(out, lc)
		}
	}
	return out
}

// parseLogCount reads "kubectl logs POD [--since=D] | grep [-c] PAT [|
// wc -l]": the pod, the span and the pattern counted.
func parseLogCount(cmd string) (logCount, bool) {
	segs := pipeSegments(cmd)
	if len(segs) < 2 {
		return logCount{}, false
	}
	first := shellWords(segs[0])
	if len(first) < 3 || !slicesContainsAny(first[:min(3, len(first))], "kubectl", "k", "oc") || !slicesContainsAny(first, "logs", "log") {
		return logCount{}, false
	}
	lc := logCount{command: cmd}
	for i := 1; i < len(first); i++ {
		w := first[i]
		switch {
		case strings.HasPrefix(w, "--since="):
			lc.since, _ = time.ParseDuration(strings.TrimPrefix(w, "--since="))
		case w == "--since" && i+1 < len(first):
			lc.since, _ = time.ParseDuration(first[i+1])
			i++
		case strings.HasPrefix(w, "--namespace="):
			lc.namespace = strings.TrimPrefix(w, "--namespace=")
		case (w == "-n" || w == "--namespace") && i+1 < len(first):
			lc.namespace = first[i+1]
			i++
		case strings.HasPrefix(w, "-"):
			if (w == "-c" || w == "--container" || w == "--tail") && i+1 < len(first) {
				i++
			}
		case w != "logs" && w != "log" && lc.pod == "" && i > 1:
			lc.pod = w
		}
	}
	counted := false
	for j, s := range segs[1:] {
		ws := shellWords(s)
		if len(ws) == 0 {
			return logCount{}, false
		}
		switch ws[0] {
		case "grep", "egrep", "fgrep", "zgrep", "rg":
			pat, count, invert := grepArgs(ws[1:])
			if pat == "" {
				return logCount{}, false
			}
			if invert {
				lc.filters = append(lc.filters, "not "+pat)
				continue
			}
			if lc.pattern != "" {
				lc.filters = append(lc.filters, lc.pattern)
			}
			lc.pattern = pat
			counted = count
		case "wc":
			counted = j == len(segs)-2 && len(ws) == 2 && ws[1] == "-l"
		default:
			return logCount{}, false
		}
	}
	return lc, counted && lc.pattern != "" && lc.pod != ""
}

// grepArgs reads a grep's pattern and whether it counts or inverts.
func grepArgs(ws []string) (pat string, count, invert bool) {
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		switch {
		case w == "-e" && i+1 < len(ws):
			pat = ws[i+1]
			i++
		case w == "--count":
			count = true
		case w == "--invert-match":
			invert = true
		case strings.HasPrefix(w, "--"):
		case strings.HasPrefix(w, "-") && len(w) > 1:
			count = count || strings.Contains(w, "c")
			invert = invert || strings.Contains(w, "v")
		case pat == "":
			pat = w
		}
	}
	return pat, count, invert
}

// pipeSegments splits a command line at its unquoted pipes.
func pipeSegments(s string) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '|' && !(i+1 < len(s) && s[i+1] == '|'):
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// shellWords splits a command into words, honouring quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	var quote byte
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func slicesContainsAny(ws []string, want ...string) bool {
	for _, w := range ws {
		for _, x := range want {
			if w == x {
				return true
			}
		}
	}
	return false
}

// countedClient is what a counted pattern names in the request lines of
// the log it counted: "user agent", "address" or "client id", with the
// first time a line of it was read and whether those lines go to subj.
func countedClient(ev *Gathered, lc logCount, subj string) (field string, first time.Time, toSubj bool) {
	pat := strings.ToLower(lc.pattern)
	look := func(text string, at time.Time) {
		if !strings.Contains(strings.ToLower(text), pat) {
			return
		}
		r, ok := parseRequestLine(text)
		if !ok {
			return
		}
		f := ""
		switch {
		case r.ClientID != "" && strings.Contains(strings.ToLower(r.ClientID), pat):
			f = "client id"
		case r.Agent != "" && strings.Contains(strings.ToLower(r.Agent), pat):
			f = "user agent"
		case r.Client != "" && strings.HasPrefix(r.Client, lc.pattern):
			f = "address"
		}
		if f == "" {
			return
		}
		field = orWord(field, f)
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
		if subj != "" && (strings.Contains(r.Upstream, subj) || strings.Contains(r.Host, subj)) {
			toSubj = true
		}
	}
	for _, set := range ev.Logs {
		if set.Source != lc.pod && set.Subject != workloadOfName(lc.pod) {
			continue
		}
		for _, l := range set.Lines {
			look(l.Text, l.Time)
		}
		for _, t := range set.Templates {
			look(t.Example, t.FirstSeen)
			if t.Last != "" {
				look(t.Last, time.Time{})
			}
		}
	}
	if field == "" && matchLine(crawlerWordRE, lc.pattern) {
		field = "user agent"
	}
	return field, first, toSubj
}

// detectClientCounts finds the client a count of an access log names
// when its rate makes up most of the rise of a service's load.
func detectClientCounts(ev *Gathered, found []Finding) []Finding {
	var out []Finding
	for _, lc := range readLogCounts(ev.Commands) {
		// The load that rose: the service's surge, else its autoscaler at
		// its maximum.
		var surge, hpa *Finding
		for i := range found {
			g := &found[i]
			switch {
			case g.Kind == KindLoadSurge && (surge == nil || g.Subject == ev.Scope.Service):
				surge = g
			case g.Kind == KindHPAMax && (hpa == nil || g.Subject == ev.Scope.Service):
				hpa = g
			}
		}
		symptom := surge
		if symptom == nil {
			symptom = hpa
		}
		if symptom == nil {
			continue
		}
		subj := symptom.Subject
		field, first, toSubj := countedClient(ev, lc, subj)
		if field == "" {
			continue
		}
		// The log counted is the service's own or routes to it.
		if !toSubj && workloadOfName(lc.pod) != subj && !strings.Contains(lc.pod, subj) {
			continue
		}
		end := ev.Window.End
		span := lc.since
		if !first.IsZero() && !end.IsZero() && first.Before(end) && (span == 0 || end.Sub(first) < span) {
			span = end.Sub(first)
		}
		if span <= 0 {
			continue
		}
		rate := float64(lc.n) / span.Seconds()
		before, peak := rateOf(surge, "baseline"), rateOf(surge, "peak")
		share := ""
		if peak > 0 {
			// Its rate must make up most of what the load grew by.
			if rate < 0.5*(peak-before) {
				continue
			}
			share = fmt.Sprintf("%.0f%%", 100*min(1, rate/peak))
		} else if lc.n < 1000 {
			continue
		}
		at := first
		if at.IsZero() || at.Before(ev.Window.BaselineStart) {
			at = symptom.Time
		}
		f := Finding{Kind: KindClientSurge, Subject: subj, Object: "logs " + lc.pod, Namespace: orWord(symptom.Namespace, lc.namespace),
			Time: at, Severity: SevCritical, Weight: 0.85, Source: SrcLogs, Related: []string{subj, workloadOfName(lc.pod)}}
		f.setFact("client", lc.pattern)
		f.setFact("client_field", field)
		f.setFact("client_requests", strconv.Itoa(lc.n))
		f.setFact("counted", lc.command)
		f.setFact("client_rate", formatValue(rate, "/s"))
		f.setFact("share", share)
		f.setFact("source", lc.pod)
		if surge != nil {
			f.setFact("rate_before", surge.fact("baseline"))
			f.setFact("rate", surge.fact("peak"))
		}
		spanWord := "in the " + lc.since.String() + " counted"
		if !first.IsZero() {
			spanWord = "since its first request at " + hm(first)
		}
		why := fmt.Sprintf("%s %q sent %d requests %s (~%s)", field, lc.pattern, lc.n, spanWord, f.fact("client_rate"))
		if share != "" {
			why += fmt.Sprintf(", %s of %s's %s", share, subj, surge.fact("peak"))
		}
		f.setFact("why", why)
		f.setFact("load_source", lc.pattern)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %d lines of the log of %s match %q (%s)", lc.command, lc.n, lc.pod, lc.pattern, why))
		f.Summary = fmt.Sprintf("one client drives the load on %s: %s %q sent %d requests %s", subj, field, lc.pattern, lc.n, spanWord)
		out = append(out, f)
	}
	return out
}

// rateOf reads a rate fact ("131/s") as a number (0 when absent).
func rateOf(f *Finding, k string) float64 {
	if f == nil {
		return 0
	}
	v, ok := strings.CutSuffix(strings.TrimSpace(f.fact(k)), "/s")
	if !ok {
		return 0 // not a rate of requests
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return x
}

// describeCountedClient tells a client whose requests were counted in an
// access log.
func describeCountedClient(h *Hypothesis) string {
	d := fmt.Sprintf("one client drives the load on %s: %s", h.Subject, h.fact("why"))
	d += fmt.Sprintf(" (counted in the log of %s: %s)", h.fact("source"), quote(h.fact("counted"), 200))
	if r := h.fact("rate"); r != "" {
		d += fmt.Sprintf(". The service's request rate rose from %s to %s", h.fact("rate_before"), r)
	}
	if f := hpaOf(h); f != nil {
		d += fmt.Sprintf("; its autoscaler ran to its maximum of %s replicas and cannot add more", orWord(f.fact("max_replicas"), "its"))
	}
	if hasKind(h.Support, KindCPUThrottling) {
		d += ", and its pods are CPU-throttled at their limit"
	}
	if hasKind(h.Support, KindLatency) {
		d += ", so requests queue and latency rises"
	}
	return d
}
