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
	attemptRE = regexp.MustCompile(`(?i)\b(?:attempt(?:_count|Count)?|x-envoy-attempt-count|retry(?:_count)?)["']?\s*[=:#]?\s*["']?(\d{1,3})\b(?:\s*(?:of|/)\s*(\d{1,3}))?`)
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
	kind:   KindRetryStorm,
	class:  classCause,
	label:  "retry amplification (stacked retries overload the callee)",
	detect: detectRetryAmplification,
	related: func(h *Hypothesis, f *Finding) bool {
		for _, c := range strings.Split(h.fact("callers"), ", ") {
			if c != "" && (f.Subject == c || f.fact("caller") == c) {
				return true
			}
		}
		return false
	},
	// A deploy or restart of the callee is the blip the retries
	// amplified; a change of the retries themselves sets them.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		if retrySettingRE.MatchString(c.Summary + " " + c.fact("description")) {
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
			layers = append(layers, fmt.Sprintf("the proxy of %s retries until its limit (Envoy URX, upstream retry limit exceeded)", c))
		}
		if c := h.fact("callers"); c != "" {
			layers = append(layers, fmt.Sprintf("its callers (%s) retry on top", c))
		}
		if len(layers) > 0 {
			d += " — " + strings.Join(layers, "; ")
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
func detectRetryAmplification(ev *Gathered, _ []Finding) []Finding {
	type callee struct {
		maxAttempt, dups int
		onset            time.Time
		source           string
		line             string
		proxyCallers     []string
		namespace        string
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
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			at := orTime(t.FirstIncident, t.FirstSeen)
			for _, l := range []string{t.Example, t.Last} {
				if l == "" {
					continue
				}
				// A proxy of a caller that gave up retrying its upstream.
				if retryExhaustedRE.MatchString(l) {
					if m := outboundRE.FindStringSubmatch(l); m != nil {
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
				if m := attemptRE.FindStringSubmatch(l); m != nil {
					n, _ = strconv.Atoi(m[1])
				}
				dup := duplicateReqRE.MatchString(l)
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
				if c.line == "" || n > 2 && !attemptRE.MatchString(c.line) {
					c.line, c.source = l, set.Source
				}
			}
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
		if signals < 2 {
			continue
		}
		callers := slices.Clone(c.proxyCallers)
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
			f.Evidence = append(f.Evidence, fmt.Sprintf("the proxy of %s reports upstream retry limit exceeded (URX) for %s", strings.Join(c.proxyCallers, ", "), name))
		}
		if setting != "" {
			f.setFact("setting", setting)
			f.Evidence = append(f.Evidence, "retries set: "+setting)
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
			if !retrySettingRE.MatchString(c.Description) {
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
