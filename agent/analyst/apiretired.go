package analyst

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A provider that retires a version of its API at the date it announced:
// from the sunset on, every call to the old version answers 410 Gone (or
// a versioned error: "api_version_retired", "This API version is no longer
// supported"), and the caller that never moved to the successor fails
// with nothing deployed on its side. The provider announced it for weeks
// in its answers' headers (RFC 8594's Sunset and the Deprecation header,
// with a Link to the successor version), which clients log as warnings;
// the provider's status page stays green, since the new version works.

// KindAPIRetired is a caller of an API version its provider retired.
const KindAPIRetired Kind = "api_retired"

var (
	// apiGoneRE is a call answered as retired: 410 Gone, a versioned
	// error naming the retirement.
	apiGoneRE = regexp.MustCompile(`(?i)\b410 Gone\b|\b410 Client Error: Gone\b|status code 410\b|responded with status 410\b|\bstatus(?:_?code)?["']?\s*[=:]\s*["']?410\b|\bHTTP/\d(?:\.\d)?"?\s+410\b|\bapi_version_(?:retired|sunset|deprecated|unsupported)\b|\bAPI version\b[^.]{0,60}\b(?:has been |is |was )?(?:retired|sunset|decommissioned|no longer (?:supported|available))`)
	// apiSunsetRE is a response's Sunset header as a client logs it, with
	// its date.
	apiSunsetRE = regexp.MustCompile(`(?i)\bSunset\b["']?\s*[=:]\s*"?((?:[A-Z][a-z]{2}, )?\d{1,2} [A-Z][a-z]{2} \d{4}(?: [\d:]{8})?(?: GMT)?|\d{4}-\d{2}-\d{2}(?:[T ][\d:]+Z?)?)`)
	// apiDeprecationRE is a deprecation notice: the Deprecation header or
	// a client's warning.
	apiDeprecationRE = regexp.MustCompile(`(?i)\bDeprecation\b["']?\s*[=:]|\bdeprecat(?:ed|ion) (?:notice|warning)|\bAPI version\b[^.]{0,60}\bdeprecated\b`)
	// apiVersionPathRE is the version in a called URL's path (/v2/,
	// /api/v1/).
	apiVersionPathRE = regexp.MustCompile(`(?i)https?://([a-z0-9][a-z0-9.-]*\.[a-z]{2,})(?::\d+)?((?:/[a-z0-9_-]+)??/v\d+(?:\.\d+)?)(?:/|\b)`)
	// apiVersionChangeRE is a change of the API version a caller uses.
	apiVersionChangeRE = regexp.MustCompile(`(?i)\bv\d+\b|api version|migrat|sunset|deprecat`)
	// retiredWordsRE is an answer that names the retirement itself.
	retiredWordsRE = regexp.MustCompile(`(?i)retired|sunset|no longer supported|version`)
	// apiRetiredOnRE is the date an answer says the version was retired.
	apiRetiredOnRE = regexp.MustCompile(`(?i)(?:retired|sunset|decommissioned) (?:on|since|as of) (\d{4}-\d{2}-\d{2}(?:[T ][\d:]+Z?)?)`)
	// apiSuccessorRE is the successor the Link header names.
	apiSuccessorRE = regexp.MustCompile(`(?i)<(https?://[^>]+)>;\s*rel=\\?"?successor-version`)
)

var apiRetired = &mechanism{
	kind:   KindAPIRetired,
	class:  classCause,
	label:  "the provider retired the API version the caller still calls (410 Gone after its sunset)",
	detect: detectAPIRetired,
	// The provider's date triggers it; no change of the caller does.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(apiVersionChangeRE, changeText(c)) && c.Subject == h.Subject
	},
	related: func(h *Hypothesis, f *Finding) bool {
		if f.Subject != h.Subject {
			return false
		}
		switch f.Kind {
		case KindLogErrors, KindErrorRate, KindAuth, KindCrashLoop, KindAppCrash, KindJobFailed:
			return true
		}
		return false
	},
	describe: func(h *Hypothesis, sc Scope) string {
		prov := orWord(h.fact("provider"), "the provider")
		ver := h.fact("version")
		what := "the API version " + h.Subject + " calls"
		if ver != "" {
			what = fmt.Sprintf("the %s API (%s) that %s still calls", strings.Trim(ver, "/"), ver, h.Subject)
		}
		d := fmt.Sprintf("%s retired %s", prov, what)
		if s := h.fact("sunset"); s != "" {
			d += fmt.Sprintf(" at its sunset date (%s)", s)
		}
		d += fmt.Sprintf(": every call to it answers 410 Gone (from %s in the logs read)", hm(h.Onset))
		d += h.quoteClause(" — ", "line", 200)
		if n := h.fact("notice"); n != "" {
			d += fmt.Sprintf(". The Deprecation and Sunset headers of %s's answers had been logged since %s: %s", prov, h.fact("notice_since"), quote(ReadableLine(n), 220))
		}
		if s := h.fact("successor"); s != "" {
			d += fmt.Sprintf("; the successor version is documented at %s", s)
		}
		d += fmt.Sprintf(". %s is not down (its current version works) and nothing deployed on %s's side caused it: %s must move to the supported version", prov, h.Subject, h.Subject)
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		prov := orWord(h.fact("provider"), "the provider")
		r.high("Move %s's calls to %s's supported API version (%s) and replay the failed work; ask %s whether the old version can be re-enabled for the client meanwhile", h.Subject, prov, orWord(h.fact("successor"), "the successor version"), prov)
		r.med("Search the other services for calls to the retired version (%s) before they fail the same way", orWord(h.fact("version"), "its path"))
		r.low("Alert on Deprecation and Sunset headers in the providers' answers (a warning logged is not read), and track providers' sunset dates")
	},
}

// detectAPIRetired finds callers whose calls an external API answers as
// retired, with the deprecation notices their logs carried before.
func detectAPIRetired(ev *Gathered, _ []Finding) []Finding {
	var out []Finding
	bySubject := map[string]int{}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		if set.Subject == "" {
			continue
		}
		var gone, notice, sunset, version, provider, successor string
		var first, noticeAt time.Time
		var goneLines []string
		n := 0
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if m := findSubmatch(apiVersionPathRE, l); m != nil && version == "" && proxyExternalHost(m[1]) {
					version, provider = m[2], m[1]
				}
			}
			if l := templateLine(t, apiGoneRE); l != "" {
				at := earliest(t.FirstSeen, t.FirstIncident)
				if gone == "" || at.Before(first) || retiredWordsRE.MatchString(l) && !retiredWordsRE.MatchString(gone) {
					gone, first = l, at
				}
				n += t.Count
				goneLines = append(goneLines, fmt.Sprintf("%s logged %s from %s: %s", set.Source, plural(t.Count, "line", "lines"), ts(at), quote(ReadableLine(l), 240)))
				if m := findSubmatch(apiRetiredOnRE, l); m != nil && sunset == "" {
					sunset = m[1]
				}
			}
			if l := templateLine(t, apiDeprecationRE); l != "" || templateLine(t, apiSunsetRE) != "" {
				if l == "" {
					l = templateLine(t, apiSunsetRE)
				}
				if notice == "" || t.FirstSeen.Before(noticeAt) {
					notice, noticeAt = l, t.FirstSeen
				}
				if m := findSubmatch(apiSunsetRE, l); m != nil && sunset == "" {
					sunset = m[1]
				}
				if m := findSubmatch(apiSuccessorRE, l); m != nil && successor == "" {
					successor = m[1]
				}
			}
		}
		// A 410 alone is a deleted resource; the retirement is what the
		// notices announced or the answer names.
		if gone == "" || notice == "" && !matchLine(retiredWordsRE, gone) {
			continue
		}
		if notice != "" && !noticeAt.IsZero() && first.Before(noticeAt) {
			continue // the notices came after the failures: not announced
		}
		f := Finding{Kind: KindAPIRetired, Subject: set.Subject, Namespace: set.Namespace, Object: set.Source, Time: first,
			Severity: SevCritical, Weight: 0.9, Source: set.Origin, Facts: map[string]string{}}
		f.setFact("line", gone)
		f.setFact("version", version)
		f.setFact("provider", provider)
		f.setFact("sunset", sunset)
		f.setFact("successor", successor)
		if len(goneLines) > 3 {
			goneLines = goneLines[:3]
		}
		f.Evidence = append(f.Evidence, goneLines...)
		if notice != "" {
			f.setFact("notice", notice)
			f.setFact("notice_since", ts(noticeAt))
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s logged the provider's deprecation notice from %s: %s", set.Source, ts(noticeAt), quote(ReadableLine(notice), 240)))
		}
		f.Summary = fmt.Sprintf("%s calls a retired API version%s (410 Gone)", set.Subject, parenthesized(version))
		if j, ok := bySubject[set.Subject]; ok {
			if f.Time.Before(out[j].Time) {
				out[j] = f
			}
			continue
		}
		bySubject[set.Subject] = len(out)
		out = append(out, f)
	}
	return out
}
