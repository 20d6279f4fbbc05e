package analyst

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// KindProxyResponseMalformed is a Lambda function behind an API Gateway
// proxy integration (or an ALB Lambda target) that returns a response the
// gateway cannot turn into an HTTP answer.
const KindProxyResponseMalformed Kind = "proxy_response_malformed"

// A Lambda proxy integration hands the function's return value to API
// Gateway as the HTTP response: it must be a JSON object with a numeric
// statusCode, optional headers and a body that is a string (JSON.stringify
// of the payload). A handler that returns the payload object itself as
// body, a bare object or a string is refused: the REST API's execution log
// says "Execution failed due to configuration error: Malformed Lambda
// proxy response" and the client gets 502 {"message": "Internal server
// error"}, while the function itself succeeds (no errors, no timeouts, its
// invocations are status 200); an ALB with a Lambda target says the same
// with the error reason LambdaInvalidResponse in its access log. The
// function's release that changed how it builds its response is the
// cause, not the gateway.
var proxyResponseMalformed = &mechanism{
	kind:   KindProxyResponseMalformed,
	class:  classCause,
	label:  "Lambda proxy response malformed: the gateway answers 502",
	detect: detectProxyResponseMalformed,
	// A release of the function changes what it returns; a change of
	// the gateway's logging only makes the refusals visible.
	fitsChange: func(h *Hypothesis, c *Finding) bool {
		return c.Kind == KindDeploy && strings.EqualFold(c.Subject, h.Subject)
	},
	strictTriggers: true,
	describe: func(h *Hypothesis, sc Scope) string {
		d := fmt.Sprintf("the Lambda function %s returns a response its %s cannot use as an HTTP answer: %s says %s (%s requests), so the callers get 502 while the function itself reports success (no errors)",
			h.Subject, orWord(h.fact("gateway_kind"), "API Gateway proxy integration"), orWord(h.fact("gateway"), "the gateway"), quote(h.fact("line"), 160), orWord(h.fact("count"), "its"))
		if why := h.fact("why"); why != "" {
			d += "; " + why
		}
		return d
	},
	recommend: func(h *Hypothesis, sc Scope, r *recommender) {
		r.rollback()
		r.high("Make %s return a proxy response API Gateway accepts: a JSON object with a numeric statusCode, string-valued headers and body as a string (JSON.stringify the payload), or roll it back to the version that did", h.Subject)
		r.med("Test the function's response through the gateway (aws apigateway test-invoke-method, or a contract test of the proxy response shape) in the release pipeline, not only the function alone")
		r.low("Alert on the gateway's 5XXError with the function's Errors at zero: the integration, not the code, is failing")
	},
}

var (
	// malformedProxyRE: API Gateway's execution log line and the ALB's
	// access-log error reason for a Lambda response it cannot use.
	malformedProxyRE = regexp.MustCompile(`(?i)Malformed Lambda proxy response|\bLambdaInvalidResponse\b`)
	// lambdaInvocationURIRE is the function a gateway invokes, from its
	// "Endpoint request URI" or an integration's ARN.
	lambdaInvocationURIRE = regexp.MustCompile(`arn:aws:lambda:[\w-]+:\d+:function:([\w-]+)(?::([\w$-]+))?`)
	// proxyBodyRE is the gateway's trace of what the function returned.
	proxyBodyRE = regexp.MustCompile(`Endpoint response body before transformations: (\{.*\})\s*$`)
	// executionLogRE names an API Gateway execution log group.
	executionLogRE = regexp.MustCompile(`(?i)API-Gateway-Execution-Logs_(\w+)(?:/([\w-]+))?`)
)

// detectProxyResponseMalformed reads the gateway's own logs: the refused
// responses, the function it invoked and the body it was handed.
func detectProxyResponseMalformed(ev *Gathered, _ []Finding) []Finding {
	var (
		line, source, gateway, kind string
		count                       int
		at                          time.Time
		fn, qual, body              string
	)
	for set, t := range incidentTemplates(ev) {
		l := templateLine(t, malformedProxyRE)
		if l == "" {
			continue
		}
		count += t.Incident
		if line == "" {
			line, source, at = strings.TrimSpace(l), orWord(t.Source, set.Source), firstOf(t.FirstIncident, t.FirstSeen)
			kind = "API Gateway Lambda proxy integration"
			gateway = "API Gateway's execution log"
			if m := findSubmatch(executionLogRE, set.Source+" "+t.Source); m != nil {
				gateway = "the execution log of API Gateway " + m[1]
				if m[2] != "" {
					gateway += " (stage " + m[2] + ")"
				}
			}
			if strings.Contains(strings.ToLower(l), "lambdainvalidresponse") {
				kind, gateway = "load balancer's Lambda target", "the load balancer's access log (error reason LambdaInvalidResponse)"
			}
		}
	}
	if line == "" {
		return nil
	}
	// The function invoked and the response it returned, from the same
	// gateway's logs (or an integration's ARN on the refused line).
	for _, set := range ev.Logs {
		for _, t := range set.Templates {
			for _, l := range []string{t.Example, t.Last} {
				if fn == "" {
					if m := findSubmatch(lambdaInvocationURIRE, l); m != nil && (strings.Contains(l, "/invocations") || matchLine(malformedProxyRE, l)) {
						fn, qual = m[1], m[2]
					}
				}
				if body == "" {
					if m := findSubmatch(proxyBodyRE, l); m != nil {
						body = m[1]
					}
				}
			}
		}
	}
	// A direct invoke of the function handed over prints its response.
	for _, c := range ev.Commands {
		if body != "" {
			break
		}
		if !strings.Contains(c.Command, "lambda invoke") {
			continue
		}
		for _, l := range c.Lines {
			if t := strings.TrimSpace(l); strings.HasPrefix(t, `{"statusCode"`) || strings.HasPrefix(t, `{"body"`) {
				body = t
				break
			}
		}
	}
	subject := fn
	if subject == "" {
		subject = ev.Scope.Service
	}
	if subject == "" {
		return nil
	}
	f := Finding{Kind: KindProxyResponseMalformed, Subject: subject, Object: "function " + subject, Severity: SevCritical, Weight: 0.9,
		Source: SrcCloudWatch, Time: at}
	f.setFact("line", line)
	f.setFact("count", fmt.Sprint(count))
	f.setFact("gateway", gateway)
	f.setFact("gateway_kind", kind)
	f.Evidence = append(f.Evidence, fmt.Sprintf("%s (%s): %s — %d requests refused from %s", gateway, source, quote(line, 200), count, ts(at)))
	if fn != "" {
		inv := fn
		if qual != "" {
			inv += ":" + qual
		}
		f.Evidence = append(f.Evidence, fmt.Sprintf("the gateway invokes the Lambda function %s", inv))
	}
	if why := proxyBodyWhy(body); why != "" {
		f.setFact("why", why)
		f.Evidence = append(f.Evidence, fmt.Sprintf("the response the function returned: %s (%s)", quote(body, 200), why))
	}
	f.Summary = fmt.Sprintf("%s returns a malformed Lambda proxy response (%d requests answered 502)", subject, count)
	return []Finding{f}
}

// proxyBodyWhy says what is wrong with a proxy response the function
// returned, "" when it cannot tell.
func proxyBodyWhy(body string) string {
	if body == "" {
		return ""
	}
	var r map[string]any
	if json.Unmarshal([]byte(body), &r) != nil {
		return ""
	}
	var why []string
	if b, ok := r["body"]; ok {
		switch b.(type) {
		case string, nil:
		case map[string]any:
			why = append(why, "its body is a JSON object, not a string (the payload was not serialised with JSON.stringify / json.dumps)")
		case []any:
			why = append(why, "its body is a JSON array, not a string")
		default:
			why = append(why, "its body is not a string")
		}
	}
	if s, ok := r["statusCode"]; !ok {
		why = append(why, "it has no statusCode")
	} else if _, num := s.(float64); !num {
		why = append(why, "its statusCode is not a number")
	}
	if h, ok := r["headers"].(map[string]any); ok {
		for k, v := range h {
			if _, str := v.(string); !str {
				why = append(why, fmt.Sprintf("its header %s is not a string", k))
				break
			}
		}
	}
	return strings.Join(why, "; ")
}
