package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// A log search ("is there a Peer down in the logs?") has no error state
// to find: it is answered by searching the mined templates for the phrase
// asked about.

// KindLogMatch is log lines that match what a question searches for.
const KindLogMatch Kind = "log_match"

var logMatch = &mechanism{
	kind:   KindLogMatch,
	class:  classCause,
	label:  "log lines matching the question",
	detect: detectLogSearch,
	describe: func(h *Hypothesis, sc Scope) string {
		if h.fact("group_field") != "" {
			return describeGroup(h)
		}
		d := fmt.Sprintf("yes: the logs of %s show %q", h.Subject, h.fact("phrase"))
		if n := h.fact("lines"); n != "" {
			d += fmt.Sprintf(" (%s lines", n)
			if f := h.fact("first"); f != "" {
				d += fmt.Sprintf(", first at %s, last at %s", f, h.fact("last"))
			}
			d += ")"
		}
		if l := h.fact("line"); l != "" {
			d += ": " + quote(ReadableLine(l), 220)
		}
		if a := h.fact("absent"); a != "" {
			d += "; no line shows " + strings.ReplaceAll(a, ", ", " or ")
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Look at what %s logs around %s, where %q first appears, and at its neighbours at that time", h.Subject, orWord(h.fact("first"), "the first match"), h.fact("phrase"))
		r.med("Correlate the matching lines with changes and restarts of %s", h.Subject)
		r.low("Alert on %q in the logs of %s if it signals a failure", h.fact("phrase"), h.Subject)
	},
}

var (
	// Phrases a question searches the logs for.
	searchQuestionRE = []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(?:is|are) there (?:(?:any|an|a)\s+)?(.{3,120}?) (?:in|within|among) (?:the )?(?:[\w.-]+ )?logs?\b`),
		regexp.MustCompile(`(?i)\bdo(?:es)? (?:the )?(?:[\w.-]+ )?logs? (?:show|contain|mention|have) (?:(?:any|an|a)\s+)?(.{3,120}?)(?:[?!]|[.,;]\s|[.,;]?$)`),
		regexp.MustCompile(`(?i)\b(?:search|grep) (?:the )?(?:[\w.-]+ )?logs? for (.{3,120}?)(?:[?!]|[.,;]\s|[.,;]?$)`),
		regexp.MustCompile(`(?i)\b(?:any|find) (.{3,120}?) (?:in|within) (?:the )?(?:[\w.-]+ )?logs?\b`),
	}
	// A qualifier of when or where that ends what is searched for ("...
	// since 10:00", "in the last hour", "after the deploy").
	searchQualifierRE = regexp.MustCompile(`(?i)\s+(?:since|after|before|during|until|till|around|from|between|starting|in the (?:last|past)|over the (?:last|past)|for the (?:last|past)|within the (?:last|past)|at \d|today|yesterday|tonight|this (?:morning|afternoon|evening|week)|last (?:night|hour)|anywhere|recently|lately)\b.*$`)
	// listSepRE separates the items of a list of things searched for.
	listSepRE = regexp.MustCompile(`(?i)\s*,\s*(?:(?:or|and)\s+)?|\s+(?:or|and|nor)\s+|\s*/\s*`)
)

// searchCapture is the text a question asks the logs for, as asked, or
// "".
func searchCapture(text string) string {
	for _, re := range searchQuestionRE {
		if m := findSubmatch(re, text); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// searchPhrase is what a question asks the logs for ("" when it asks
// none): its first quoted phrase, else the text after "do the logs show"
// up to any qualifier of time.
func searchPhrase(text string) string {
	p := searchCapture(text)
	if q := quotedPhrases(p); len(q) > 0 {
		return q[0]
	}
	p = searchQualifierRE.ReplaceAllString(p, "")
	return strings.Trim(p, `"'“”‘’ `)
}

// searchTerms are the phrases a question searches the logs for, each to be
// searched on its own: the quoted phrases when it quotes any ("'Peer down'
// or 'connection refused'"), else the items of its list ("413 or timeout
// errors" → "413 errors", "timeout errors"), else the phrase or single
// word asked about.
func searchTerms(text string) []string {
	if q := quotedPhrases(searchCapture(text)); len(q) > 0 {
		return q
	}
	p := searchPhrase(text)
	if p == "" {
		return nil
	}
	var out []string
	for _, a := range orAlternatives(p) {
		if len(phraseWords(a)) > 0 {
			out = append(out, a)
		}
	}
	return out
}

// quotedPhrases are the phrases in quotes in a text. A quote opens after
// a space or a bracket and closes before one, so an apostrophe inside a
// word ("doesn't") is no quote, and the text between two quoted phrases
// (" or ") is none either.
func quotedPhrases(s string) []string {
	rs := []rune(s)
	closing := map[rune]rune{'"': '"', '\'': '\'', '“': '”', '‘': '’', '`': '`'}
	word := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	var out []string
	for i := 0; i < len(rs); i++ {
		c, ok := closing[rs[i]]
		if !ok || word(i-1) {
			continue
		}
		for j := i + 1; j < len(rs); j++ {
			if (rs[j] == c || c == '"' && rs[j] == '”') && !word(j+1) {
				if q := strings.TrimSpace(string(rs[i+1 : j])); len(q) >= 2 {
					out = append(out, q)
				}
				i = j
				break
			}
		}
	}
	return out
}

// phraseWords are the words of a phrase a line must all contain.
func phraseWords(p string) []string {
	var out []string
	for _, w := range strings.Fields(strings.ToLower(p)) {
		w = strings.Trim(w, `"'.,;:!?()`)
		switch w {
		case "", "a", "an", "the", "any", "some", "of", "or", "and", "error", "errors", "message", "messages", "line", "lines", "entry", "entries":
			continue
		}
		out = append(out, w)
	}
	return out
}

// detectLogSearch answers a question that searches the logs: the templates
// whose lines contain every word of the phrase asked about.
func detectLogSearch(ev *Gathered, _ []Finding) []Finding {
	// "413 or timeout errors": each alternative is searched on its own.
	// "Which route do the 504s come from?": the matches grouped.
	out := detectLogGroups(ev)
	var found []Finding
	var absent []string
	for _, phrase := range searchTerms(ev.Scope.Message + " " + ev.Scope.Hint) {
		fs := searchLogs(ev, phrase)
		if len(fs) == 0 {
			absent = append(absent, strconv.Quote(phrase))
		}
		found = append(found, fs...)
	}
	// What no line shows is part of the answer ("no Peer down").
	for i := range found {
		if len(absent) > 0 {
			found[i].setFact("absent", strings.Join(absent, ", "))
			found[i].Evidence = append(found[i].Evidence, fmt.Sprintf("no line of the logs read shows %s", strings.Join(absent, " or ")))
		}
	}
	return append(out, found...)
}

// orAlternatives splits a phrase asked about into its alternatives ("413
// or timeout errors" → "413 errors", "timeout errors"; "OOM, timeout and
// panic" → three): the words after the last alternative (errors, lines)
// belong to each.
func orAlternatives(p string) []string {
	parts := listSepRE.Split(p, -1)
	if len(parts) < 2 {
		return []string{p}
	}
	// Only generic nouns are shared ("413 or timeout errors"); the last
	// item's own words stay its own ("timeout or broken pipe").
	last := strings.Fields(parts[len(parts)-1])
	tail := ""
	if len(last) > 1 && genericTail(last[1:]) {
		tail = " " + strings.Join(last[1:], " ")
		parts[len(parts)-1] = last[0]
	}
	var out []string
	for _, a := range parts {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a+tail)
		}
	}
	return out
}

// genericTail reports whether words only say what kind of log line is
// meant (errors, messages, lines), of every item of a list.
func genericTail(words []string) bool {
	for _, w := range words {
		switch strings.ToLower(strings.Trim(w, `"'.,;:!?()`)) {
		case "error", "errors", "message", "messages", "line", "lines", "entry", "entries", "exception", "exceptions",
			"warning", "warnings", "failure", "failures", "event", "events", "log", "logs", "responses", "codes", "status":
		default:
			return false
		}
	}
	return true
}

// searchLogs finds the templates whose lines contain every word of one
// phrase.
func searchLogs(ev *Gathered, phrase string) []Finding {
	words := phraseWords(phrase)
	if len(words) == 0 {
		return nil
	}
	type hit struct {
		set         *LogSet
		lines       int
		first, last time.Time
		example     string
	}
	var hits []*hit
	for i := range ev.Logs {
		set := &ev.Logs[i]
		h := &hit{set: set}
		for _, t := range set.Templates {
			l := strings.ToLower(t.Example + " " + t.Template)
			all := true
			for _, w := range words {
				if !strings.Contains(l, w) {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			h.lines += t.Incident + t.Baseline
			h.first = earliest(h.first, t.FirstSeen)
			if t.LastSeen.After(h.last) {
				h.last = t.LastSeen
			}
			if h.example == "" {
				h.example = t.Example
			}
		}
		if h.lines > 0 {
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].lines > hits[j].lines })
	var out []Finding
	for _, h := range hits {
		f := Finding{Kind: KindLogMatch, Subject: h.set.Subject, Object: h.set.Origin + " " + h.set.Source, Namespace: h.set.Namespace,
			Time: h.first, Severity: SevWarning, Weight: 0.9, Source: h.set.Origin}
		f.setFact("phrase", phrase)
		f.setFact("lines", strconv.Itoa(h.lines))
		f.setFact("line", h.example)
		f.setFact("caller", h.set.Subject)
		// A proxy's line that names the service asked about (an ingress
		// log's upstream "[media/media-upload-http]") is about it.
		if svc := ev.Scope.Service; svc != "" && svc != h.set.Subject && strings.Contains(strings.ToLower(h.example), strings.ToLower(svc)) {
			f.Related = append(f.Related, svc)
		}
		if !h.first.IsZero() {
			f.setFact("first", ts(h.first))
			f.setFact("last", ts(h.last))
		}
		f.Evidence = []string{fmt.Sprintf("%s %s logged %s matching %q from %s to %s: %s", h.set.Origin, h.set.Source, plural(h.lines, "line", "lines"), phrase, ts(h.first), ts(h.last), quote(ReadableLine(h.example), 240))}
		f.Summary = fmt.Sprintf("%s logs %q (%s)", h.set.Subject, phrase, plural(h.lines, "line", "lines"))
		out = append(out, f)
		if len(out) >= 3 {
			break
		}
	}
	return out
}
