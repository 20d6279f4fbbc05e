package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// SyntaxErrors of syntax an engine does not support, as a RUM intake
// log, Sentry's event JSON and a console paste with a user agent show
// them; a bundle grep showing the lookbehind. A SyntaxError from bad
// JSON is not this cause.
func TestDetectClientSyntaxUnsupported(t *testing.T) {
	rep := func(l string, n int) []string {
		var out []string
		for range n {
			out = append(out, l)
		}
		return out
	}
	grep := evidence.CommandOutput{Command: "curl -s https://shop.example/_next/static/chunks/shipping.js | grep -o '.{24}(?<[=!].{28}'",
		Lines: []string{`GB:/^([A-Z]{1,2}\d[A-Z\d]?)(?<=\S)\s*(\d[A-Z]{2})$/i`}}
	cases := []struct {
		name    string
		lines   []string
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"RUM intake, Safari 16.3", rep(`2026-11-18T08:40:23.377Z ERROR client_error app=checkout-web release=checkout-web@5.8.0 session=456c page=/checkout/shipping browser="Mobile Safari 16.3.1" os="iOS 16.3.1" type=SyntaxError message="Invalid regular expression: invalid group specifier name" source=https://shop.example/_next/static/chunks/shipping.js line=1 col=18842`, 4),
			[]evidence.CommandOutput{grep}, "checkout-web", []string{"Mobile Safari 16.3.1", "lookbehind", "5.8.0", "(?<="}},
		{"Sentry event JSON", rep(`{"event_id":"a1","release":"account-web@2.1.0","level":"error","exception":{"values":[{"type":"SyntaxError","value":"Invalid regular expression: invalid group specifier name"}]},"contexts":{"browser":{"name":"Safari","version":"15.6"}}}`, 3),
			nil, "account-web", []string{"Safari 15.6", "invalid group specifier name"}},
		{"optional chaining in an old engine, user agent", rep(`js_error app=portal msg="SyntaxError: Unexpected token '.'" ua="Mozilla/5.0 (iPhone; CPU iPhone OS 13_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0.5 Mobile/15E148 Safari/604.1"`, 3),
			nil, "portal", []string{"Safari 13.0.5", "Unexpected token '.'"}},
		{"bad JSON is not syntax support", rep(`client_error app=web type=SyntaxError message="Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON"`, 5), nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("client-errors", false, 0, c.lines...)}, Commands: c.cmds, Window: win}
			f := onlyFinding(t, detectClientSyntaxUnsupported(ev, nil), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindClientSyntaxUnsupported, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
			if recs := recommend(h, Scope{}); len(recs) < 2 || !strings.Contains(recs[0].Action, f.Subject) {
				t.Errorf("recommendations %v", recs)
			}
		})
	}
}
