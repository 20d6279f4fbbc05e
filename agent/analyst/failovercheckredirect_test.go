package analyst

import (
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestFailoverCheckRedirect reads Route 53's health checker status (aws
// route53 get-health-check-status as JSON and as --output text), the
// check's configuration and the 5xx a client gets: a check that passes on
// a redirect while the service fails is the failover's cause; one that
// passes on 200, or a redirect while the service answers, is not.
func TestFailoverCheckRedirect(t *testing.T) {
	w := testWindow()
	cmd := func(c string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: c, Run: c, ExitCode: -1, Lines: lines}
	}
	statusJSON := cmd("aws route53 get-health-check-status --health-check-id 11111111-2222-3333-4444-555555555555",
		`{`, `    "HealthCheckObservations": [`, `        {`, `            "Region": "us-west-1",`, `            "IPAddress": "15.177.2.1",`, `            "StatusReport": {`,
		`                "Status": "Success: HTTP Status Code 302, Found. Resolved IP: 203.0.113.10",`, `                "CheckedTime": "2026-05-01T10:58:51.512000+00:00"`, `            }`)
	statusText := cmd("aws route53 get-health-check-status --health-check-id 1111 --output text",
		"HEALTHCHECKOBSERVATIONS\t15.177.62.21\teu-west-1",
		"STATUSREPORT\t2026-05-01T10:58:57.204000+00:00\tSuccess: HTTP Status Code 301, Moved Permanently. Resolved IP: 203.0.113.10")
	healthy := cmd("aws route53 get-health-check-status --health-check-id 1111", `"Status": "Success: HTTP Status Code 200, OK. Resolved IP: 203.0.113.10",`)
	config := cmd("aws route53 get-health-check --health-check-id 1111", `{`, `    "HealthCheck": {`, `        "HealthCheckConfig": {`, `            "Port": 80,`, `            "Type": "HTTP",`, `            "ResourcePath": "/health",`)
	code503 := cmd("curl -s -o /dev/null -w '%{http_code}\\n' https://api.example.com/health", "503")
	head502 := cmd("curl -si https://api.example.com/v1/orders | head -n 3", "HTTP/2 502", "server: awselb/2.0")
	ok := cmd("curl -s -o /dev/null -w '%{http_code}\\n' https://api.example.com/health", "200")
	cases := []struct {
		name string
		cmds []evidence.CommandOutput
		says []string
	}{
		{"JSON status, config and a 503", []evidence.CommandOutput{statusJSON, config, code503}, []string{"(HTTP on port 80 at /health) gets a 302 (Found) redirect", "plain-HTTP listener", "answers 503"}},
		{"text status and a 502 status line", []evidence.CommandOutput{statusText, head502}, []string{"gets a 301 (Moved Permanently) redirect", "answers 502"}},
		{"a check passing on 200", []evidence.CommandOutput{healthy, config, code503}, nil},
		{"a redirect while the service answers", []evidence.CommandOutput{statusJSON, config, ok}, nil},
	}
	for _, c := range cases {
		fs := detectFailoverCheckRedirect(&Gathered{Commands: c.cmds, Window: w, Scope: Scope{Service: "public-api"}}, nil)
		if c.says == nil {
			if len(fs) != 0 {
				t.Errorf("%s: %d findings, want none", c.name, len(fs))
			}
			continue
		}
		if len(fs) != 1 || fs[0].Subject != "public-api" {
			t.Errorf("%s: findings %+v, want one on public-api", c.name, fs)
			continue
		}
		h := &Hypothesis{Kind: KindFailoverCheckRedirect, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}, Onset: fs[0].Time}
		d := failoverCheckRedirect.describe(h, Scope{})
		for _, s := range c.says {
			if !strings.Contains(d, s) {
				t.Errorf("%s: description %q does not say %q", c.name, d, s)
			}
		}
	}
}
