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

// Retry amplification: a call retried at several layers (the mesh's
// VirtualService retries, the client library's, the gateway's) turns a
// short failure of the callee (a rollout's blip, a slow minute) into many
// times its load: every caller request reaches it several times, attempts
// it is still working on are abandoned (499, "context canceled") and sent
// again, and it stays overloaded after the blip has passed — a failure
// that sustains itself. The callee's log numbers the attempts it receives
// (attempt=9, x-envoy-attempt-count) and sees the same request twice
// (duplicate idempotency keys); a caller's proxy gives up with "upstream
// retry limit exceeded" (Envoy's URX); a change sets the retries. Two of
// these together name the cause; the callee's errors are its symptoms.

// KindRetryStorm is a callee overloaded by its callers' stacked retries.
const KindRetryStorm Kind = "retry_amplification"

var (
	// attemptRE reads the attempt number of a request ("attempt=9",
	// "attempt 3 of 10", "x-envoy-attempt-count: 4", "retry 2/5").
	attemptRE = regexp.MustCompile(`(?i)\b(?:attempts?(?:_count|Count)?|x-envoy-attempt-count|upstream_request_attempt_count|retry(?:_count)?)["']?\s*[=:#]?\s*["']?(\d{1,3})\b(?:\s*(?:of|/)\s*(\d{1,3}))?`)
	// perTryCutRE is a per-try timeout cut by a change ("perTryTimeout
	// 1s -> 300ms", "per_try_timeout: 2s to 250ms").
	perTryCutRE = regexp.MustCompile(`(?i)\b(?:perTryTimeout|per_try_timeout|per-try timeout|attempt_?timeout|try_?timeout)\b[^;,()]{0,20}?(\d+(?:\.\d+)?\s*(?:ms|s|m))\s*(?:->|→|=>|to)\s*(\d+(?:\.\d+)?\s*(?:ms|s|m))`)
	// duplicateReqRE is the callee seeing a request it already works on.
	duplicateReqRE = regexp.MustCompile(`(?i)duplicate (?:idempotency[ _-]key|request(?:[ _-]id)?)|idempotency[ _-]key (?:already|in use|conflict)|request already in progress|entry already in progress`)
	// retryExhaustedRE is a proxy's or client's "gave up after retries".
	retryExhaustedRE = regexp.MustCompile(`(?i)\bURX\b|upstream retry limit exceeded|retries exhausted|max retries exceeded|(?:reached|exceeded) max(?:imum)? retries|exhausted (?:all )?\d* ?retries|gave up after \d+ (?:attempts|retries)`)
	// retrySettingRE is a change that sets how many times calls are
	// retried ("retries attempts 2 -> 10", "maxRetries: 5").
	retrySettingRE = regexp.MustCompile(`(?i)\bretr(?:y|ies)\b[^.;]*?(?:attempts?|max|count|times)?[^.;]*?\d+\s*(?:->|→|to)\s*(\d+)|\b(?:max_?retries|retry_?attempts|retries\.attempts|attempts)\s*[:=]\s*(\d+)`)
	// outboundRE names the upstream of an Istio/Envoy access line.
	outboundRE = regexp.MustCompile(`outbound\|\d+\|[^|]*\|([\w.-]+)`)
)

var retryAmplification = &mechanism{
	kind:    KindRetryStorm,
	class:   classCause,
	label:   "retry amplification (stacked retries overload the callee)",
	detect:  detectRetryAmplification,
	related: fromCaller,
	// A deploy or restart of the callee is the blip the retries
	// amplified; a change of the retries themselves sets them.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if matchLine(retrySettingRE, c.Summary+" "+c.fact("description")) {
			return true
		}
		return c.Kind == KindDeploy && c.relates(h.Subject)
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("retry amplification: calls to %s are retried at several layers", h.Subject)
		var layers []string
		if s := h.fact("setting"); s != "" {
			layers = append(layers, "the retries set by "+quote(s, 160))
		}
		if c := h.fact("proxy_callers"); c != "" {
			if r := h.fact("proxy_retried"); r != "" {
				layers = append(layers, fmt.Sprintf("the proxy of %s retries its calls (%s)", c, r))
			} else {
				layers = append(layers, fmt.Sprintf("the proxy of %s retries until its limit (Envoy URX, upstream retry limit exceeded)", c))
			}
		}
		if pt := h.fact("per_try"); pt != "" {
			layers = append(layers, fmt.Sprintf("a per-try timeout cut from %s to %s abandons every answer of %s slower than %s and sends it again, so each slow minute multiplies its load", h.fact("per_try_was"), pt, h.Subject, pt))
		}
		if c := h.fact("callers"); c != "" {
			layers = append(layers, fmt.Sprintf("its callers (%s) retry on top", c))
		}
		if len(layers) > 0 {
			d += " — " + strings.Join(layers, "; ")
		}
		if sat := h.fact("saturated"); sat != "" && h.fact("max_attempt") == "" && h.fact("duplicates") == "" {
			return d + fmt.Sprintf(" — so every slow answer of %s brings more requests, which slow it further: its load is multiplied by retries, not by real traffic (%s), and more replicas only feed the loop", h.Subject, truncate(sat, 240))
		}
		d += fmt.Sprintf(" — so a short failure of %s multiplied its load: ", h.Subject)
		var seen []string
		if a := h.fact("max_attempt"); a != "" {
			seen = append(seen, fmt.Sprintf("it receives the same request up to %s times (attempt=%s in its log)", a, a))
		}
		if n := h.fact("duplicates"); n != "" {
			seen = append(seen, fmt.Sprintf("%s lines of requests it is already working on (duplicate idempotency keys)", n))
		}
		if len(seen) > 0 {
			d += strings.Join(seen, ", ") + "; "
		}
		d += "attempts are abandoned and sent again while it is still busy with them, so it stays overloaded after the blip has passed and does not recover on its own"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Cut the retries to %s to one layer (turn the mesh's retries down, or the clients'), with a retry budget and backoff, then let %s drain", h.Subject, h.Subject)
		r.high("Shed the load now: rate-limit or briefly stop the callers of %s (%s) so that it can recover", h.Subject, orWord(h.fact("callers"), "its callers"))
		r.med("Make each layer's timeout longer than the one below it (a per-try timeout shorter than the callee's own latency abandons work it will still do)")
		r.low("Alert on attempts per request (envoy upstream_rq_retry, attempt counts) and on duplicate requests at %s", h.Subject)
	},
}

// detectRetryAmplification reads the retry layers in front of a callee:
// the attempt numbers and duplicate requests in its own log, its callers'
// proxies giving up on retries, and the changes or settings that set the
// retries. At least two of them name the callee's overload as retry
// amplification.
func detectRetryAmplification(ev *Gathered, found []Finding) []Finding {
	type callee struct {
		maxAttempt, dups int
		onset            time.Time
		source           string
		line             string
		proxyCallers     []string
		namespace        string
		// proxyCalls and proxyRetried count the callers' proxy lines to
		// it and those of a call tried more than once.
		proxyCalls, proxyRetried, proxyMaxAttempt int
		proxyLine                                 string
		// saturated holds what the callee showed after a change made a
		// caller retry it more (its autoscaler at its maximum, its
		// latency up); retryCaller is that caller.
		saturated   []string
		retryCaller string
	}
	byName := map[string]*callee{}
	get := func(name string) *callee {
		c := byName[name]
		if c == nil {
			c = &callee{}
			byName[name] = c
		}
		return c
	}
	for set, t := range incidentTemplates(ev) {
		at := orTime(t.FirstIncident, t.FirstSeen)
		for _, l := range t.Lines() {
			// A proxy of a caller that gave up retrying its upstream.
			if matchLine(retryExhaustedRE, l) {
				if m := findSubmatch(outboundRE, l); m != nil {
					up := ShortHost(m[1])
					if up != "" && up != set.Subject {
						c := get(up)
						c.proxyCallers = appendNew(c.proxyCallers, proxiedWorkload(set.Subject))
						c.onset = earliest(c.onset, at)
					}
				}
				continue
			}
			// The callee's own log: attempts numbered, duplicates.
			n := 0
			if m := findSubmatch(attemptRE, l); m != nil {
				n, _ = strconv.Atoi(m[1])
			}
			// A caller's proxy line naming its upstream: the attempts
			// are the caller's retries of it, not requests it got.
			if up := proxyUpstream(l, set.Subject); up != "" {
				if n >= 2 {
					c := get(up)
					c.proxyCallers = appendNew(c.proxyCallers, proxiedWorkload(set.Subject))
					c.onset = earliest(c.onset, at)
				}
				continue
			}
			dup := matchLine(duplicateReqRE, l)
			if n < 2 && !dup {
				continue
			}
			c := get(set.Subject)
			c.namespace = set.Namespace
			c.maxAttempt = max(c.maxAttempt, n)
			if dup {
				c.dups += t.Incident
			}
			c.onset = earliest(c.onset, at)
			if c.line == "" || n > 2 && !matchLine(attemptRE, c.line) {
				c.line, c.source = l, set.Source
			}
		}
	}
	// The raw lines a latency or overload question kept: a caller's
	// proxy access log numbering its attempts at an upstream (Envoy's
	// %UPSTREAM_REQUEST_ATTEMPT_COUNT%), counted since the window began.
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, l := range set.Lines {
			if !l.Time.IsZero() && l.Time.Before(ev.Window.Start) {
				continue
			}
			up := proxyUpstream(l.Text, set.Subject)
			if up == "" {
				continue
			}
			m := findSubmatch(attemptRE, l.Text)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			c := get(up)
			c.proxyCalls++
			if n < 2 {
				continue
			}
			c.proxyRetried++
			c.proxyCallers = appendNew(c.proxyCallers, proxiedWorkload(set.Subject))
			c.onset = earliest(c.onset, l.Time)
			if n > c.proxyMaxAttempt {
				c.proxyMaxAttempt, c.proxyLine = n, l.Text
			}
		}
	}
	// A change that made a caller retry a service more (more attempts, a
	// per-try timeout cut) followed by the service saturating (its
	// autoscaler at its maximum, its latency or errors up within half an
	// hour): the change is one layer, the saturation what it did.
	for _, ch := range ev.Changes {
		if !retriesMore(ch.Description) {
			continue
		}
		callee := retryCallee(ev, ch.Description, ch.Service)
		if callee == "" {
			continue
		}
		var sat []string
		var at time.Time
		for _, f := range found {
			if f.Subject != callee || f.Time.Before(ch.Timestamp.Add(-2*time.Minute)) || f.Time.Sub(ch.Timestamp) > 30*time.Minute {
				continue
			}
			switch f.Kind {
			case KindHPAMax, KindLatency, KindErrorRate, KindSaturation:
				sat = append(sat, f.Summary)
				at = earliest(at, f.Time)
			}
		}
		if len(sat) == 0 {
			continue
		}
		c := get(callee)
		c.saturated = append(c.saturated, sat...)
		c.onset = earliest(c.onset, at)
		c.retryCaller = ch.Service
		if c.namespace == "" {
			c.namespace = ev.Scope.Namespace
		}
	}
	var out []Finding
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := byName[name]
		setting := retrySetting(ev, name)
		signals := 0
		if c.maxAttempt >= 3 || c.dups > 0 {
			signals++
		}
		if len(c.proxyCallers) > 0 {
			signals++
		}
		if setting != "" {
			signals++
		}
		if len(c.saturated) > 0 {
			signals++
		}
		if signals < 2 {
			continue
		}
		callers := slices.Clone(c.proxyCallers)
		if c.retryCaller != "" {
			callers = appendNew(callers, c.retryCaller)
		}
		for _, s := range ev.Scope.Subjects() {
			if s != name {
				callers = appendNew(callers, s)
			}
		}
		f := Finding{Kind: KindRetryStorm, Subject: name, Namespace: c.namespace, Source: SrcLogs, Time: c.onset, Severity: SevCritical,
			Weight: 0.7 + 0.1*float64(signals), Related: callers,
			Summary: fmt.Sprintf("%s is overloaded by stacked retries of its callers", name)}
		if c.line != "" {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s: %s", c.source, quote(ReadableLine(c.line), 220)))
			f.setFact("line", c.line)
		}
		if c.maxAttempt >= 2 {
			f.setFact("max_attempt", strconv.Itoa(c.maxAttempt))
		}
		if c.dups > 0 {
			f.setFact("duplicates", strconv.Itoa(c.dups))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged %d lines of duplicate requests (a request it already works on, sent again)", name, c.dups))
		}
		if len(c.proxyCallers) > 0 {
			f.setFact("proxy_callers", strings.Join(c.proxyCallers, ", "))
			if c.proxyRetried > 0 {
				f.setFact("proxy_retried", fmt.Sprintf("%d of %d calls (%.0f%%) tried again, up to %d attempts", c.proxyRetried, c.proxyCalls, 100*float64(c.proxyRetried)/float64(max(c.proxyCalls, 1)), c.proxyMaxAttempt))
				f.Evidence = append(f.Evidence, fmt.Sprintf("the proxy of %s tried its calls to %s again: %s — %s", strings.Join(c.proxyCallers, ", "), name, f.fact("proxy_retried"), quote(ReadableLine(c.proxyLine), 200)))
			} else {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the proxy of %s reports upstream retry limit exceeded (URX) for %s", strings.Join(c.proxyCallers, ", "), name))
			}
		}
		if setting != "" {
			if m := findSubmatch(perTryCutRE, setting); m != nil {
				f.setFact("per_try", strings.ReplaceAll(m[2], " ", ""))
				f.setFact("per_try_was", strings.ReplaceAll(m[1], " ", ""))
			}
			f.setFact("setting", setting)
			f.Evidence = append(f.Evidence, "retries set: "+setting)
		}
		if len(c.saturated) > 0 {
			f.setFact("saturated", strings.Join(c.saturated, "; "))
			f.Evidence = append(f.Evidence, fmt.Sprintf("after the retries changed, %s saturated: %s", name, strings.Join(c.saturated, "; ")))
		}
		// Retries not seen themselves (no attempt counts, no duplicate
		// requests, no proxy out of retries): the change and the
		// saturation after it say so, one hop short of seeing them.
		if c.maxAttempt < 3 && c.dups == 0 && len(c.proxyCallers) == 0 {
			f.setFact("state_only", "true")
		}
		f.setFact("callers", strings.Join(callers, ", "))
		f.setFact("caller", name)
		out = append(out, f)
	}
	return out
}

// retrySetting finds the change (in the window or the month before) that
// sets the retries of calls to the callee, as "description (kind, when)".
func retrySetting(ev *Gathered, callee string) string {
	best := ""
	for _, list := range [][]evidence.Change{ev.Earlier, ev.Changes} {
		for _, c := range list {
			if !matchLine(retrySettingRE, c.Description) && !retriesMore(c.Description) {
				continue
			}
			if !strings.Contains(strings.ToLower(c.Description+" "+c.Service), strings.ToLower(callee)) {
				continue
			}
			best = fmt.Sprintf("%s (%s, %s)", c.Description, orWord(c.Kind, "change"), c.Timestamp.UTC().Format("2006-01-02 15:04"))
		}
	}
	return best
}

// sidecarSuffixRE is the suffix of a sidecar proxy's log source named
// after its workload ("wallet-api-istio-proxy").
var sidecarSuffixRE = regexp.MustCompile(`-(?:istio-proxy|linkerd-proxy|envoy|sidecar|proxy)$`)

// proxiedWorkload names the workload whose sidecar proxy a log source is.
func proxiedWorkload(source string) string {
	if w := sidecarSuffixRE.ReplaceAllString(source, ""); w != "" {
		return w
	}
	return source
}

// proxyUpstream is the upstream service a caller's proxy access line
// names (Istio's "outbound|8080||svc.ns.svc.cluster.local", Envoy's
// upstream host "svc.ns.svc.cluster.local:8080"), when it is another
// workload than the log's own ("" otherwise).
func proxyUpstream(line, self string) string {
	if m := findSubmatch(outboundRE, line); m != nil {
		if up := ShortHost(m[1]); up != "" && up != self && up != proxiedWorkload(self) {
			return up
		}
	}
	return ""
}

// retryLinePattern is the pattern of the raw lines a latency or overload
// question needs to count retried calls (attempt counts in access logs).
func retryLinePattern(sc Scope) string {
	if !matchLine(durationAskRE, sc.Message+" "+sc.Hint+" "+sc.Alert) {
		return ""
	}
	return `(?i)\battempts?(?:_count)?["']?\s*[=:]\s*["']?[0-9]|x-envoy-attempt-count|\bURX\b`
}

// attemptsUpRE is a change raising a retry count ("retries attempts 2 ->
// 4", "maxRetries: 3 → 8").
var attemptsUpRE = regexp.MustCompile(`(?i)\b(?:retries|retry|attempts|max_?retries|maxRetries|num_?retries|retry_?count|max_?attempts|maxAttempts)\b[^;,.()]{0,30}?\b(\d+)\s*(?:->|→|=>|to)\s*(\d+)\b`)

// retriesMore reports whether a change makes a caller retry more: more
// attempts, or a per-try timeout cut.
func retriesMore(text string) bool {
	if m := findSubmatch(attemptsUpRE, text); m != nil {
		from, _ := strconv.Atoi(m[1])
		to, _ := strconv.Atoi(m[2])
		if to > from {
			return true
		}
	}
	if m := findSubmatch(perTryCutRE, text); m != nil {
		from, err1 := time.ParseDuration(strings.ReplaceAll(m[1], " ", ""))
		to, err2 := time.ParseDuration(strings.ReplaceAll(m[2], " ", ""))
		return err1 == nil && err2 == nil && to < from
	}
	return false
}

// retryCallee is the service a retry change is about: the asked service
// when the change names it, else the longest workload or Service name of
// the evidence it names (never the caller itself).
func retryCallee(ev *Gathered, text, caller string) string {
	lower := strings.ToLower(text)
	names := []string{ev.Scope.Service}
	for _, d := range ev.K8s.Deployments {
		names = append(names, d.Name)
	}
	for _, s := range ev.K8s.Services {
		names = append(names, s.Service.Name)
	}
	best := ""
	for _, n := range names {
		if n == "" || n == caller || !containsHost(lower, strings.ToLower(n)) {
			continue
		}
		if n == ev.Scope.Service {
			return n
		}
		if len(n) > len(best) {
			best = n
		}
	}
	return best
}
