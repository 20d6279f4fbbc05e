package analyst

import (
	"strings"
	"testing"
)

func TestThrottling(t *testing.T) {
	testLines(t, throttlingM, []lineCase{
		{`POST https://api.sendgrid.com/v3/mail/send -> HTTP 429 Too Many Requests`, KindThrottling},
		{`botocore.exceptions.ClientError: An error occurred (ThrottlingException) when calling the PutItem operation: Rate exceeded`, KindThrottling},
		{`{"level":"warn","msg":"upstream answered","status":429,"path":"/v1/quotes"}`, KindThrottling},
		{`{"level":"info","msg":"request","status":200,"duration_ms":429}`, ""},
	})
	cases := []struct {
		facts   map[string]string
		trigger *Finding
		want    string
	}{
		{map[string]string{"external": "SendGrid", "caller": "notifier", "line": "HTTP 429 Too Many Requests"}, nil,
			"the external API SendGrid rate-limits (HTTP 429, too many requests) the calls from notifier"},
		{map[string]string{"caller": "quotes", "line": `"status":429`}, &Finding{Kind: KindConfigChange, Facts: map[string]string{"revision": "r42"}},
			"rate-limit misconfiguration in quotes (config change r42)"},
		{map[string]string{"caller": "quotes", "target": "pricing", "line": `"status":429`}, nil, "quotes is throttled (rate limited) by pricing"},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindThrottling, Subject: "quotes", Trigger: c.trigger, Primary: []*Finding{{Kind: KindThrottling, Subject: "quotes", Facts: c.facts}}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("description %q lacks %q", d, c.want)
		}
		if len(recommend(h, Scope{})) == 0 {
			t.Errorf("no recommendations")
		}
	}
}
