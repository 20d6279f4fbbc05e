package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// CSP refusals as Chrome's and Firefox's consoles print them, a RUM
// agent's securitypolicyviolation events and a report-uri endpoint's
// JSON; the page's policy from curl -I; the change that set the policy
// names who serves the page. A frame refused by X-Frame-Options, or only
// inline scripts refused with no policy read, is not this cause.
func TestDetectCSPBlocked(t *testing.T) {
	change := evidence.Change{Timestamp: win.Start.Add(-2 * 60e9), Service: "shop-web", Kind: "deploy", Description: "shop-web 4.2.0: bump helmet from 4.6.0 to 7.1.0"}
	curl := evidence.CommandOutput{Command: "curl -sI https://shop.example/checkout", Lines: []string{
		"HTTP/2 200",
		"content-security-policy: default-src 'self';script-src 'self';object-src 'none'",
	}}
	cases := []struct {
		name      string
		lines     []string
		cmds      []evidence.CommandOutput
		changes   []evidence.Change
		subject   string
		blocked   string
		directive string
	}{
		{"Chrome console", []string{
			`Refused to load the script 'https://js.stripe.com/v3/' because it violates the following Content Security Policy directive: "script-src 'self'". Note that 'script-src-elem' was not explicitly set, so 'script-src' is used as a fallback.`,
		}, nil, []evidence.Change{change}, "shop-web", "https://js.stripe.com/v3/", "script-src 'self'"},
		{"Firefox console", []string{
			`Content-Security-Policy: The page’s settings blocked the loading of a resource at https://widget.intercom.io/widget/abc (“script-src”).`,
		}, nil, []evidence.Change{change}, "shop-web", "https://widget.intercom.io/widget/abc", "script-src"},
		{"RUM securitypolicyviolation events", []string{
			`2026-11-20T08:47:50.373Z level=warn type=csp_violation app=shop view=/checkout session=ab12 browser="Chrome 131" disposition=enforce effective_directive=script-src-elem blocked_uri=https://js.stripe.com/v3/ status_code=200`,
		}, []evidence.CommandOutput{curl}, []evidence.Change{change}, "shop-web", "https://js.stripe.com/v3/", "script-src-elem"},
		{"report-uri JSON, no change: the log's subject", []string{
			`{"csp-report":{"document-uri":"https://shop.example/checkout","violated-directive":"frame-src","effective-directive":"frame-src","original-policy":"default-src 'self'","blocked-uri":"https://checkout.adyen.com","status-code":200}}`,
		}, nil, nil, "csp-reports", "https://checkout.adyen.com", "frame-src"},
		{"X-Frame-Options is not CSP", []string{
			`Refused to display 'https://partner.example/' in a frame because it set 'X-Frame-Options' to 'sameorigin'.`,
		}, nil, []evidence.Change{change}, "", "", ""},
		{"inline only, no policy read", []string{
			`Refused to execute inline script because it violates the following Content Security Policy directive: "script-src 'self'".`,
		}, nil, nil, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("csp-reports", false, 0, c.lines...)}, Commands: c.cmds, Changes: c.changes, Window: win}
			f := onlyFinding(t, detectCSPBlocked(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("blocked") != c.blocked || f.fact("directive") != c.directive {
				t.Fatalf("blocked %q directive %q, want %q %q", f.fact("blocked"), f.fact("directive"), c.blocked, c.directive)
			}
			h := &Hypothesis{Kind: KindCSPBlocked, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "Content-Security-Policy", c.blocked)
			if recs := recommend(h, Scope{}); len(recs) < 2 {
				t.Errorf("recommendations %v", recs)
			}
			ch := &Finding{Kind: KindDeploy, Subject: f.Subject, Summary: "deploy: bump helmet from 4.6.0 to 7.1.0"}
			if !namesCause(h, ch) && !cspBlocked.fitsChange(h, ch) {
				t.Errorf("a helmet bump not taken for the policy's change")
			}
		})
	}
}
