package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KindRetriedNonIdempotent: a proxy retries a request that is not safe to
// send twice. A mesh or gateway retry policy with a per-try timeout (an
// Istio VirtualService's retries.perTryTimeout, Envoy's per_try_timeout)
// cuts off an attempt that takes longer and sends the request again, while
// the server, which never learns of the cut, completes the first attempt:
// a POST that charges, books or sends without an idempotency key is done
// twice. Nothing fails: both attempts succeed, a few seconds apart, for
// the requests slower than the per-try timeout.
const KindRetriedNonIdempotent Kind = "retried_non_idempotent"

var retriedNonIdempotent = &mechanism{
	kind:           KindRetriedNonIdempotent,
	class:          classCause,
	label:          "proxy retries of a non-idempotent request",
	detect:         detectRetriedNonIdempotent,
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(perTryRE, changeText(c)) || matchLine(retryPolicyChangeRE, changeText(c))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the proxies in front of %s retry its %s requests (%s: retries attempts %s, perTryTimeout %s%s): an attempt slower than the %s per-try timeout is cut off by the caller's proxy and sent again, while %s completes the first attempt — %s is not safe to repeat without an idempotency key, so each attempt cut is done twice (%s)",
			h.Subject, orWord(h.fact("request"), "non-idempotent"), orWord(h.fact("policy"), "the retry policy"), orWord(h.fact("attempts"), "?"), h.fact("per_try"), clauseIf(", retryOn ", h.fact("retry_on"), ""),
			h.fact("per_try"), h.Subject, orWord(h.fact("request"), "the request"), h.fact("cut"))
		if l := h.fact("finished_line"); l != "" {
			d += fmt.Sprintf("; %s finishes the cut attempts after the caller is gone (%s)", h.Subject, quote(truncate(l, 200), 210))
		}
		if c := h.fact("policy_change"); c != "" && h.Trigger == nil {
			d += "; the retries came with " + c
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Stop retrying %s's non-idempotent requests at the proxy: remove the retries from its route (or limit retryOn to connect-failure, refused-stream), or raise perTryTimeout above the slowest legitimate request", h.Subject)
		r.high("Make %s idempotent: take an idempotency key from the caller (the order id) and pass it to the provider, so a repeated request returns the first result", h.Subject)
		r.rollback()
		r.med("Find and undo the duplicates done since the retry policy applied (two identical operations a per-try timeout apart)")
		r.low("Review retry policies applied by label or default to many routes: retries belong only on idempotent methods")
	},
}

var (
	// A per-try timeout, in a route's YAML or JSON or in a change's text.
	perTryRE = regexp.MustCompile(`(?i)\bper[_-]?try[_-]?timeout["']?\s*[:=]?\s*["']?(\d+(?:\.\d+)?(?:ms|s|m))\b`)
	// Retry attempts beside it.
	retryAttemptsRE = regexp.MustCompile(`(?i)\b(?:attempts|num_retries|numRetries)["']?\s*[:=]?\s*["']?(\d{1,2})\b`)
	retryOnRE       = regexp.MustCompile(`(?i)\bretry[_-]?on["']?\s*[:=]\s*["']?([\w,.-]+)`)
	// A change that adds or sets retries.
	retryPolicyChangeRE = regexp.MustCompile(`(?i)\bretries\b.*\b(?:attempts|perTryTimeout)\b`)
	// A non-idempotent request cut off by the downstream: Envoy's access
	// log in its default text form ("POST /x HTTP/1.1" 0 DC
	// downstream_remote_disconnect ... DURATION) or as JSON.
	envoyCutRE     = regexp.MustCompile(`"(POST|PATCH) (\S+?)(?:\?\S*)? HTTP/[\d.]+" (\d{1,3}) (\S*DC\S*) \S+ \S+ "[^"]*" \d+ \d+ (\d+) `)
	envoyJSONCutRE = regexp.MustCompile(`(?i)"method"\s*:\s*"(POST|PATCH)"`)
	// A server's line of work finished after its caller went away.
	finishedGoneRE = regexp.MustCompile(`(?i)response not written|client (?:disconnected|closed|went away)|context canceled|broken pipe|client closed request|connection reset by peer while writing`)
)

// retryPolicy is a route's retry policy read from a command's output or a
// change.
type retryPolicy struct {
	name, attempts, retryOn string
	change                  string // the change that set it
	perTry                  time.Duration
	perTryText              string
}

// detectRetriedNonIdempotent reads a retry policy with a per-try timeout
// and, in the access log of a service, non-idempotent requests cut off
// by the downstream at that timeout.
func detectRetriedNonIdempotent(ev *Gathered, found []Finding) []Finding {
	var policies []retryPolicy
	for _, c := range ev.Commands {
		if p, ok := retryPolicyOf(c.Lines); ok {
			p.name = orWord(routeName(c.Lines), p.name)
			policies = append(policies, p)
		}
	}
	for _, c := range append(slices.Clone(ev.Changes), ev.Earlier...) {
		p, ok := retryPolicyOf([]string{c.Description})
		if !ok {
			continue
		}
		set := fmt.Sprintf("the %s change of %s at %s: %s", c.Kind, c.Service, ts(c.Timestamp), quote(truncate(c.Description, 240), 250))
		// The change that set a policy read from the route itself.
		matched := false
		for i := range policies {
			if policies[i].perTry == p.perTry && policies[i].change == "" {
				policies[i].change, matched = set, true
			}
		}
		if !matched {
			p.name, p.change = "the "+c.Kind+" change of "+c.Service, set
			policies = append(policies, p)
		}
	}
	if len(policies) == 0 {
		return nil
	}
	var out []Finding
	done := map[string]bool{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Host || done[set.Subject] {
			continue
		}
		for _, p := range policies {
			n, request, example := 0, "", ""
			var first time.Time
			for _, t := range set.Templates {
				if t.Incident == 0 {
					continue
				}
				for _, l := range []string{t.Example, t.Last} {
					method, path, took, ok := cutRequest(l)
					if !ok || took < p.perTry || took > p.perTry+p.perTry/5+50*time.Millisecond {
						continue
					}
					n += t.Incident
					request, example = method+" "+path, l
					at := firstOf(t.FirstIncident, t.FirstSeen)
					if first.IsZero() || at.Before(first) {
						first = at
					}
					break
				}
			}
			if n == 0 {
				continue
			}
			done[set.Subject] = true
			f := Finding{Kind: KindRetriedNonIdempotent, Subject: set.Subject, Object: "log " + set.Source, Namespace: set.Namespace, Severity: SevCritical,
				Weight: 0.85, Source: SrcLogs, Time: firstOf(first, ev.Window.Start)}
			f.setFact("request", request)
			f.setFact("policy", p.name)
			f.setFact("attempts", p.attempts)
			f.setFact("per_try", p.perTryText)
			f.setFact("retry_on", p.retryOn)
			f.setFact("policy_change", p.change)
			f.setFact("cut", fmt.Sprintf("%s %s cut off by the downstream at the per-try timeout in %s's access log", plural(n, "request", "requests"), request, set.Subject))
			f.Summary = fmt.Sprintf("%s: %s cut off at the %s per-try timeout of a retry policy", set.Subject, plural(n, request+" request", request+" requests"), p.perTryText)
			f.Evidence = append(f.Evidence,
				fmt.Sprintf("%s: retries attempts %s, perTryTimeout %s%s", p.name, orWord(p.attempts, "?"), p.perTryText, clauseIf(", retryOn ", p.retryOn, "")),
				fmt.Sprintf("logs %s: %s cut off by the downstream at %s: %s", set.Source, plural(n, request+" request", request+" requests"), p.perTryText, quote(truncate(ReadableLine(example), 200), 210)))
			if p.change != "" {
				f.Evidence = append(f.Evidence, "the retry policy was set by "+p.change)
			}
			if l := finishedAfterGone(ev, set.Subject); l != "" {
				f.setFact("finished_line", ReadableLine(l))
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s finishes requests after the caller is gone: %s", set.Subject, quote(truncate(ReadableLine(l), 200), 210)))
			}
			out = append(out, f)
			break
		}
	}
	return out
}

// retryPolicyOf reads a retry policy with a per-try timeout from lines (a
// route's YAML or JSON, or a change's text).
func retryPolicyOf(lines []string) (retryPolicy, bool) {
	var p retryPolicy
	for _, l := range lines {
		if m := findSubmatch(perTryRE, l); m != nil && p.perTryText == "" {
			d, err := time.ParseDuration(m[1])
			if err != nil || d <= 0 {
				continue
			}
			p.perTry, p.perTryText = d, m[1]
		}
		if m := findSubmatch(retryAttemptsRE, l); m != nil && p.attempts == "" {
			p.attempts = m[1]
		}
		if m := findSubmatch(retryOnRE, l); m != nil && p.retryOn == "" {
			p.retryOn = strings.TrimRight(m[1], ",")
		}
	}
	if p.perTryText == "" {
		return p, false
	}
	if n, err := strconv.Atoi(p.attempts); err == nil && n == 0 {
		return p, false
	}
	return p, true
}

// routeName names the route object a command printed ("VirtualService
// payments/payments-api").
func routeName(lines []string) string {
	kind, name, ns := "", "", ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "kind: "):
			kind = strings.TrimPrefix(l, "kind: ")
		case strings.HasPrefix(l, "  name: ") && name == "":
			name = strings.TrimPrefix(l, "  name: ")
		case strings.HasPrefix(l, "  namespace: ") && ns == "":
			ns = strings.TrimPrefix(l, "  namespace: ")
		case strings.HasPrefix(t, `"kind": `) && kind == "":
			kind = strings.Trim(strings.TrimPrefix(t, `"kind": `), `",`)
		}
	}
	if kind == "" || name == "" {
		return ""
	}
	return kind + " " + clauseIf("", ns, "/") + name
}

// cutRequest reads a non-idempotent request cut off by the downstream
// from an access log line, with how long it had run.
func cutRequest(line string) (method, path string, took time.Duration, ok bool) {
	if m := envoyCutRE.FindStringSubmatch(line); m != nil {
		ms, _ := strconv.Atoi(m[5])
		return m[1], m[2], time.Duration(ms) * time.Millisecond, true
	}
	if m := envoyJSONCutRE.FindStringSubmatch(line); m != nil && strings.Contains(line, `"DC"`) {
		p := jsonField(line, "path")
		d := jsonField(line, "duration")
		ms, err := strconv.Atoi(d)
		if err != nil {
			return "", "", 0, false
		}
		return strings.ToUpper(m[1]), strings.SplitN(p, "?", 2)[0], time.Duration(ms) * time.Millisecond, true
	}
	return "", "", 0, false
}

var jsonFieldRE = map[string]*regexp.Regexp{
	"path":     regexp.MustCompile(`"path"\s*:\s*"([^"]*)"`),
	"duration": regexp.MustCompile(`"duration"\s*:\s*"?(\d+)`),
}

func jsonField(line, key string) string {
	if m := jsonFieldRE[key].FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// finishedAfterGone is a line of the service's own log, in the window,
// that says it finished a request after its caller went away.
func finishedAfterGone(ev *Gathered, subject string) string {
	for _, set := range ev.Logs {
		if set.Subject != subject {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident > 0 && matchLine(finishedGoneRE, t.Example) && !strings.Contains(t.Example, "HTTP/") {
				return t.Example
			}
		}
	}
	return ""
}
