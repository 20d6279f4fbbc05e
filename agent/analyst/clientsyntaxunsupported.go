package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A release whose JavaScript uses syntax some of its users' browsers
// cannot parse: a regular expression with a lookbehind ((?<=...),
// (?<!...)) or a named group in Safari before 16.4, optional chaining or
// nullish coalescing in older engines, a regex flag an engine does not
// know. The engine throws a SyntaxError when it parses the chunk, so
// nothing of that chunk runs: a button does nothing, a step never
// renders, on those browsers only, while the servers answer every request
// they get. Client error reporting (a RUM agent, Sentry, a browser error
// intake) shows the SyntaxError, all of it from one engine family; the
// API the step calls is not at fault (it is never called). The cause is
// the release (a dependency or code shipping the syntax untranspiled, the
// browser targets not matching the supported browsers).

// KindClientSyntaxUnsupported is JavaScript syntax some users' browsers
// cannot parse.
const KindClientSyntaxUnsupported Kind = "client_syntax_unsupported"

var (
	// clientSyntaxRE is an engine refusing syntax it does not support,
	// as it words it: Safari (JavaScriptCore) on a lookbehind or named
	// group, Firefox before 78 on a lookbehind, V8 on an invalid group,
	// older engines on ?. and ??, unknown regex flags, private fields.
	clientSyntaxRE = regexp.MustCompile(`(?i)Invalid regular expression: invalid group specifier name|SyntaxError: invalid regexp group|Invalid regular expression: /.{0,80}/: Invalid group|Invalid regular expression flags|invalid regular expression flag|Unexpected token '\?\??'|Unexpected token '\.'|Unexpected private (?:name|field)|Unexpected character '#'|private fields are not currently supported`)
	// clientBrowserRE is the browser a client error names: a RUM field,
	// Sentry's browser context, a user agent's Safari or Chrome version.
	clientBrowserRE = regexp.MustCompile(`(?i)\bbrowser["']?\s*[=:]\s*"([^"]+)"|"browser"\s*:\s*\{\s*"name"\s*:\s*"([^"]+)"\s*,\s*"version"\s*:\s*"([^"]+)"|Version/([\d.]+)(?: Mobile/\S+)? (Safari)/`)
	// clientReleaseRE is the app a client error names; clientReleaseVerRE
	// the release (app@version) Sentry and RUM agents report.
	clientReleaseRE    = regexp.MustCompile(`(?i)\b(?:app|application|service)["']?\s*[=:]\s*["']?([a-z][a-z0-9_-]*)`)
	clientReleaseVerRE = regexp.MustCompile(`(?i)\brelease["']?\s*[=:]\s*["']?([a-z][a-z0-9_.-]*)@v?(\d[\w.+-]*)`)
	// clientLookbehindRE is a lookbehind or named group in a shipped
	// bundle (a grep of the chunk).
	clientLookbehindRE = regexp.MustCompile(`\(\?<[=!]|\(\?<[A-Za-z]\w*>`)
	// clientSyntaxChangeRE is a change of what a release ships.
	clientSyntaxChangeRE = regexp.MustCompile(`(?i)regex|valid|depend|bump|browserslist|babel|transpil|polyfill`)
)

var clientSyntaxUnsupported = &mechanism{
	kind:   KindClientSyntaxUnsupported,
	class:  classCause,
	label:  "JavaScript syntax some users' browsers cannot parse",
	detect: detectClientSyntaxUnsupported,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return strings.EqualFold(c.Subject, h.Subject) && (c.Kind == KindDeploy || matchLine(clientSyntaxChangeRE, changeText(c)))
	},
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("%s", h.Subject)
		if v := h.fact("release"); v != "" {
			d += " " + v
		}
		d += " ships JavaScript that some users' browsers cannot parse"
		if h.fact("lookbehind") != "" {
			d += ": a regular expression with a lookbehind or named group ((?<=, (?<!), which Safari before 16.4 rejects"
		}
		d += h.quoteClause(" — the browser throws ", "message", 160)
		if b := h.fact("browsers"); b != "" {
			d += fmt.Sprintf(", only on %s", b)
		}
		if n := h.fact("count"); n != "" {
			d += fmt.Sprintf(" (%s errors from %s)", n, h.fact("since"))
		}
		if s := h.fact("script"); s != "" {
			d += "; the chunk " + s + " never runs on them"
		} else {
			d += "; the chunk never runs on them"
		}
		if g := h.fact("bundle_line"); g != "" {
			d += fmt.Sprintf("; the shipped bundle holds %s", quote(g, 160))
		}
		d += ". The servers are not at fault: those browsers never get as far as calling them"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Transpile or rewrite the syntax the failing browsers reject in %s (a lookbehind as a capture group, ?. for older targets), or roll back the release that shipped it", h.Subject)
		r.med("Make the build's browser targets (browserslist) match the browsers you support and transpile dependencies too; lint the bundle for syntax newer than the targets (es-check)")
		r.low("Alert on SyntaxError in client error reporting grouped by browser, which the servers' metrics never see")
	},
}

// detectClientSyntaxUnsupported reads client error reports of syntax an
// engine refused, the browsers that report them and the release they
// name.
func detectClientSyntaxUnsupported(ev *Gathered, _ []Finding) []Finding {
	var msg, line, app, ver, src string
	var first time.Time
	var browsers []string
	n := 0
	for m := range allMatches(ev, clientSyntaxRE) {
		l := m.line
		n += m.t.Count
		first = earliest(first, earliest(m.t.FirstSeen, m.t.FirstIncident))
		if line == "" {
			line, msg, src = strings.TrimSpace(l), findString(clientSyntaxRE, l), m.set.Subject
			if m := findSubmatch(clientReleaseRE, l); m != nil {
				app = m[1]
			}
			if m := findSubmatch(clientReleaseVerRE, l); m != nil {
				app, ver = m[1], m[2]
			}
		}
		for _, x := range m.t.Lines() {
			if !matchLine(clientSyntaxRE, x) {
				continue
			}
			if b := clientBrowser(x); b != "" && !slices.Contains(browsers, b) {
				browsers = append(browsers, b)
			}
		}
	}
	if n < 3 {
		return nil
	}
	var bundle string
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			if bundle == "" && matchLine(clientLookbehindRE, l) && len(l) < 400 {
				bundle = strings.TrimSpace(l)
			}
		}
	}
	subject := orWord(app, src)
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindClientSyntaxUnsupported, Subject: subject, Namespace: ev.Scope.Namespace, Object: "client errors of " + subject,
		Time: first, Severity: SevCritical, Weight: 0.88, Source: SrcLogs}
	if src != "" && !strings.EqualFold(src, subject) {
		f.Related = append(f.Related, src)
	}
	f.setFact("message", msg)
	f.setFact("line", line)
	f.setFact("count", fmt.Sprint(n))
	f.setFact("since", ts(first))
	if ver != "" {
		f.setFact("release", ver)
	}
	slices.Sort(browsers)
	f.setFact("browsers", strings.Join(browsers, ", "))
	if strings.Contains(strings.ToLower(msg), "group") {
		f.setFact("lookbehind", "true")
	}
	if m := corsURLRE.FindString(line); m != "" {
		f.setFact("script", strings.TrimRight(m, `"',`))
	}
	f.setFact("bundle_line", bundle)
	e := fmt.Sprintf("client errors: %d SyntaxErrors from %s", n, ts(first))
	if len(browsers) > 0 {
		e += " on " + strings.Join(browsers, ", ")
	}
	f.Evidence = append(f.Evidence, e+": "+quote(ReadableLine(line), 240))
	if bundle != "" {
		f.Evidence = append(f.Evidence, "the shipped bundle: "+quote(bundle, 200))
	}
	f.Summary = fmt.Sprintf("%s: browsers cannot parse its JavaScript (%s)", subject, msg)
	return []Finding{f}
}

// clientBrowser is the browser and version a client error line names.
func clientBrowser(l string) string {
	m := findSubmatch(clientBrowserRE, l)
	switch {
	case m == nil:
		return ""
	case m[1] != "":
		return m[1]
	case m[2] != "":
		return m[2] + " " + m[3]
	}
	return m[5] + " " + m[4]
}
