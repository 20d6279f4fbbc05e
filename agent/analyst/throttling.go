package analyst

import (
	"fmt"
	"regexp"
)

// Calls rate-limited (HTTP 429, ThrottlingException): by an external API,
// by a dependency, or by the service's own misconfigured rate limiter.
var throttlingM = &mechanism{
	kind:       KindThrottling,
	class:      classDependency,
	label:      "throttling",
	lines:      regexp.MustCompile(`(?i)(?:status(?:_?code)?|code|http_status|response_code)["']?\s*[=:]\s*["']?429\b|\b429 Too Many Requests|HTTP/[\d.]+"?\s+429\b|\bHTTP 429\b|Too Many Requests|rate[ -]limit(ed|ing)?|ThrottlingException|Rate exceeded|throttl|quota exceeded`),
	lineWeight: 0.7,
	describe: func(h *Hypothesis, sc Scope) string {
		s := h.Subject
		var d string
		top := h.top()
		if ext := h.fact("external"); ext != "" && h.fact("line") != "" {
			d = fmt.Sprintf("the external API %s rate-limits (HTTP 429, too many requests) the calls from %s: %s", ext, orWord(h.fact("caller"), "the service"), quote(ReadableLine(h.fact("line")), 200))
		} else if h.fact("line") == "" {
			d = fmt.Sprintf("%s is throttled (rate limited): %s", s, top.Summary)
		} else if c := h.Trigger; c != nil && c.Kind == KindConfigChange && (h.fact("target") == "" || h.fact("target") == h.fact("caller") || h.fact("caller") == "") {
			// The service answers 429 itself, right after its own config
			// change: its rate limiter is misconfigured.
			d = fmt.Sprintf("rate-limit misconfiguration in %s (config change %s): its own rate limiter answers 429 (too many requests) to every client — %s", orWord(h.fact("caller"), s), orWord(c.fact("revision"), ts(c.Time)), quote(ReadableLine(h.fact("line")), 200))
		} else {
			d = fmt.Sprintf("%s is throttled (rate limited) by %s: %s", orWord(h.fact("caller"), "the service"), orWord(h.fact("target"), s), quote(ReadableLine(h.fact("line")), 200))
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		connRefused.recommend(h, sc, r)
	},
}
