package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestWAFBlocked reads a firewall's blocked requests as AWS WAF, Cloudflare
// (firewall events and HTTP request records), Cloud Armor and ModSecurity
// print them: records read line by line from a log group, or log templates
// of their own. Allowed requests, rate-based rules and blocks as frequent
// before the incident as during it are not this cause.
func TestWAFBlocked(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	awsRecord := func(action, ruleType, group, rule string) string {
		rg := `[]`
		if group != "" {
			rg = `[{"ruleGroupId":"AWS#` + group + `","terminatingRule":{"ruleId":"` + rule + `","action":"BLOCK","ruleMatchDetails":null},"nonTerminatingMatchingRules":[],"excludedRules":null,"customerConfig":null}]`
		}
		term := "Default_Action"
		if group != "" {
			term = "AWS-" + group
		} else if rule != "" {
			term = rule
		}
		return `{"timestamp":1777633943000,"formatVersion":1,"webaclId":"arn:aws:wafv2:us-east-1:123456789012:regional/webacl/shop-prod-acl/1a2b3c4d-0000-4000-8000-123456789abc","terminatingRuleId":"` + term + `","terminatingRuleType":"` + ruleType + `","action":"` + action + `","terminatingRuleMatchDetails":[{"conditionType":"SQL_INJECTION","location":"QUERY_STRING","matchedData":["UNION","SELECT"]}],"httpSourceName":"ALB","httpSourceId":"123456789012-app/shop-prod/0a1b2c3d","ruleGroupList":` + rg + `,"rateBasedRuleList":[],"nonTerminatingMatchingRules":[],"httpRequest":{"clientIp":"198.51.100.7","country":"US","headers":[{"name":"host","value":"shop.example.com"}],"uri":"/search","args":"q=union+select","httpVersion":"HTTP/1.1","httpMethod":"GET","requestId":"1-abc"}}`
	}
	lines := func(from time.Time, n int, text string) []evidence.LogLine {
		var out []evidence.LogLine
		for i := range n {
			out = append(out, evidence.LogLine{Time: from.Add(time.Duration(i) * time.Minute), Source: "aws-waf-logs-shop", Text: text})
		}
		return out
	}
	sqli := awsRecord("BLOCK", "MANAGED_RULE_GROUP", "AWSManagedRulesSQLiRuleSet", "SQLi_QUERYARGUMENTS")
	allowed := awsRecord("ALLOW", "REGULAR", "", "")
	rateBased := awsRecord("BLOCK", "RATE_BASED", "", "per-ip-2000")
	modsec := `2026/05/01 10:12:23 [error] 1234#1234: *5678 [client 10.0.0.1] ModSecurity: Access denied with code 403 (phase 2). Matched "Operator ` + "`Ge'" + ` with parameter ` + "`5'" + ` against variable ` + "`TX:ANOMALY_SCORE'" + ` [file "/etc/nginx/owasp-modsecurity-crs/rules/REQUEST-949-BLOCKING-EVALUATION.conf"] [line "80"] [id "949110"] [rev ""] [msg "Inbound Anomaly Score Exceeded (Total Score: 5)"] [data ""] [severity "2"] [ver "OWASP_CRS/3.3.2"] [hostname "10.0.0.5"] [uri "/api/articles"] [unique_id "166518"] [ref ""], client: 10.0.0.1, server: cms.example.org, request: "PUT /api/articles HTTP/1.1", host: "cms.example.org"`
	cfEvent := `{"Action":"block","ClientIP":"198.51.100.7","ClientRequestHost":"www.example.org","ClientRequestMethod":"POST","ClientRequestPath":"/api/comments","Datetime":"2026-05-01T10:12:23Z","Description":"XSS, HTML Injection - Body","Kind":"firewall","RayID":"8e8f2a1c9b7d4e31","RuleID":"5de7edfa648c4d6891dc3e7f84534ffa","Source":"firewallManaged"}`
	cfRateLimit := `{"Action":"block","ClientIP":"198.51.100.7","ClientRequestMethod":"GET","ClientRequestPath":"/api/cart","Datetime":"2026-05-01T10:12:23Z","Description":"api limit","Kind":"firewall","RayID":"8e8f2a1c9b7d4e32","RuleID":"0f6a","Source":"ratelimit"}`
	armor := `{"insertId":"1x2y3z","jsonPayload":{"@type":"type.googleapis.com/google.cloud.loadbalancing.type.LoadBalancerLogEntry","enforcedSecurityPolicy":{"configuredAction":"DENY","name":"shop-edge-policy","outcome":"DENY","priority":1000,"preconfiguredExprIds":["owasp-crs-v030301-id941110-xss"]},"statusDetails":"denied_by_security_policy"},"httpRequest":{"requestMethod":"POST","requestUrl":"https://shop.example.com/api/reviews","status":403},"resource":{"type":"http_load_balancer"},"severity":"WARNING","timestamp":"2026-05-01T10:12:23Z"}`
	tmpl := func(src, line string, n int, baseline bool) LogSet {
		return LogSet{Source: src, Origin: SrcLogs, HasBaseline: baseline, Templates: []analysis.LogTemplate{{
			Example: line, Count: n, Incident: n, FirstSeen: at, FirstIncident: at, LastSeen: w.End, New: true}}}
	}
	cases := []struct {
		name   string
		blocks []evidence.LogLine
		logs   []LogSet
		says   []string
	}{
		{"AWS WAF records of a managed rule group", lines(at, 20, sqli), nil, []string{"web ACL shop-prod-acl", "SQLi_QUERYARGUMENTS of AWSManagedRulesSQLiRuleSet", "SQL_INJECTION in the request query_string (UNION SELECT)", "GET /search", "20 blocked requests"}},
		{"ModSecurity in an ingress controller's log", nil, []LogSet{tmpl("ingress-nginx-controller-7d9f", modsec, 40, true)}, []string{"rule 949110 of ModSecurity rule set", "Inbound Anomaly Score Exceeded", "/api/articles"}},
		{"Cloudflare firewall events of the managed rules", nil, []LogSet{tmpl("cloudflare/firewall_events", cfEvent, 12, false)}, []string{"XSS, HTML Injection - Body (rule 5de7edfa648c4d6891dc3e7f84534ffa) of the managed rules", "POST /api/comments"}},
		{"a Cloud Armor policy's preconfigured rule", nil, []LogSet{tmpl("requests", armor, 9, false)}, []string{"WAF security policy shop-edge-policy", "owasp-crs-v030301-id941110-xss", "POST https://shop.example.com/api/reviews"}},
		{"allowed requests only", lines(at, 50, allowed), nil, nil},
		{"a rate-based rule", lines(at, 50, rateBased), nil, nil},
		{"a Cloudflare rate limit", nil, []LogSet{tmpl("cloudflare/firewall_events", cfRateLimit, 30, false)}, nil},
		{"blocks as frequent before the incident", append(lines(w.BaselineStart, 30, sqli), lines(at, 5, sqli)...), nil, nil},
		{"two blocked requests", lines(at, 2, sqli), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectWAFBlocked(&Gathered{WAFBlocks: c.blocks, Logs: c.logs, Window: w, Scope: Scope{Service: "shop-api", Namespace: "shop"}}, nil)
			wantWrittenOn(t, KindWAFBlocked, "shop-api", fs, c.says)
		})
	}
	// Only the lines that record a blocked request are kept from a log.
	kept := wafBlockLines(append(lines(at, 3, allowed), lines(at, 2, sqli)...))
	if len(kept) != 2 {
		t.Errorf("wafBlockLines kept %d lines, want 2", len(kept))
	}
	// The change to the firewall's rules is the trigger; the service's
	// release beside it is not.
	h := &Hypothesis{Kind: KindWAFBlocked}
	for text, want := range map[string]bool{
		"terraform: shop-prod-acl AWSManagedRulesCommonRuleSet override_action count -> none": true,
		"ingress-nginx: enable-owasp-modsecurity-crs: true, SecRuleEngine On":                 true,
		"Cloud Armor: shop-edge-policy add preconfigured xss-v33-stable":                      true,
		"content-api 4.2.0: role-based section permissions":                                   false,
	} {
		c := &Finding{Kind: KindInfraChange, Summary: text}
		c.setFact("description", text)
		if got := wafBlocked.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", text, got, want)
		}
	}
}

// TestWAFBlockedOneClient names the one source address most blocked
// requests come from, and then takes the change that gave its caller a new
// egress address as a trigger.
func TestWAFBlockedOneClient(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(10 * time.Minute)
	rec := func(ip string) string {
		return `{"timestamp":1777633943000,"formatVersion":1,"webaclId":"arn:aws:wafv2:eu-central-1:123456789012:regional/webacl/shop-edge/5e0b","terminatingRuleId":"AWS-AWSManagedRulesBotControlRuleSet","terminatingRuleType":"MANAGED_RULE_GROUP","action":"BLOCK","terminatingRuleMatchDetails":[],"ruleGroupList":[{"ruleGroupId":"AWS#AWSManagedRulesBotControlRuleSet","terminatingRule":{"ruleId":"CategoryHttpLibrary","action":"BLOCK"}}],"httpRequest":{"clientIp":"` + ip + `","country":"IE","uri":"/","httpMethod":"GET"}}`
	}
	var blocks []evidence.LogLine
	for i, ip := range []string{"203.0.113.9", "203.0.113.9", "198.51.100.4", "203.0.113.9", "203.0.113.9", "192.0.2.77"} {
		blocks = append(blocks, evidence.LogLine{Time: at.Add(time.Duration(i) * time.Minute), Text: rec(ip)})
	}
	fs := detectWAFBlocked(&Gathered{WAFBlocks: blocks, Window: w, Scope: Scope{Service: "shop"}}, nil)
	if len(fs) != 1 {
		t.Fatalf("%d findings, want 1", len(fs))
	}
	h := &Hypothesis{Kind: KindWAFBlocked, Subject: "shop", Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
	if d := wafBlocked.describe(h, Scope{}); !strings.Contains(d, "4 of the 6 blocked requests come from one source address, 203.0.113.9") {
		t.Errorf("description %q does not name the one source address", d)
	}
	c := &Finding{Kind: KindInfraChange, Summary: "monitoring VPC: NAT gateway recreated (terraform apply)"}
	c.setFact("description", c.Summary)
	if !wafBlocked.fitsChange(h, c) {
		t.Errorf("a NAT gateway recreated does not fit the blocks of one source address")
	}
}
