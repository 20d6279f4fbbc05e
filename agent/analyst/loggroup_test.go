package analyst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestParseGroupQuestion(t *testing.T) {
	cases := []struct {
		q      string
		ok     bool
		lo, hi int
		field  string
	}{
		{"A few customers report 504s from api.harbourline.io this morning. Can you check the edge log: are the 504s spread across the API or coming from one route? Which one, and since when?", true, 504, 504, "route"},
		{"Which upstream are the 5xx errors coming from?", true, 500, 599, "upstream"},
		{"Is one client sending all the 429s?", true, 429, 429, "client"},
		{"Check the ingress log: where do the 502 responses come from?", true, 502, 502, "route"},
		{"Since about 08:40 sms-gateway returns 503 on most sends and OTP codes aren't arriving. Pods look fine. What's going on?", false, 0, 0, ""},
		{"p99 went from 500 ms to 2 s since 10:00, which endpoint is slow?", false, 0, 0, ""},
		{"checkout is failing since 09:58, why?", false, 0, 0, ""},
	}
	for _, c := range cases {
		q, ok := parseGroupQuestion(c.q)
		if ok != c.ok || ok && (q.lo != c.lo || q.hi != c.hi || q.field != c.field) {
			t.Errorf("parseGroupQuestion(%q) = %+v %v; want %d-%d by %s (%v)", c.q, q, ok, c.lo, c.hi, c.field, c.ok)
		}
	}
}

// accessLines writes an Envoy access log: steady 200s on three routes, and
// from `from` on, the 504s the case adds.
func accessLines(bad func(i int) (route, upstream string, ok bool)) []evidence.LogLine {
	var out []evidence.LogLine
	routes := []struct{ path, up string }{{"/v1/shipments/SHP-17%05d", "shipment-api"}, {"/v1/labels", "label-service"}, {"/v1/tracking/76%05d", "tracking-api"}}
	for i := 0; i < 240; i++ {
		at := win.BaselineStart.Add(time.Duration(i) * 30 * time.Second)
		r := routes[i%3]
		path := r.path
		if strings.Contains(path, "%") {
			path = fmt.Sprintf(path, i)
		}
		status, flags, dur := 200, "-", 40
		up := r.up
		if p, u, ok := bad(i); ok {
			path, up, status, flags, dur = p, u, 504, "UT", 15000
		}
		out = append(out, evidence.LogLine{Time: at, Text: fmt.Sprintf(`%s "GET %s HTTP/1.1" %d %s 0 24 %d - "203.0.113.9" "curl/8.5.0" "efa6b517-f34c-7b69-66fa-b48cd705424a" "api.example.io" "%s"`,
			at.Format("2006-01-02T15:04:05.000Z"), path, status, flags, dur, up)})
	}
	return out
}

func TestDetectLogGroups(t *testing.T) {
	ask := "Can you check the edge log: are the 504s spread across the API or coming from one route? Which one, and since when?"
	cases := []struct {
		name    string
		bad     func(i int) (string, string, bool)
		subject string
		want    []string
	}{
		{"one route times out upstream", func(i int) (string, string, bool) {
			return fmt.Sprintf("/v1/manifests/export?depot=DEP-%d", i), "manifest-exporter", i >= 150 && i%4 == 0
		}, "manifest-exporter", []string{"come from one route: GET /v1/manifests/export (all 22", "sent to upstream manifest-exporter", "UT: upstream request timeout", "after 15.00 s", "does not answer within the route's timeout"}},
		{"spread across routes", func(i int) (string, string, bool) {
			return fmt.Sprintf("/v1/r%c", 'a'+i%5), "edge-pool", i >= 150 && i%2 == 0
		}, "edge-envoy", []string{"are spread across routes", "(9 of 45)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := LogSet{Source: "logs/edge-envoy.log", Subject: "edge-envoy", Origin: SrcLogs, Host: true, Lines: accessLines(c.bad)}
			fs := detectLogGroups(&Gathered{Logs: []LogSet{set}, Window: win, Scope: Scope{Message: ask, Service: "edge-envoy"}})
			if len(fs) != 1 {
				t.Fatalf("findings: %+v", fs)
			}
			f := fs[0]
			if f.Subject != c.subject || f.Kind != KindLogMatch {
				t.Errorf("subject %q kind %s, want %q", f.Subject, f.Kind, c.subject)
			}
			d := describeGroup(&Hypothesis{Kind: KindLogMatch, Subject: f.Subject, Primary: []*Finding{&f}})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	// Another question reads no lines and finds nothing.
	if p := lineSearch(Scope{Message: "checkout is failing since 09:58, why?"}); p != "" {
		t.Errorf("lineSearch of a plain question = %q", p)
	}
	if p := lineSearch(Scope{Message: ask}); p != `\b504\b` {
		t.Errorf("lineSearch = %q", p)
	}
}
