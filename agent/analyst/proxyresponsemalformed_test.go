package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestProxyResponseMalformed: the gateway's own record of a Lambda
// response it cannot use (a REST API's execution log, an ALB's access log
// with a Lambda target) names the function and, when the gateway logged
// it or the function was invoked by hand, what is wrong with the response.
func TestProxyResponseMalformed(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(12 * time.Minute)
	set := func(src string, ls ...string) LogSet {
		s := LogSet{Source: src, Subject: subjectOfSource(src), Origin: SrcCloudWatch, HasBaseline: true}
		for _, l := range ls {
			s.Templates = append(s.Templates, analysis.LogTemplate{Template: l, Example: l, Count: 40, Incident: 40, FirstSeen: at, FirstIncident: at, LastSeen: w.End, Source: src})
		}
		return s
	}
	restAPI := set("/API-Gateway-Execution-Logs_7h2kq9zz1c/live",
		"(5d1f0a2e-7c55-4b8e-9d51-0b4c1c3e2a10) Endpoint request URI: https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/arn:aws:lambda:eu-west-1:210987654321:function:invoice-api/invocations",
		`(5d1f0a2e-7c55-4b8e-9d51-0b4c1c3e2a10) Endpoint response body before transformations: {"statusCode":"200","body":"{\"id\":7}"}`,
		"(5d1f0a2e-7c55-4b8e-9d51-0b4c1c3e2a10) Execution failed due to configuration error: Malformed Lambda proxy response",
		"(5d1f0a2e-7c55-4b8e-9d51-0b4c1c3e2a10) Method completed with status: 502")
	alb := set("elb/app-orders-alb.log",
		`http 2026-09-01T09:12:01.123456Z app/orders-alb/50dc6c495c0c9188 203.0.113.7:46532 - -1 -1 -1 502 - 120 272 "GET https://orders.example.com:443/v1/orders/1 HTTP/1.1" "okhttp/4.12.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/order-fn/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "orders.example.com" "-" 0 2026-09-01T09:12:01.100000Z "forward" "-" "LambdaInvalidResponse" "-" "-" "-" "-"`)
	invoke := evidence.CommandOutput{Command: "aws lambda invoke --function-name order-fn --payload '{}' /dev/stdout",
		Lines: []string{`{"statusCode":200,"headers":{"content-type":"application/json"},"body":{"id":"ORD-1","status":"PAID"}}`, "{", `    "StatusCode": 200,`, "}"}}
	cases := []struct {
		name    string
		logs    []LogSet
		cmds    []evidence.CommandOutput
		service string
		subject string
		says    []string
	}{
		{"REST API execution log, statusCode a string", []LogSet{restAPI}, nil, "", "invoice-api",
			[]string{"API Gateway 7h2kq9zz1c (stage live)", "Malformed Lambda proxy response", "statusCode is not a number"}},
		{"ALB Lambda target, response read from an invoke", []LogSet{alb}, []evidence.CommandOutput{invoke}, "order-fn", "order-fn",
			[]string{"load balancer's Lambda target", "LambdaInvalidResponse", "body is a JSON object, not a string"}},
		{"a 502 without the gateway's reason is not this", []LogSet{set("/API-Gateway-Execution-Logs_7h2kq9zz1c/live", "(5d1f) Method completed with status: 502")}, nil, "invoice-api", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectProxyResponseMalformed(&Gathered{Logs: c.logs, Commands: c.cmds, Window: w, Scope: Scope{Service: c.service}}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindProxyResponseMalformed, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.says...)
		})
	}
}
