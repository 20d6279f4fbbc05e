package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Catastrophic regex backtracking: a regular expression with nested
// quantifiers ("(a+)*", "([\-.]?[a-z0-9]+)*@") run by a backtracking engine
// (Java's java.util.regex, Python's re, PCRE, .NET, Ruby's Onigmo,
// JavaScript's Irregexp) against an input it does not match tries an
// exponential number of ways before it gives up. Each such call holds a
// request thread on the CPU for seconds: the service pegs its CPU limit
// and is throttled, its latency climbs with the length of the input, and
// nothing errors (the match eventually fails and the request is answered).
// Its callers are slow, not the service's database or network. It is
// read where the CPU goes: thread dumps whose running request threads sit
// in the regex engine (jstack/jcmd Thread.print, py-spy dump), CPU
// profiles whose top functions are the engine's, and the engines'
// own refusals (.NET's RegexMatchTimeoutException, Ruby's
// Regexp::TimeoutError, PHP's backtrack limit). The application frame
// under the engine names the call, a pattern with a quantified group that
// itself holds a quantifier names the expression; the release of the
// service that brought it is the trigger.

// KindRegexBacktrack is a regular expression backtracking
// catastrophically on the CPU.
const KindRegexBacktrack Kind = "regex_backtrack"

var regexBacktrack = &mechanism{
	kind:   KindRegexBacktrack,
	class:  classCause,
	label:  "catastrophic regular expression backtracking (CPU held by a regex match)",
	detect: detectRegexBacktrack,
	// The CPU it burns shows on its subject as throttling, saturation,
	// slow operations and latency.
	related: exceptChanges(func(h *Hypothesis, f *Finding) bool {
		switch f.Kind {
		case KindCPUThrottling, KindSaturation, KindLatency, KindSlowOperation, KindHPAMax, KindLogErrors, KindTimeout:
			return strings.EqualFold(f.Subject, h.Subject) || f.Kind != KindCPUThrottling && f.Kind != KindSaturation && slices.Contains(h.top().Related, f.Subject)
		case KindSlowCall:
			return slices.Contains(h.top().Related, f.Subject) || strings.EqualFold(f.Subject, h.Subject)
		}
		return false
	}),
	// An expression is written in code or configuration: only a change
	// of the service that runs it brings it.
	strictTriggers: true,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return (c.Kind == KindDeploy || c.Kind == KindConfigChange || c.Kind == KindFeatureFlag) && strings.EqualFold(c.Subject, h.Subject) ||
			matchLine(regexWordRE, changeText(c)) && c.relates(h.Subject)
	},
	describe:  describeRegexBacktrack,
	recommend: recommendRegexBacktrack,
}

var (
	// A frame or profile function of a backtracking regex engine.
	regexEngineFrameRE = regexp.MustCompile(`java\.util\.regex\.(?:Pattern|Matcher)|System\.Text\.RegularExpressions\.|(?:^|[/.])re(?:/__init__)?\.(?:match|search|sub|subn|findall|finditer|fullmatch|split)$|\bsre_(?:u\w+_)?(?:match|search)|_sre\.|\bpcre2?_(?:match|exec)|\bonig_(?:search|match)|\bIrregexp|RegExp:|\bRegExpImpl|boost::re_detail|std::__detail::_Executor`)
	// An engine's own refusal of a match that ran too long.
	regexLimitRE = regexp.MustCompile(`RegexMatchTimeoutException|Regexp::TimeoutError|PREG_BACKTRACK_LIMIT_ERROR|[Bb]acktrack(?:ing)? limit (?:was )?(?:exhausted|exceeded|reached)|regular expression (?:match )?timed out`)
	// A change or setting that names an expression.
	regexWordRE = regexp.MustCompile(`(?i)\bregex|regular expression|\bpattern\b`)
	// A setting or line that holds an expression ("x.pattern=...",
	// "pattern: ...", Pattern.compile("...")).
	patternSettingRE = regexp.MustCompile(`(?i)(?:pattern|regex|regexp)\w*\s*[=:]\s*(\S.*)$|Pattern\.compile\("([^"]+)"|re\.compile\(r?["']([^"']+)["']`)
)

// nestedQuantifier reports whether a pattern holds a quantified group
// that itself holds a quantifier ("(a+)*", "(([-.]|_+)?[a-z0-9]+)*"): the
// shape that backtracks exponentially.
func nestedQuantifier(p string) bool {
	type group struct{ quant bool }
	var stack []group
	inClass := false
	quantAt := func(i int) bool {
		if i >= len(p) {
			return false
		}
		switch p[i] {
		case '*', '+':
			return true
		case '{':
			j := strings.IndexByte(p[i:], '}')
			return j > 0 && strings.Contains(p[i:i+j], ",")
		}
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			i++
			// A doubled backslash of a properties file or a string
			// literal escapes the next character as one.
			if i < len(p) && p[i] == '\\' && i+1 < len(p) {
				i++
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			stack = append(stack, group{})
		case c == ')':
			if len(stack) == 0 {
				continue
			}
			g := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if g.quant && quantAt(i+1) {
				return true
			}
			if len(stack) > 0 && (g.quant || quantAt(i+1)) {
				stack[len(stack)-1].quant = true
			}
		case c == '*' || c == '+' || c == '{' && quantAt(i):
			if len(stack) > 0 {
				stack[len(stack)-1].quant = true
			}
		}
	}
	return false
}

func detectRegexBacktrack(ev *Gathered, found []Finding) []Finding {
	type reading struct {
		threads, total int
		appFrame       string
		evidence       []string
		pattern        string
		limitLine      string
	}
	var by keyed[reading]
	forwarded := ""
	for _, c := range ev.Commands {
		if m := findSubmatch(podForwardRE, c.Command); m != nil {
			forwarded = m[1]
		}
		subject := profileSubject(ev, c, "", forwarded)
		// A thread dump: request threads running in the engine.
		n, total, app := 0, 0, ""
		for _, th := range parseThreads(c.Lines) {
			if len(th.frames) == 0 {
				continue
			}
			total++
			top := th.frames[:min(3, len(th.frames))]
			if !slices.ContainsFunc(top, regexEngineFrameRE.MatchString) {
				continue
			}
			n++
			for _, fr := range th.frames {
				if !matchLine(regexEngineFrameRE, fr) && !strings.HasPrefix(fr, "java.") && app == "" {
					app = fr
				}
			}
		}
		if n > 0 && subject != "" {
			r := by.get(subject)
			r.threads += n
			r.total += total
			r.appFrame = orWord(r.appFrame, app)
			e := fmt.Sprintf("thread dump of %s (%s): %d of %d threads running inside the regex engine", subject, truncate(c.Command, 100), n, total)
			if app != "" {
				e += ", called from " + app
			}
			r.evidence = append(r.evidence, e)
		}
		// A CPU profile whose top rows are the engine's.
		if rows, _, ok := readProfile(c.Lines); ok && subject != "" {
			share := 0.0
			var names []string
			for _, row := range rows {
				if matchLine(regexEngineFrameRE, row.fn) {
					share += row.self
					if len(names) < 3 {
						names = append(names, fmt.Sprintf("%s %.1f%%", row.fn, row.self))
					}
				}
			}
			if share >= 40 {
				r := by.get(subject)
				r.threads++
				r.evidence = append(r.evidence, fmt.Sprintf("CPU profile of %s (%s): %.0f%% of the samples in the regex engine (%s)", subject, truncate(c.Command, 100), share, strings.Join(names, ", ")))
			}
		}
	}
	// The engines' own refusals in the logs.
	for x := range incidentMatches(ev, regexLimitRE) {
		r := by.get(x.set.Subject)
		r.threads++
		if r.limitLine == "" {
			r.limitLine = x.line
			r.evidence = append(r.evidence, templateEvidence(*x.set, x.t, x.line))
		}
	}
	if len(by.order) == 0 {
		return nil
	}
	// The expression: a pattern with nested quantifiers that a command
	// printed (a properties file, a ConfigMap, the source).
	var pattern, patternFrom string
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			m := findSubmatch(patternSettingRE, l)
			if m == nil {
				continue
			}
			p := strings.TrimSpace(orWord(m[1], orWord(m[2], m[3])))
			if nestedQuantifier(p) {
				pattern, patternFrom = strings.TrimSpace(l), truncate(c.Command, 100)
				break
			}
		}
		if pattern != "" {
			break
		}
	}
	var out []Finding
	for _, subject := range by.order {
		r := by.get(subject)
		f := Finding{Kind: KindRegexBacktrack, Subject: subject, Object: "service " + subject, Namespace: ev.Scope.Namespace,
			Severity: SevCritical, Weight: 0.9, Source: SrcKubernetes}
		// It holds the CPU from the moment its CPU rose.
		for _, g := range found {
			if (g.Kind == KindCPUThrottling || g.Kind == KindSaturation) && strings.EqualFold(g.Subject, subject) && !g.Time.IsZero() {
				f.Time = earliest(f.Time, g.Time)
			}
		}
		if f.Time.IsZero() {
			f.Time = cpuRise(ev.Metrics, subject, ev.Window)
		}
		if f.Time.IsZero() {
			f.Time = ev.Window.Start
		}
		f.Evidence = r.evidence
		if r.appFrame != "" {
			f.setFact("call", shortFrame(r.appFrame))
			f.setFact("frame", r.appFrame)
		}
		if r.total > 0 {
			f.setFact("threads", fmt.Sprintf("%d of %d", r.threads, r.total))
		}
		f.setFact("line", r.limitLine)
		if pattern != "" {
			f.setFact("pattern", pattern)
			f.Evidence = append(f.Evidence, fmt.Sprintf("the expression it runs, printed by %s, nests quantifiers (a quantified group holding a quantifier): %s", patternFrom, quote(pattern, 200)))
		}
		for _, c := range loggedCallersOf(ev, subject) {
			f.Related = appendNew(f.Related, c)
		}
		f.setFact("callers", strings.Join(f.Related, ", "))
		f.Summary = fmt.Sprintf("%s spends its CPU backtracking in a regular expression", subject)
		if c := f.fact("call"); c != "" {
			f.Summary += " (" + c + ")"
		}
		out = append(out, f)
	}
	return out
}

// loggedCallersOf are the services whose log, in the incident window, names
// subj: its name, or a time field named for it or for its last word
// ("moderation_ms=9377" of review-moderation, "inventory_latency=").
func loggedCallersOf(ev *Gathered, subj string) []string {
	parts := strings.Split(strings.ToLower(subj), "-")
	words := []string{squash(subj)}
	if last := parts[len(parts)-1]; len(parts) > 1 && len(last) >= 5 {
		words = append(words, last)
	}
	var out []string
	for _, set := range ev.Logs {
		if set.Subject == "" || strings.EqualFold(set.Subject, subj) || slices.Contains(out, set.Subject) {
			continue
		}
		for _, t := range set.Templates {
			if t.Incident == 0 {
				continue
			}
			line := strings.ToLower(t.Example)
			hit := strings.Contains(line, strings.ToLower(subj))
			for _, m := range findAllSubmatch(timeFieldRE, line, -1) {
				hit = hit || slices.Contains(words, squash(m[1]))
			}
			if hit {
				out = append(out, set.Subject)
				break
			}
		}
	}
	return out
}

// timeFieldRE is a field that times a call ("moderation_ms=",
// "\"rank_duration\":").
var timeFieldRE = regexp.MustCompile(`\b([a-z][a-z0-9]*(?:[_-][a-z0-9]+)*?)[_-]?(?:ms|millis|seconds|secs|duration|latency|time)"?\s*[=:]`)

func describeRegexBacktrack(h *Hypothesis, sc Scope) string {
	s := h.Subject
	d := fmt.Sprintf("%s is slow because a regular expression backtracks catastrophically: its request threads spend their CPU inside the regex engine", s)
	if n := h.fact("threads"); n != "" {
		d += fmt.Sprintf(" (%s threads of its thread dump)", n)
	}
	if c := h.fact("call"); c != "" {
		d += fmt.Sprintf(", called from %s", c)
	}
	if p := h.fact("pattern"); p != "" {
		d += fmt.Sprintf("; the pattern nests quantifiers (%s), so an input it does not match is tried in exponentially many ways", quote(p, 160))
	} else {
		d += "; a pattern with nested or overlapping quantifiers tries an input it does not match in exponentially many ways"
	}
	if l := h.fact("line"); l != "" {
		d += ": " + quote(ReadableLine(l), 160)
	}
	d += ". Each call holds a CPU for seconds, so the service runs at its CPU limit and every request waits, longer for longer inputs, with no errors"
	if c := h.fact("callers"); c != "" {
		d += fmt.Sprintf("; %s waits on it (its log times its calls to %s)", c, s)
	}
	return d
}

func recommendRegexBacktrack(h *Hypothesis, sc Scope, r *recommender) {
	s := h.Subject
	r.rollback()
	where := orWord(h.fact("call"), "the call the thread dump names")
	r.high("Rewrite the expression in %s without nested quantifiers (make the repeated parts mutually exclusive, use possessive quantifiers or atomic groups), or run it with a linear-time engine (RE2, re2j) or a match timeout", where)
	r.med("Bound the input the expression sees (length limit) and test it against long non-matching inputs in CI")
	r.low("Alert on the CPU throttling and request latency of %s together, and keep a thread dump or CPU profile from its slow periods", s)
}
