package analyst

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A page that never came: the question is not what failed but why nobody
// was told ("alerts were firing but nobody got paged"). The outage is then
// the occasion, and the answer lies on Alertmanager's notification path,
// which the analyst reads in two places:
//
//   - the receiver failing: Alertmanager logs every notification it could
//     not deliver ("Notify for alerts failed" with err="<receiver>/<integration>[i]: …"),
//     and an integration that answers 400 or 401 (a PagerDuty routing key of
//     a service that was removed, a revoked Slack webhook) fails every page
//     of every alert routed there; the route the alerts take (amtool config
//     routes test) says they went to that receiver;
//   - an inhibition: the inhibit rules of Alertmanager's configuration mute
//     the alerts their target matchers match while an alert matching their
//     source matchers fires with the same equal labels; a source alert held
//     open (a maintenance alert whose window was never closed) mutes the
//     alert that should have paged.
//
// Either way the alerts fired and the page was lost between Alertmanager
// and the people on call.

// KindPageMissed is an alert that fired without a page reaching anyone.
const KindPageMissed Kind = "page_missed"

var pageMissed = &mechanism{
	kind:   KindPageMissed,
	class:  classCause,
	label:  "alert fired but its page was not delivered (Alertmanager notification path)",
	detect: detectPageMissed,
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return matchLine(pageChangeRE, changeText(c))
	},
	contentTriggers: true,
	// What keeps an inhibiting alert firing is named by a word of its
	// name (the Job that closes the window a maintenance alert reports).
	related: func(h *Hypothesis, f *Finding) bool {
		return sourceWorkload(h.fact("source_alert"), f.Subject)
	},
	describe: describePageMissed,
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		if h.fact("source_alert") != "" {
			r.high("End the inhibition now: resolve what keeps %s firing (%s) or silence it, so the alerts it mutes notify again; re-check the alerts it holds (amtool alert query --inhibited)", h.fact("source_alert"), orWord(sourceCauseText(h), "its condition"))
			r.med("Narrow the inhibit rule with source %s: scope it with equal labels finer than %s and give the source alert an end (a maximum duration, a for: on its window), so a stuck source cannot mute every alert", h.fact("source_alert"), orWord(h.fact("equal"), "none"))
			r.low("Alert when an inhibiting alert has fired far longer than it should (ALERTS{alertname=%q} for hours), through a route it does not inhibit", h.fact("source_alert"))
			return
		}
		recv := h.fact("receiver")
		if strings.Contains(strings.ToLower(h.fact("integration")), "pagerduty") {
			r.high("Put the routing key of the current PagerDuty service into receiver %s (the Alertmanager config or the Secret it reads) and reload Alertmanager; send a test alert through it", recv)
		} else {
			r.high("Fix receiver %s (%s) so its notifications are accepted again, reload Alertmanager and send a test alert through it", recv, orWord(h.fact("integration"), "its integration"))
		}
		r.med("Alert on alertmanager_notifications_failed_total through another integration (and keep a dead man's switch), so a receiver that fails is seen before the next outage")
		r.low("Update Alertmanager's receivers in the same change that retires or moves an on-call service or integration")
	},
}

var (
	// pageAskRE is a question about a page or notification that did not
	// come.
	pageAskRE = regexp.MustCompile(`(?i)\b(?:nobody|no one|no-one|none of us)\b[^.?!]{0,30}\b(?:paged|notified|alerted|woken)\b|\b(?:never|not|n't|without)\s+(?:get\s+|got\s+|been\s+|be\s+|being\s+)?(?:paged|notified)\b|\bno (?:page|pages|notifications?|incident) (?:came|arrived|was|were|in|on|from)\b|\bmissed (?:page|pages|notifications?)\b|\b(?:pagerduty|opsgenie|the pager)\b[^.?!]{0,20}\bhas nothing\b|\bshould have paged\b`)
	// notifyFailedRE is Alertmanager failing to deliver a notification
	// (logfmt of 0.2x, slog of 0.28+, the older "Error on notify").
	notifyFailedRE = regexp.MustCompile(`(?i)msg="?(?:Notify for alerts failed|Error on notify|Notify attempt failed|Notify retry failed)`)
	// notifyErrRE is the err of such a line: "<receiver>/<integration>[i]: <message>".
	notifyErrRE = regexp.MustCompile(`err="([\w.-]+)/([\w-]+)\[\d+\]: ((?:[^"\\]|\\.)*)"`)
	// notifyErrFieldRE is the whole err field of such a line.
	notifyErrFieldRE = regexp.MustCompile(`\berr="((?:[^"\\]|\\.)*)"`)
	// notifyFieldRE is a receiver= or integration= field of such a line.
	notifyFieldRE = regexp.MustCompile(`\b(receiver|integration)="?([\w.-]+)(?:\[\d+\])?"?`)
	// notifyRejectedRE is the integration refusing the notification itself
	// (not a network failure): its key, token or URL is not accepted.
	notifyRejectedRE = regexp.MustCompile(`(?i)status code (4\d\d)|invalid (?:routing|integration|service) key|invalid_auth|invalid_token|channel_not_found|no_service|unauthori[sz]ed|forbidden|not found`)
	// pageChangeRE is a change to the on-call or notification side.
	pageChangeRE = regexp.MustCompile(`(?i)pagerduty|opsgenie|on-?call|routing key|integration key|alertmanager|receiver|escalation|slack webhook|inhibit`)
	// askedAlertRE is an alert's name as questions write it (CamelCase).
	askedAlertRE = regexp.MustCompile(`\b[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+\b`)
	// matcherRE is one matcher of an Alertmanager config.
	matcherRE = regexp.MustCompile(`^\s*\{?\s*([A-Za-z_][\w]*)\s*(=~|!~|!=|=)\s*"?(.*?)"?\s*\}?\s*$`)
)

func detectPageMissed(ev *Gathered, found []Finding) []Finding {
	sc := ev.Scope
	if !matchLine(pageAskRE, sc.Message+" "+sc.Hint) {
		return nil
	}
	if f, ok := notifyFailing(ev); ok {
		return []Finding{f}
	}
	if f, ok := inhibitedPage(ev, found); ok {
		return []Finding{f}
	}
	return nil
}

// notifyFailure is what Alertmanager logged of the notifications of one
// receiver it could not deliver.
type notifyFailure struct {
	receiver, integration, err, line string
	first, last                      time.Time
	count                            int
	namespace                        string
}

// notifyFailing reads Alertmanager's failed notifications: the receiver
// that fails most, its integration and its error.
func notifyFailing(ev *Gathered) (Finding, bool) {
	byRecv := map[string]*notifyFailure{}
	var order []string
	add := func(l string, first, last time.Time, n int, ns string) {
		if !matchLine(notifyFailedRE, l) {
			return
		}
		var recv, integ, msg string
		if m := findSubmatch(notifyErrRE, l); m != nil {
			recv, integ, msg = m[1], m[2], m[3]
		}
		for _, m := range findAllSubmatch(notifyFieldRE, l, -1) {
			if m[1] == "receiver" && recv == "" {
				recv = m[2]
			}
			if m[1] == "integration" && integ == "" {
				integ = m[2]
			}
		}
		if recv == "" {
			return
		}
		if m := findSubmatch(notifyErrFieldRE, l); msg == "" && m != nil {
			msg = m[1]
		}
		msg = strings.NewReplacer(`\\"`, `"`, `\"`, `"`).Replace(msg)
		nf := byRecv[recv]
		if nf == nil {
			nf = &notifyFailure{receiver: recv, integration: integ, namespace: ns}
			byRecv[recv] = nf
			order = append(order, recv)
		}
		nf.count += n
		nf.line, nf.err = l, orWord(msg, nf.err)
		if !first.IsZero() && (nf.first.IsZero() || first.Before(nf.first)) {
			nf.first = first
		}
		if last.After(nf.last) {
			nf.last = last
		}
	}
	for i := range ev.Logs {
		set := &ev.Logs[i]
		for _, t := range set.Templates {
			for _, l := range t.Lines() {
				add(l, t.FirstSeen, t.LastSeen, 0, set.Namespace)
			}
			if nf := findNotifyRecv(byRecv, t.Example); nf != nil {
				nf.count += t.Count
			}
		}
	}
	for _, o := range ev.Commands {
		for _, l := range o.Lines {
			at, _ := evidence.LineTime([]byte(l), ev.Window.End)
			add(l, at, at, 1, o.Namespace)
		}
	}
	if len(order) == 0 {
		return Finding{}, false
	}
	sort.SliceStable(order, func(i, j int) bool { return byRecv[order[i]].count > byRecv[order[j]].count })
	nf := byRecv[order[0]]
	f := Finding{Kind: KindPageMissed, Subject: "alertmanager", Namespace: nf.namespace, Source: SrcLogs, Object: "receiver " + nf.receiver,
		Time: nf.first, Severity: SevCritical, Weight: 0.9,
		Summary: fmt.Sprintf("Alertmanager fails to deliver the notifications of receiver %s (%s)", nf.receiver, orWord(nf.integration, "its integration"))}
	if ev.Scope.Service != "" {
		f.Related = append(f.Related, ev.Scope.Service)
	}
	f.setFact("receiver", nf.receiver)
	f.setFact("integration", nf.integration)
	f.setFact("notify_error", nf.err)
	f.setFact("notify_line", nf.line)
	if nf.count > 0 {
		f.setFact("failures", fmt.Sprint(nf.count))
	}
	if !nf.first.IsZero() {
		f.setFact("since", ts(nf.first))
	}
	if !nf.last.IsZero() {
		f.setFact("last", ts(nf.last))
	}
	if matchLine(notifyRejectedRE, nf.err) {
		f.setFact("rejected", "yes")
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("Alertmanager could not notify receiver %s: %s", nf.receiver, quote(ReadableLine(nf.line), 260)))
	if nf.count > 1 && !nf.first.IsZero() {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d failed notifications of %s from %s to %s", nf.count, nf.receiver, ts(nf.first), ts(nf.last)))
	}
	// The route the alerts asked about take (amtool config routes test
	// prints the receiver).
	for _, o := range ev.Commands {
		if !strings.Contains(o.Run, "routes test") {
			continue
		}
		for _, l := range o.Lines {
			if strings.TrimSpace(l) == nf.receiver {
				f.setFact("routed", strings.TrimSpace(o.Run[strings.Index(o.Run, "routes test")+len("routes test"):]))
				f.Evidence = append(f.Evidence, fmt.Sprintf("alerts with %s route to %s (amtool config routes test)", f.fact("routed"), nf.receiver))
			}
		}
	}
	f.setFact("alerts", strings.Join(askedAlerts(ev.Scope.Message+" "+ev.Scope.Hint), ", "))
	// A change that moved the on-call service or its integration.
	for _, c := range append(append([]evidence.Change{}, ev.Earlier...), ev.Changes...) {
		text := c.Service + " " + c.Description
		if c.Timestamp.After(orTime(nf.first, ev.Window.End)) || !matchLine(pageChangeRE, text) {
			continue
		}
		if nf.integration != "" && !strings.Contains(strings.ToLower(text), strings.ToLower(strings.TrimRight(nf.integration, "0123456789"))) && !strings.Contains(text, nf.receiver) {
			continue
		}
		f.setFact("page_change", fmt.Sprintf("%s (%s, %s)", clip(c.Description, 200), orWord(c.Revision, c.Kind), ts(c.Timestamp)))
	}
	if c := f.fact("page_change"); c != "" {
		f.Evidence = append(f.Evidence, "the change before the failures: "+c)
	}
	return f, true
}

func findNotifyRecv(byRecv map[string]*notifyFailure, l string) *notifyFailure {
	if !matchLine(notifyFailedRE, l) {
		return nil
	}
	for r, nf := range byRecv {
		if strings.Contains(l, r+"/") || strings.Contains(l, "receiver="+r) || strings.Contains(l, `receiver="`+r) {
			return nf
		}
	}
	return nil
}

// askedAlerts are the alert names a question writes.
func askedAlerts(text string) []string {
	var out []string
	for _, n := range findAllString(askedAlertRE, text, -1) {
		out = appendNew(out, n)
	}
	return out
}

// amMatcher is one label matcher of an Alertmanager config.
type amMatcher struct {
	name, op, value string
}

func (m amMatcher) String() string { return fmt.Sprintf("%s%s%q", m.name, m.op, m.value) }

func (m amMatcher) matches(labels map[string]string) bool {
	v := labels[m.name]
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	}
	re, err := regexp.Compile("^(?:" + m.value + ")$")
	if err != nil {
		return false
	}
	return matchLine(re, v) == (m.op == "=~")
}

// inhibitRule is one of Alertmanager's inhibit_rules.
type inhibitRule struct {
	source, target []amMatcher
	equal          []string
}

// inhibitRules reads the inhibit rules of an Alertmanager configuration
// printed (amtool config show, the alertmanager.yaml of a Secret or
// ConfigMap), with matchers in either form (source_matchers,
// source_match/source_match_re).
func inhibitRules(cmds []evidence.CommandOutput) []inhibitRule {
	var out []inhibitRule
	for _, o := range cmds {
		start := -1
		for i, l := range o.Lines {
			if strings.HasPrefix(strings.TrimSpace(l), "inhibit_rules:") {
				start = i
				break
			}
		}
		if start < 0 {
			continue
		}
		indent := len(o.Lines[start]) - len(strings.TrimLeft(o.Lines[start], " "))
		var block []string
		for _, l := range o.Lines[start:] {
			if len(block) > 0 && strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) <= indent && !strings.HasPrefix(strings.TrimSpace(l), "-") {
				break
			}
			block = append(block, strings.TrimPrefix(l, strings.Repeat(" ", indent)))
		}
		var cfg struct {
			InhibitRules []struct {
				SourceMatchers []string          `json:"source_matchers"`
				TargetMatchers []string          `json:"target_matchers"`
				SourceMatch    map[string]string `json:"source_match"`
				SourceMatchRE  map[string]string `json:"source_match_re"`
				TargetMatch    map[string]string `json:"target_match"`
				TargetMatchRE  map[string]string `json:"target_match_re"`
				Equal          []string          `json:"equal"`
			} `json:"inhibit_rules"`
		}
		if yaml.Unmarshal([]byte(strings.Join(block, "\n")), &cfg) != nil {
			continue
		}
		for _, r := range cfg.InhibitRules {
			ir := inhibitRule{equal: r.Equal}
			ir.source = amMatchers(r.SourceMatchers, r.SourceMatch, r.SourceMatchRE)
			ir.target = amMatchers(r.TargetMatchers, r.TargetMatch, r.TargetMatchRE)
			if len(ir.source) > 0 && len(ir.target) > 0 {
				out = append(out, ir)
			}
		}
	}
	return out
}

func amMatchers(list []string, eq, re map[string]string) []amMatcher {
	var out []amMatcher
	for _, s := range list {
		for _, part := range strings.Split(strings.Trim(s, "{}"), ",") {
			if m := findSubmatch(matcherRE, part); m != nil {
				out = append(out, amMatcher{m[1], m[2], m[3]})
			}
		}
	}
	for k, v := range eq {
		out = append(out, amMatcher{k, "=", v})
	}
	for k, v := range re {
		out = append(out, amMatcher{k, "=~", v})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// firedAlert is one alert as the ALERTS series show it firing.
type firedAlert struct {
	name        string
	labels      map[string]string
	first, last time.Time
}

// firedAlerts reads Prometheus's ALERTS series: each alert with its labels
// and when it was firing.
func firedAlerts(sets []MetricSet) []firedAlert {
	var out []firedAlert
	for name, s := range metricSeries(sets) {
		if name != "ALERTS" || s.Labels["alertstate"] != "firing" || len(s.Points) == 0 {
			continue
		}
		var first, last time.Time
		for _, p := range s.Points {
			if p.V <= 0 {
				continue
			}
			if first.IsZero() {
				first = p.T
			}
			last = p.T
		}
		if first.IsZero() {
			continue
		}
		out = append(out, firedAlert{name: s.Labels["alertname"], labels: s.Labels, first: first, last: last})
	}
	return out
}

func matchAll(ms []amMatcher, labels map[string]string) bool {
	for _, m := range ms {
		if !m.matches(labels) {
			return false
		}
	}
	return true
}

// inhibitedPage reads an alert the question names that fired while an
// inhibit rule's source alert fired with the same equal labels: the rule
// muted it.
func inhibitedPage(ev *Gathered, found []Finding) (Finding, bool) {
	rules := inhibitRules(ev.Commands)
	asked := askedAlerts(ev.Scope.Message + " " + ev.Scope.Hint)
	fired := firedAlerts(ev.Metrics)
	for _, name := range asked {
		for _, t := range fired {
			if t.name != name {
				continue
			}
			for _, r := range rules {
				if !matchAll(r.target, t.labels) {
					continue
				}
				for _, s := range fired {
					if s.name == t.name || !matchAll(r.source, s.labels) || s.first.After(t.first) || s.last.Before(t.first) {
						continue
					}
					same := true
					for _, e := range r.equal {
						same = same && s.labels[e] == t.labels[e]
					}
					if !same {
						continue
					}
					if at, ok := listedStart(ev.Commands, s.name); ok && at.Before(s.first) {
						s.first = at
					}
					return inhibitedFinding(ev, found, t, s, r), true
				}
			}
		}
	}
	return Finding{}, false
}

// amtoolStartRE is the start time amtool alert query prints for an alert.
var amtoolStartRE = regexp.MustCompile(`\b(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC\b`)

// listedStart is when an alert started as amtool alert query lists it.
func listedStart(cmds []evidence.CommandOutput, name string) (time.Time, bool) {
	for _, o := range cmds {
		if !strings.Contains(o.Run, "alert query") && !strings.Contains(o.Run, "alert -o") {
			continue
		}
		for _, l := range o.Lines {
			fs := strings.Fields(l)
			if len(fs) == 0 || fs[0] != name {
				continue
			}
			if m := findSubmatch(amtoolStartRE, l); m != nil {
				if at, err := time.Parse("2006-01-02 15:04:05", m[1]); err == nil {
					return at.UTC(), true
				}
			}
		}
	}
	return time.Time{}, false
}

func inhibitedFinding(ev *Gathered, found []Finding, t, s firedAlert, r inhibitRule) Finding {
	subject := orWord(t.labels["service"], orWord(t.labels["job"], orWord(ev.Scope.Service, t.labels["namespace"])))
	ms := func(list []amMatcher) string {
		var out []string
		for _, m := range list {
			out = append(out, m.String())
		}
		return strings.Join(out, ", ")
	}
	f := Finding{Kind: KindPageMissed, Subject: subject, Namespace: t.labels["namespace"], Source: SrcMetrics, Object: "alert " + t.name,
		Time: t.first, Severity: SevCritical, Weight: 0.9,
		Summary: fmt.Sprintf("%s fired from %s but Alertmanager inhibited it: %s was firing", t.name, hm(t.first), s.name)}
	f.setFact("alert", t.name)
	f.setFact("fired", fmt.Sprintf("%s to %s", hm(t.first), hm(t.last)))
	f.setFact("source_alert", s.name)
	f.setFact("source_since", ts(s.first))
	f.setFact("source_lead", humanDuration(t.first.Sub(s.first)))
	f.setFact("rule_source", ms(r.source))
	f.setFact("rule_target", ms(r.target))
	f.setFact("equal", strings.Join(r.equal, ", "))
	f.Evidence = append(f.Evidence,
		fmt.Sprintf("%s fired from %s to %s (ALERTS)", t.name, ts(t.first), ts(t.last)),
		fmt.Sprintf("%s has been firing since %s, through %s's whole firing", s.name, ts(s.first), t.name),
		fmt.Sprintf("inhibit rule: source_matchers [%s], target_matchers [%s], equal [%s]", ms(r.source), ms(r.target), strings.Join(r.equal, ", ")))
	// The alerts Alertmanager lists as suppressed (amtool alert query
	// --inhibited) show the rule at work.
	var held []string
	for _, o := range ev.Commands {
		if !strings.Contains(o.Run, "--inhibited") {
			continue
		}
		for _, l := range o.Lines {
			fs := strings.Fields(l)
			if len(fs) > 1 && strings.EqualFold(fs[len(fs)-1], "suppressed") {
				held = appendNew(held, fs[0])
			}
		}
	}
	if len(held) > 0 {
		f.setFact("held", strings.Join(held, ", "))
		f.Evidence = append(f.Evidence, fmt.Sprintf("Alertmanager still lists as suppressed: %s", strings.Join(held, ", ")))
	}
	// Why the source alert stays: a failure of what should end it — a
	// workload named by a word of the source alert's name (a Job that
	// closes the window its alert reports).
	ptrs := make([]*Finding, len(found))
	for i := range found {
		ptrs[i] = &found[i]
	}
	if g := sourceCause(s.name, subject, ptrs); g != nil {
		f.setFact("source_cause", fmt.Sprintf("%s: %s", g.Subject, g.Summary))
		f.Related = appendNew(f.Related, g.Subject)
	}
	return f
}

// sourceWorkload reports whether a subject is named by a word of an
// alert's name (five letters or more).
func sourceWorkload(alert, subject string) bool {
	if alert == "" || subject == "" {
		return false
	}
	lower := strings.ToLower(subject)
	for _, w := range camelWords(alert) {
		if len(w) >= 5 && strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// sourceCause is the strongest failing cause among fs of a workload the
// source alert's name names.
func sourceCause(alert, subject string, fs []*Finding) *Finding {
	var best *Finding
	for _, g := range fs {
		if c := infoOf(g.Kind).class; c != classCause && c != classDependency || g.Subject == subject || !sourceWorkload(alert, g.Subject) {
			continue
		}
		if best == nil || infoOf(g.Kind).prior*g.Weight > infoOf(best.Kind).prior*best.Weight {
			best = g
		}
	}
	return best
}

// sourceCauseText says what keeps the source alert firing: the strongest
// cause the hypothesis gathered, else the one its detector saw.
func sourceCauseText(h *Hypothesis) string {
	if g := sourceCause(h.fact("source_alert"), h.Subject, h.Support); g != nil {
		return fmt.Sprintf("%s: %s", g.Subject, g.Summary)
	}
	return h.fact("source_cause")
}

// camelWords splits a CamelCase name into its lower-case words.
func camelWords(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r >= 'A' && r <= 'Z' && cur != "" {
			out = append(out, strings.ToLower(cur))
			cur = ""
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, strings.ToLower(cur))
	}
	return out
}

func describePageMissed(h *Hypothesis, sc Scope) string {
	if a := h.fact("source_alert"); a != "" {
		d := fmt.Sprintf("%s of %s fired (%s) but never paged: Alertmanager inhibited it. Its inhibit rule mutes every alert matching %s while an alert matching %s fires with the same %s, and %s has been firing since %s (%s before %s fired), so it held %s (and every other alert the rule matches) silent",
			h.fact("alert"), h.Subject, h.fact("fired"), h.fact("rule_target"), h.fact("rule_source"), orWord(h.fact("equal"), "labels"), a, h.fact("source_since"), h.fact("source_lead"), h.fact("alert"), h.fact("alert"))
		if held := h.fact("held"); held != "" {
			d += fmt.Sprintf(" (still suppressed now: %s)", held)
		}
		if c := sourceCauseText(h); c != "" {
			d += fmt.Sprintf(". %s still fires because what should have ended it failed — %s", a, c)
		}
		return d
	}
	d := fmt.Sprintf("The alerts fired but %s could not deliver the page: every notification of receiver %s (%s) fails", h.Subject, h.fact("receiver"), orWord(h.fact("integration"), "its integration"))
	if s := h.fact("since"); s != "" {
		d += " since " + s
	}
	if n := h.fact("failures"); n != "" {
		d += fmt.Sprintf(" (%s failed notifications", n)
		if l := h.fact("last"); l != "" {
			d += ", the last at " + l
		}
		d += ")"
	}
	d += fmt.Sprintf(" with %s", quote(clip(h.fact("notify_error"), 240), 260))
	if h.fact("rejected") != "" {
		d += fmt.Sprintf("; the %s integration rejects the notification itself — the receiver's key or URL is not accepted any more", orWord(h.fact("integration"), "receiving"))
		if strings.Contains(strings.ToLower(h.fact("notify_error")), "routing key") {
			d += " (PagerDuty refuses the receiver's routing key as invalid: the service or integration it belonged to is gone)"
		}
	}
	if r := h.fact("routed"); r != "" {
		d += fmt.Sprintf(". Alerts with %s route to %s", r, h.fact("receiver"))
	}
	if a := h.fact("alerts"); a != "" {
		d += fmt.Sprintf(", so %s reached nobody", a)
	} else {
		d += ", so the alerts routed there reached nobody"
	}
	if c := h.fact("page_change"); c != "" {
		d += fmt.Sprintf(". The receiver was left behind by a change on the on-call side: %s", c)
	}
	return d
}
