package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// KindWAFBlocked: a web application firewall in front of the service
// blocks legitimate requests. The WAF answers 403 itself (an AWS WAF web
// ACL on the load balancer or CloudFront, Cloudflare's managed rules, a
// ModSecurity/Coraza rule set on the ingress, a Cloud Armor policy); the
// blocked requests never reach the service, whose own logs and errors stay
// clean. The usual trigger is a rule set switched from count (log only)
// to block, a managed rule group added or upgraded, or a paranoia level
// raised, not the service's release that went out beside it. The
// firewall's own log names the rule that terminated the request.
const KindWAFBlocked Kind = "waf_blocked"

var wafBlocked = &mechanism{
	kind:   KindWAFBlocked,
	class:  classCause,
	label:  "web application firewall blocks requests (403 from the WAF)",
	detect: detectWAFBlocked,
	// The change to the firewall's rules: a rule group added, switched
	// from count to block, upgraded, a paranoia level raised.
	// When the blocks come from one source address, the change that gave
	// its caller a new egress address (a NAT gateway or elastic IP
	// replaced) is one too.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		t := changeText(c)
		return matchLine(wafChangeRE, t) || len(h.Primary) > 0 && h.fact("client") != "" && matchLine(egressAddressChangeRE, t)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		fw := "the web application firewall"
		if acl := h.fact("acl"); acl != "" {
			fw = "the WAF " + acl
		}
		d := fmt.Sprintf("%s in front of %s blocks requests with 403 before they reach it", fw, h.Subject)
		d += ": the terminating rule is " + orWord(h.fact("rule"), "a rule of its rule set")
		d += h.wrapped(" (", "more_rules", ")")
		if cond := h.fact("match"); cond != "" {
			d += ", matching " + cond
		}
		d += h.wrapped(", on requests such as ", "request", "")
		d += h.wrapped("; ", "blocked", "")
		if c := h.fact("client_share"); c != "" {
			d += ". " + strings.ToUpper(c[:1]) + c[1:] + ": one caller that the rules now stop (its address outside an allow list, or a new egress address), not users at large"
		}
		d += ". " + h.Subject + " itself does not answer these 403s: the requests never get to it, so its own logs and a rollback of its release cannot show or fix them"
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		rule := orWord(h.fact("rule"), "the terminating rule")
		r.high("Set %s back to count (log only) or add a scope-down / exclusion for the paths and fields that carry legitimate content (rich text, embeds, large bodies), instead of rolling back %s", rule, h.Subject)
		r.med("Before switching a managed rule set from count to block, review its counted matches in the WAF logs for legitimate traffic over the evaluation period")
		r.low("Alert on the WAF's blocked requests per rule apart from the service's own error rate, and let the WAF's 403 carry a recognisable body or header")
	},
}

var (
	// A change to a firewall's rules.
	wafChangeRE = regexp.MustCompile(`(?i)\bwaf\b|\bweb[ _-]?acl|wafv2|managed[ _-]?rules?|rule[ _-]?(?:set|group)s?\b|ruleset|override_action|modsecurity|coraza|\bowasp\b|\bcrs\b|paranoia|security[ _-]?polic|cloud[ _-]?armor|firewall[ _-]?rule`)
	// A change of the address a caller's requests leave from.
	egressAddressChangeRE = regexp.MustCompile(`(?i)\bnat[ _-]?(?:gateway|gw|instance)|\begress (?:ip|address)|elastic[ _-]?ip|\beip\b|public[ _-]?ip|source[ _-]?(?:ip|address)`)
	// ModSecurity / Coraza's audit line for a denied request.
	modsecDeniedRE = regexp.MustCompile(`(?i)(?:ModSecurity|Coraza)[^\n]*?Access denied with code (\d{3})`)
	modsecIDRE     = regexp.MustCompile(`\[id "(\d+)"\]`)
	modsecMsgRE    = regexp.MustCompile(`\[msg "([^"]+)"\]`)
	modsecURIRE    = regexp.MustCompile(`\[uri "([^"]+)"\]`)
	modsecClientRE = regexp.MustCompile(`\[client ([0-9a-fA-F.:]+)\]`)
	// A web ACL's name in its ARN.
	webACLNameRE = regexp.MustCompile(`webacl/([^/]+)/`)
)

// wafBlock is one blocked request as the firewall logged it.
type wafBlock struct {
	acl    string // the web ACL or policy
	rule   string // the rule that terminated the request
	group  string // its rule group or rule set
	match  string // what matched (XSS in BODY...)
	req    string // the request: method and path
	client string // the client's address
}

// String tells the blocked request in a few words.
func (b wafBlock) String() string {
	s := orWord(b.req, "a request") + " blocked by " + b.ruleName()
	if b.acl != "" {
		s += " in " + b.acl
	}
	if b.match != "" {
		s += ", matching " + b.match
	}
	return s
}

// ruleName is the rule with its group.
func (b wafBlock) ruleName() string {
	switch {
	case b.group != "" && b.rule != "" && b.group != b.rule:
		return b.rule + " of " + b.group
	case b.rule != "":
		return b.rule
	}
	return b.group
}

// parseWAFBlock reads a blocked request from a firewall's log line: an AWS
// WAF record (action BLOCK, terminatingRuleId), a Cloudflare firewall event
// or HTTP request record whose security action is block, a Cloud Armor
// entry whose policy outcome is DENY, or a ModSecurity/Coraza "Access
// denied" line. Rate-based rules are rate limits, not this cause.
func parseWAFBlock(line string) (wafBlock, bool) {
	if m := findSubmatch(modsecDeniedRE, line); m != nil {
		b := wafBlock{group: "ModSecurity rule set"}
		if id := findSubmatch(modsecIDRE, line); id != nil {
			b.rule = "rule " + id[1]
		}
		if msg := findSubmatch(modsecMsgRE, line); msg != nil {
			b.match = msg[1]
		}
		if u := findSubmatch(modsecURIRE, line); u != nil {
			b.req = u[1]
		}
		if c := findSubmatch(modsecClientRE, line); c != nil {
			b.client = c[1]
		}
		return b, b.rule != ""
	}
	i := strings.IndexByte(line, '{')
	if i < 0 {
		return wafBlock{}, false
	}
	var v map[string]any
	if json.Unmarshal([]byte(line[i:]), &v) != nil {
		return wafBlock{}, false
	}
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	// AWS WAF.
	if _, ok := v["terminatingRuleId"]; ok {
		if !strings.EqualFold(str(v, "action"), "BLOCK") || strings.EqualFold(str(v, "terminatingRuleType"), "RATE_BASED") {
			return wafBlock{}, false
		}
		b := wafBlock{rule: str(v, "terminatingRuleId")}
		if m := findSubmatch(webACLNameRE, str(v, "webaclId")); m != nil {
			b.acl = "web ACL " + m[1]
		}
		if gs, ok := v["ruleGroupList"].([]any); ok {
			for _, g := range gs {
				gm, _ := g.(map[string]any)
				tr, _ := gm["terminatingRule"].(map[string]any)
				if id := str(tr, "ruleId"); id != "" {
					b.group = strings.TrimPrefix(str(gm, "ruleGroupId"), "AWS#")
					b.rule = id
					break
				}
			}
		}
		if b.group == "" && b.rule != "Default_Action" {
			b.group = b.rule
		}
		if b.rule == "Default_Action" {
			b.rule = "the web ACL's default action (block)"
		}
		if ds, ok := v["terminatingRuleMatchDetails"].([]any); ok && len(ds) > 0 {
			dm, _ := ds[0].(map[string]any)
			if c := str(dm, "conditionType"); c != "" {
				b.match = c
				if loc := str(dm, "location"); loc != "" {
					b.match += " in the request " + strings.ToLower(loc)
				}
				if md, ok := dm["matchedData"].([]any); ok && len(md) > 0 {
					var parts []string
					for _, x := range md {
						if s, ok := x.(string); ok {
							parts = append(parts, s)
						}
					}
					b.match += " (" + strings.Join(parts, " ") + ")"
				}
			}
		}
		if hr, ok := v["httpRequest"].(map[string]any); ok {
			b.req = strings.TrimSpace(str(hr, "httpMethod") + " " + str(hr, "uri"))
			b.client = str(hr, "clientIp")
		}
		return b, true
	}
	// Cloud Armor (in a Cloud Logging entry's jsonPayload, or bare).
	p := v
	if jp, ok := v["jsonPayload"].(map[string]any); ok {
		p = jp
	}
	if sp, ok := p["enforcedSecurityPolicy"].(map[string]any); ok {
		if !strings.EqualFold(str(sp, "outcome"), "DENY") || strings.Contains(strings.ToLower(str(sp, "configuredAction")), "throttle") || strings.Contains(strings.ToLower(str(sp, "configuredAction")), "ban") {
			return wafBlock{}, false
		}
		b := wafBlock{acl: "security policy " + str(sp, "name"), group: "security policy " + str(sp, "name")}
		if ids, ok := sp["preconfiguredExprIds"].([]any); ok && len(ids) > 0 {
			b.rule, _ = ids[0].(string)
		}
		if b.rule == "" {
			if pr, ok := sp["priority"].(float64); ok {
				b.rule = fmt.Sprintf("the rule at priority %.0f", pr)
			}
		}
		if hr, ok := v["httpRequest"].(map[string]any); ok {
			b.req = strings.TrimSpace(str(hr, "requestMethod") + " " + str(hr, "requestUrl"))
			b.client = str(hr, "remoteIp")
		}
		return b, b.rule != ""
	}
	// Cloudflare: a firewall event, or an HTTP request record's security
	// fields.
	action := str(v, "Action", "SecurityAction", "WAFAction")
	if strings.EqualFold(action, "block") {
		src := str(v, "Source", "SecuritySource", "WAFSource")
		if ss, ok := v["SecuritySources"].([]any); ok && src == "" && len(ss) > 0 {
			src, _ = ss[0].(string)
		}
		if strings.Contains(strings.ToLower(src), "ratelimit") || strings.Contains(strings.ToLower(src), "rate_limit") {
			return wafBlock{}, false
		}
		b := wafBlock{rule: str(v, "RuleID", "SecurityRuleID", "WAFRuleID")}
		if desc := str(v, "Description", "SecurityRuleDescription", "WAFRuleMessage"); desc != "" {
			if b.rule != "" {
				b.rule = desc + " (rule " + b.rule + ")"
			} else {
				b.rule = desc
			}
		}
		switch strings.ToLower(src) {
		case "firewallmanaged", "waf":
			b.group = "the managed rules"
		case "firewallcustom", "firewallrules":
			b.group = "the custom rules"
		default:
			b.group = src
		}
		b.req = strings.TrimSpace(str(v, "ClientRequestMethod") + " " + str(v, "ClientRequestPath", "ClientRequestURI"))
		b.client = str(v, "ClientIP")
		return b, b.rule != "" && src != ""
	}
	return wafBlock{}, false
}

// wafBlockLines keeps the lines of a log that record a blocked request.
func wafBlockLines(lines []evidence.LogLine) []evidence.LogLine {
	var out []evidence.LogLine
	for _, l := range lines {
		if _, ok := parseWAFBlock(l.Text); ok {
			out = append(out, l)
		}
	}
	return out
}

// detectWAFBlocked reads the firewall's blocked requests in the incident
// window, when they are new or surging against the baseline: the rules
// that terminated them, the web ACL, what matched, a request. They come
// one by one (a firewall log read line by line, Gathered.WAFBlocks) or as
// log templates of their own (ModSecurity's lines in an ingress log).
func detectWAFBlocked(ev *Gathered, _ []Finding) []Finding {
	type ruleCount struct {
		name string
		n    int
	}
	var counts []ruleCount
	var first wafBlock
	var line string
	var onset time.Time
	total, baseline := 0, 0
	clients := map[string]int{}
	add := func(b wafBlock, l string, n int, at time.Time) {
		total += n
		if b.client != "" {
			clients[b.client] += n
		}
		if onset.IsZero() || (!at.IsZero() && at.Before(onset)) {
			onset = at
		}
		if line == "" {
			first, line = b, l
		}
		name := b.ruleName()
		if i := slices.IndexFunc(counts, func(c ruleCount) bool { return c.name == name }); i >= 0 {
			counts[i].n += n
		} else {
			counts = append(counts, ruleCount{name, n})
		}
	}
	w := ev.Window
	for _, l := range ev.WAFBlocks {
		b, ok := parseWAFBlock(l.Text)
		switch {
		case !ok || l.Time.IsZero() || l.Time.After(w.End) || l.Time.Before(w.BaselineStart):
		case l.Time.Before(w.Start):
			baseline++
		default:
			add(b, l.Text, 1, l.Time)
		}
	}
	// Blocks that were as frequent before the incident are the firewall's
	// usual work (scanners, bots), not what changed.
	if total > 0 && baseline > 0 {
		base, inc := w.Start.Sub(w.BaselineStart).Minutes(), w.End.Sub(w.Start).Minutes()
		if base <= 0 || inc <= 0 || float64(total)/inc < 3*float64(baseline)/base {
			total, counts, line, onset, clients = 0, nil, "", time.Time{}, map[string]int{}
		}
	}
	for set, t := range incidentTemplates(ev) {
		// A log group's lines were read one by one above.
		if set.Origin == SrcCloudWatch || set.HasBaseline && !t.New && t.Surge < 3 {
			continue
		}
		for _, l := range t.Lines() {
			if b, ok := parseWAFBlock(l); ok {
				add(b, l, t.Incident, firstOf(t.Onset, firstOf(t.FirstIncident, t.FirstSeen)))
				break
			}
		}
	}
	if total < 3 {
		return nil
	}
	slices.SortStableFunc(counts, func(a, b ruleCount) int { return b.n - a.n })
	subject := orWord(ev.Scope.Service, "the site")
	if onset.IsZero() {
		onset = w.Start
	}
	f := Finding{Kind: KindWAFBlocked, Subject: subject, Namespace: ev.Scope.Namespace, Object: "web application firewall in front of " + subject, Time: onset,
		Severity: SevCritical, Weight: 0.9, Source: SrcLogs}
	f.setFact("acl", first.acl)
	f.setFact("rule", counts[0].name)
	if len(counts) > 1 {
		var more []string
		for _, c := range counts[1:] {
			more = append(more, c.name)
		}
		f.setFact("more_rules", "and "+strings.Join(more, ", "))
	}
	// Most blocks from one address: one caller (a probe, a partner, a
	// cluster's NAT) the rules now stop, not users at large.
	top, topN := "", 0
	for c, n := range clients {
		if n > topN || n == topN && c < top {
			top, topN = c, n
		}
	}
	if topN >= 3 && float64(topN) >= 0.6*float64(total) && len(clients) >= 1 {
		f.setFact("client", top)
		f.setFact("client_share", fmt.Sprintf("%d of the %d blocked requests come from one source address, %s", topN, total, top))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d of the %d blocked requests come from the source address %s", topN, total, top))
	}
	f.setFact("match", first.match)
	f.setFact("request", first.req)
	f.setFact("blocked", fmt.Sprintf("%d blocked requests in the incident window from %s", total, ts(onset)))
	f.setFact("line", line)
	e := "the firewall's log records a blocked request: " + first.String()
	if !strings.HasPrefix(strings.TrimSpace(line), "{") {
		e += ": " + quote(line, 200)
	}
	f.Evidence = append(f.Evidence, e)
	for _, c := range counts {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d requests blocked by %s in the incident window", c.n, c.name))
	}
	f.Summary = fmt.Sprintf("the web application firewall blocks requests to %s (%s): %d in the incident window", subject, counts[0].name, total)
	return []Finding{f}
}
