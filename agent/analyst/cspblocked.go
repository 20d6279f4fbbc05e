package analyst

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A page whose Content-Security-Policy refuses a script (or frame, style,
// connection) the page needs: the browser blocks it before it runs, and
// whatever it drives (a payment provider's card field, a tag manager, a
// chat widget) never appears. Every server answers 200; the provider is up
// and the mobile apps, which no CSP governs, keep working. The browser
// says so in the console (Chrome: "Refused to load the script 'URL'
// because it violates the following Content Security Policy directive";
// Firefox: "Content-Security-Policy: The page's settings blocked the
// loading of a resource at URL"), and a page that reports violations
// (report-uri, report-to, a RUM agent's securitypolicyviolation events)
// logs the blocked URL and its directive. The cause is the policy of
// whoever serves the page: a security-headers middleware whose new major
// version sends a strict default policy (helmet 5+, a framework's
// secure-headers default), a policy edited without the third party's
// origin, an ingress or CDN rule adding the header.

// KindCSPBlocked is a page's Content-Security-Policy blocking a resource
// the page needs.
const KindCSPBlocked Kind = "csp_blocked"

var (
	// cspRefusedRE is a browser's refusal as its console prints it
	// (Chrome, Edge, Safari: "Refused to load|connect|frame|execute ...
	// violates the following Content Security Policy directive"; Firefox:
	// "Content-Security-Policy: The page's settings blocked the loading of
	// a resource at URL"), with the blocked URL when it names one.
	cspRefusedRE = regexp.MustCompile(`(?i)Refused to (?:load|connect to|frame|execute|apply)[^'"]{0,40}(?:'([^']+)'|"([^"]+)")?[^.]{0,80}?violates the following Content Security Policy directive|Content[- ]Security[- ]Policy:? The page.s settings blocked (?:the loading of a resource|an inline script|an inline style|a JavaScript eval)(?: at (\S+))?(?:\s|$)`)
	// cspReportRE is a violation report: a RUM agent's or a reporting
	// endpoint's securitypolicyviolation event (key=value or JSON), with
	// the blocked URL.
	cspReportRE = regexp.MustCompile(`(?i)(?:csp[_-]violation|securitypolicyviolation|"csp-report").*?\bblocked[_-]?ur[il]["']?\s*[=:]\s*["']?([^\s"',}]+)`)
	// cspDirectiveRE is the directive a refusal or report names.
	cspDirectiveRE = regexp.MustCompile(`(?i)directive: "((?:script|style|connect|frame|img|font|default|child|worker|media)-src(?:-elem|-attr)?(?: [^"]*)?)"|(?:effective|violated)[_-]?directive["']?\s*[=:]\s*["']?((?:script|style|connect|frame|img|font|default|child|worker|media)-src(?:-elem|-attr)?)|[(“"]+((?:script|style|connect|frame|img|font|default|child|worker|media)-src(?:-elem|-attr)?)[”"]`)
	// cspHeaderRE is the policy a response carries (curl -I, a HAR).
	cspHeaderRE = regexp.MustCompile(`(?i)^[<\s"]*content-security-policy["']?\s*[:=]\s*"?(.+)$`)
	// cspChangeRE is a change that sets a page's policy: its middleware,
	// its headers, its directives.
	cspChangeRE = regexp.MustCompile(`(?i)content[- ]security[- ]policy|\bcsp\b|\bhelmet\b|secure[-_ ]?headers|security headers|script-src|default-src`)
)

var cspBlocked = &mechanism{
	kind:           KindCSPBlocked,
	class:          classCause,
	label:          "the page's Content-Security-Policy blocks a resource it needs",
	detect:         detectCSPBlocked,
	fitsChange:     changeSays(cspChangeRE),
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		what := orWord(h.fact("blocked"), "a resource the page loads")
		d := fmt.Sprintf("the Content-Security-Policy (CSP) that %s's pages are served with blocks %s", h.Subject, what)
		if dir := h.fact("directive"); dir != "" {
			d += fmt.Sprintf(" (directive %s)", dir)
		}
		d += ": browsers refuse to load it, so what it drives on the page never appears, while every server answers 200"
		if p := h.fact("policy"); p != "" {
			d += fmt.Sprintf("; the page's header: content-security-policy: %s", truncate(p, 200))
		}
		d += h.quoteClause("; the browser says: ", "line", 220)
		if n := h.fact("reports"); n != "" {
			d += fmt.Sprintf(" (%s violations reported from %s)", n, h.fact("since"))
		}
		d += ". The third party's origin is missing from the policy; the APIs behind the page are not at fault (clients no CSP governs, such as the mobile apps, keep working)"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.high("Add %s's origin to the Content-Security-Policy %s sends (the directive %s and any it falls back from), or roll back the change that set the policy", orWord(h.fact("blocked"), "the blocked resource"), h.Subject, orWord(h.fact("directive"), "that blocks it"))
		r.med("Ship policy changes as Content-Security-Policy-Report-Only first and read the violation reports before enforcing them; pin the policy explicitly rather than relying on a middleware's defaults")
		r.low("Alert on securitypolicyviolation reports from the pages that take payments or sign-ins")
	},
}

// detectCSPBlocked reads browsers' CSP refusals and violation reports in
// the logs and handed-over outputs, with the policy a response carried,
// and blames whoever serves the page: the service a change to its policy
// names, else the log's.
func detectCSPBlocked(ev *Gathered, _ []Finding) []Finding {
	var line, blocked, directive, policy, src string
	var first time.Time
	n := 0
	third := func(u string) bool {
		return strings.HasPrefix(strings.ToLower(u), "http")
	}
	take := func(l string, at time.Time, count int) {
		m := findSubmatch(cspRefusedRE, l)
		if m == nil {
			m = findSubmatch(cspReportRE, l)
		}
		if m == nil {
			return
		}
		u := strings.TrimRight(firstGroup(m), ".,;)")
		n += count
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
		// A third party's URL represents the refusals best: inline
		// scripts are refused alongside it.
		if line == "" || third(u) && !third(blocked) {
			line, blocked = strings.TrimSpace(l), u
			if d := findSubmatch(cspDirectiveRE, l); d != nil {
				directive = strings.TrimSpace(firstGroup(d))
			}
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				if matchLine(cspRefusedRE, l) || matchLine(cspReportRE, l) {
					take(l, earliest(t.FirstSeen, t.FirstIncident), t.Count)
					if src == "" {
						src = set.Subject
					}
					break
				}
			}
		}
	}
	for _, c := range ev.Commands {
		for _, l := range c.Lines {
			take(l, time.Time{}, 1)
			if m := findSubmatch(cspHeaderRE, l); m != nil && policy == "" {
				policy = strings.TrimSpace(m[1])
			}
		}
	}
	if line == "" || !third(blocked) && policy == "" {
		return nil
	}
	// Whoever serves the page: the last change before the refusals that
	// sets its policy.
	subject := ""
	var chAt time.Time
	for _, c := range ev.Changes {
		if c.Service == "" || !matchLine(cspChangeRE, c.Description) || !first.IsZero() && c.Timestamp.After(first.Add(5*time.Minute)) {
			continue
		}
		if c.Timestamp.After(chAt) {
			subject, chAt = c.Service, c.Timestamp
		}
	}
	if subject == "" {
		subject = orWord(src, ev.Scope.Service)
	}
	if first.IsZero() {
		first = untimedOnset(ev, cspChangeRE)
	}
	f := Finding{Kind: KindCSPBlocked, Subject: subject, Namespace: ev.Scope.Namespace, Object: "Content-Security-Policy of " + subject,
		Time: first, Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	if src != "" && !strings.EqualFold(src, subject) {
		f.Related = append(f.Related, src)
	}
	if blocked != "" && third(blocked) {
		f.setFact("blocked", blocked)
	}
	f.setFact("directive", directive)
	f.setFact("policy", policy)
	f.setFact("line", line)
	if n > 1 {
		f.setFact("reports", fmt.Sprint(n))
		f.setFact("since", ts(first))
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("the browser refuses %s under the page's Content-Security-Policy: %s", orWord(f.fact("blocked"), "a resource"), quote(ReadableLine(line), 240)))
	if policy != "" {
		f.Evidence = append(f.Evidence, "the page is served with content-security-policy: "+truncate(policy, 220))
	}
	f.Summary = fmt.Sprintf("%s's Content-Security-Policy blocks %s", subject, orWord(f.fact("blocked"), "a resource the page needs"))
	return slices.Clip([]Finding{f})
}
