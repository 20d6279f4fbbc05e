package analyst

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
)

// A Job stopped at its deadline because an API it calls rate-limited it:
// the run's log shows the replies that refused it (HTTP 429 Too Many
// Requests, a cloud API's ThrottlingException or SlowDown, "rate limit
// exceeded") and the waits its client took before retrying (Retry-After,
// "sleeping 300s before retry", "retrying in 60 seconds", "backing off
// 20s"). The time went into those waits: the throttling API is the root,
// the deadline only where it showed. Every client writes this in its own
// words, so the reply and the wait are read apart and counted over the
// run's log templates; the API is named by what the refused line says (a
// cloud API's reply, a URL's host, the client's component prefix such as
// "paystream:"), and by the base URL the Job's environment points it at.

var (
	// A reply that refuses a call for its rate (not a line that merely
	// speaks of a limit's setting).
	throttledReplyRE = regexp.MustCompile(`(?i)(?:status(?:_?code)?|code|http_status|response_code)["']?\s*[=:]\s*["']?429\b|\b429\b[ :]*(?:Client Error: )?Too Many Requests|HTTP/[\d.]+"?\s+429\b|\bHTTP 429\b|\b429 (?:GET|POST|PUT|PATCH|DELETE)\b|(?:GET|POST|PUT|PATCH|DELETE) \S+ 429\b|Too Many Requests|rate[ -]?limit(?:ed\b| exceeded| reached| hit)|\bthrottled\b|ThrottlingException|Rate exceeded|` + cloudThrottleWords)
	// The status or error of a throttling reply.
	throttleStatusRE = regexp.MustCompile(`(?i)\b429\b|Too Many Requests|ThrottlingException|Rate exceeded|` + cloudThrottleWords)
	// The limit a reply's headers state (X-RateLimit-Limit: 60).
	rateLimitRE = regexp.MustCompile(`(?i)\bx-?rate-?limit-limit["']?\s*[=:]\s*(\d+)`)
	// A wait before a retry, with its length.
	retryWaitRE = regexp.MustCompile(`(?i)(?:retry[-_ ]?after["']?\s*[=:]?\s*["']?|\bsleep(?:ing)?\s+(?:for\s+)?|\bwait(?:ing)?\s+(?:for\s+)?|back(?:ing)?[ -]?off\s+(?:for\s+)?|\bretry(?:ing)?\s+in\s+|\bafter\s+)(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b`)
	// The component a client's line names before a colon ("paystream: GET
	// ..."), after its time and level.
	componentPrefixRE = regexp.MustCompile(`(?:^|\s)([a-z][a-z0-9_.-]{2,40}):\s`)
	logLevelWords     = map[string]bool{"info": true, "warn": true, "warning": true, "error": true, "debug": true, "trace": true, "fatal": true, "notice": true}
)

// throttleWait reads the length of a wait before a retry from a line, in
// seconds (false when it names none). A Retry-After without a unit is in
// seconds, as the HTTP header is.
func throttleWait(line string) (float64, bool) {
	m := findSubmatch(retryWaitRE, line)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	u := strings.ToLower(m[2])
	switch {
	case u == "" && strings.HasPrefix(strings.ToLower(m[0]), "after"):
		return 0, false // "after 3 attempts"
	case u == "ms" || strings.HasPrefix(u, "milli"):
		v /= 1000
	case u == "m" || strings.HasPrefix(u, "min"):
		v *= 60
	}
	return v, true
}

// throttlerOf names who refused a throttled call, from the line: a cloud
// API, a URL's host, the component its client names first.
func throttlerOf(line string, own []string) string {
	if c := cloudAPIOf(line); c != "" {
		return c
	}
	if m := findSubmatch(urlHostRE, line); m != nil {
		return strings.ToLower(m[1])
	}
	for _, m := range findAllSubmatch(componentPrefixRE, line, -1) {
		w := strings.ToLower(m[1])
		if !logLevelWords[w] && !errorWords[w] && !commonWords[w] && !containsFold(own, w) && !strings.Contains(w, "retry") {
			return w
		}
	}
	return ""
}

// explainDeadlineThrottled adds to a Job finding stopped at its deadline
// the rate limit its run waited on, when its log shows one.
func explainDeadlineThrottled(f *Finding, sets []LogSet, names []string, jobs []batchv1.Job) {
	var line string
	refused, waits := 0, 0
	var wait, waited float64
	for i := range sets {
		set := &sets[i]
		if !containsFold(names, set.Subject) && !containsFold(names, set.Source) {
			continue
		}
		for _, t := range set.Templates {
			n := max(t.Count, 1)
			l := ReadableLine(t.Example)
			w, hasWait := throttleWait(l)
			// "rate limited, sleeping 300s" is the client's wait, not
			// the API's reply: a reply names its status or error.
			if matchLine(throttledReplyRE, l) && (matchLine(throttleStatusRE, l) || !hasWait) {
				refused += n
				if m := findSubmatch(rateLimitRE, l); m != nil {
					f.setFact("throttle_limit", m[1])
				}
				if line == "" {
					line = t.Example
				}
				if hasWait {
					wait = max(wait, w)
				}
				continue
			}
			if hasWait && (strings.Contains(strings.ToLower(l), "retr") || strings.Contains(strings.ToLower(l), "limit") || strings.Contains(strings.ToLower(l), "throttl")) {
				waits += n
				waited += float64(n) * w
				wait = max(wait, w)
			}
		}
	}
	if line == "" || refused < 2 && waits == 0 {
		return // one refusal retried at once does not eat a run's time
	}
	if waited == 0 && wait > 0 {
		waited = float64(refused) * wait
	}
	f.setFact("throttle_line", line)
	f.setFact("throttle_count", strconv.Itoa(refused))
	if wait > 0 {
		f.setFact("throttle_wait", durWords(wait))
	}
	if waited > 0 {
		f.setFact("throttle_waited", durWords(waited))
	}
	who := throttlerOf(ReadableLine(line), names)
	if who != "" {
		if u := jobEnvURL(jobs, f.fact("job"), who); u != "" {
			who += " (" + u + ")"
		}
		f.setFact("throttler", who)
	}
	for i := range jobs {
		if j := &jobs[i]; j.Name == f.fact("job") && j.Spec.ActiveDeadlineSeconds != nil {
			f.setFact("deadline", durWords(float64(*j.Spec.ActiveDeadlineSeconds)))
		}
	}
	ev := fmt.Sprintf("the run's log shows %d rate-limited calls", refused)
	if waited > 0 {
		ev += fmt.Sprintf(", about %s spent waiting before retries", f.fact("throttle_waited"))
	}
	f.Evidence = append(f.Evidence, ev+": "+quote(ReadableLine(line), 240))
	f.Weight = max(f.Weight, 0.9)
}

// jobEnvURL is the URL in the environment of a Job's containers whose host
// names the component ("" for none): the API base it is pointed at.
func jobEnvURL(jobs []batchv1.Job, job, component string) string {
	for i := range jobs {
		if jobs[i].Name != job {
			continue
		}
		for _, c := range jobs[i].Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if m := findSubmatch(urlHostRE, e.Value); m != nil && strings.Contains(strings.ToLower(m[1]), component) {
					return e.Value
				}
			}
		}
	}
	return ""
}

// describeDeadlineThrottled says the rate limit a run stopped at its
// deadline waited on.
func describeDeadlineThrottled(h *Hypothesis) string {
	l := h.fact("throttle_line")
	if l == "" {
		return ""
	}
	d := "; it ran out of time waiting on a rate limit"
	if w := h.fact("throttler"); w != "" {
		d += fmt.Sprintf(" of %s", w)
	}
	d += fmt.Sprintf(": %s calls were refused (%s)", h.fact("throttle_count"), throttleReplyWords(l))
	if lim := h.fact("throttle_limit"); lim != "" {
		d += fmt.Sprintf(" at its limit of %s requests", lim)
	}
	if w := h.fact("throttle_wait"); w != "" {
		d += fmt.Sprintf(" and the run waited up to %s before each retry", w)
	}
	if w := h.fact("throttle_waited"); w != "" {
		d += fmt.Sprintf(", about %s in all", w)
		if dl := h.fact("deadline"); dl != "" {
			d += fmt.Sprintf(" of its %s deadline", dl)
		}
	}
	return d + ": " + quote(ReadableLine(l), 200)
}

// throttleReplyWords names the refusal a line quotes.
func throttleReplyWords(line string) string {
	if strings.Contains(line, "429") || strings.Contains(strings.ToLower(line), "too many requests") {
		return "HTTP 429 Too Many Requests, rate limited"
	}
	if r := throttleReply(line); r != "throttled" {
		return r + ", throttled"
	}
	return "rate limited"
}

// recommendDeadlineThrottled recommends for a run stopped at its deadline
// while it waited on a rate limit; false when it did not.
func recommendDeadlineThrottled(h *Hypothesis, r *recommender) bool {
	if h.fact("throttle_line") == "" {
		return false
	}
	what, api := orWord(h.fact("cronjob"), h.fact("job")), orWord(h.fact("throttler"), "the API it calls")
	r.high("Make the Job %s fit within the rate limit of %s: fewer calls (batch them, or ask for one combined result), paced under the limit, then re-run it: kubectl create job --from=cronjob/%s %s-manual", what, api, what, what)
	r.med("Give the run a deadline that covers the waits the limit imposes (activeDeadlineSeconds, now %s) only once its calls fit the limit, or ask %s for a higher limit", orWord(h.fact("deadline"), "its current value"), api)
	return true
}
