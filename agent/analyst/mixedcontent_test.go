package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Mixed content as a curl of the page source shows it (a Laravel/Vite
// link, a Next.js script), as Chrome's and Firefox's consoles report it;
// https assets, or a curl over plain http, are not this cause.
func TestDetectMixedContent(t *testing.T) {
	page := func(url string, lines ...string) []evidence.CommandOutput {
		return []evidence.CommandOutput{{Command: "curl -s " + url + " | grep -oE '<(link|script)[^>]*>'", Lines: lines}}
	}
	cases := []struct {
		name  string
		cmds  []evidence.CommandOutput
		logs  []string
		asset string
	}{
		{"Vite stylesheet in the page source", page("https://shop.example/", `<link rel="stylesheet" href="http://shop.example/build/assets/app-4f1c2a9e.css" />`), nil, "http://shop.example/build/assets/app-4f1c2a9e.css"},
		{"Next.js script", page("https://www.example.com/p/1", `<script src="http://www.example.com/_next/static/chunks/main-ab12.js" defer=""></script>`), nil, "http://www.example.com/_next/static/chunks/main-ab12.js"},
		{"Chrome console", nil, []string{`Mixed Content: The page at 'https://shop.example/' was loaded over HTTPS, but requested an insecure script 'http://shop.example/js/app.js'. This request has been blocked; the content must be served over HTTPS.`}, "http://shop.example/js/app.js"},
		{"Firefox console", nil, []string{`Blocked loading mixed active content “http://shop.example/css/site.css”`}, "http://shop.example/css/site.css"},
		{"https assets", page("https://shop.example/", `<link rel="stylesheet" href="https://shop.example/build/assets/app.css" />`), nil, ""},
		{"a page fetched over http", page("http://shop.example/", `<link rel="stylesheet" href="http://shop.example/build/assets/app.css" />`), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: "shopfront"}}
			if c.logs != nil {
				ev.Logs = []LogSet{minedSet("console", false, 0, c.logs...)}
			}
			want := ""
			if c.asset != "" {
				want = "shopfront"
			}
			f := onlyFinding(t, detectMixedContent(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("asset") != c.asset {
				t.Fatalf("asset %q, want %q", f.fact("asset"), c.asset)
			}
			h := &Hypothesis{Kind: KindMixedContent, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "mixed content", c.asset, "X-Forwarded-Proto")
			if recs := recommend(h, Scope{}); len(recs) < 2 {
				t.Errorf("recommendations %v", recs)
			}
			ch := &Finding{Kind: KindInfraChange, Subject: "ingress-nginx", Summary: "Offload TLS to the NLB"}
			if !mixedContent.fitsChange(h, ch) {
				t.Errorf("a TLS offload not taken for the change")
			}
		})
	}
}
