package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCORSRejected reads preflights sent by hand with curl (-i and -v
// output, headers in either quoting, the method as -X or --request) and
// compares what they asked with what the answer allowed: headers missing
// from Access-Control-Allow-Headers, another origin, a method not
// allowed; an answer that allows everything asked, or a curl that is no
// preflight, is not this cause.
func TestCORSRejected(t *testing.T) {
	w := testWindow()
	cmd := func(c string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: c, Run: c, ExitCode: -1, Lines: lines}
	}
	preflight := `curl -si -X OPTIONS https://api.example.io/v2/invoices -H 'Origin: https://app.example.io' -H 'Access-Control-Request-Method: GET' -H 'Access-Control-Request-Headers: authorization,x-client-version,x-request-id'`
	nginxDefault := []string{"HTTP/2 204", "access-control-allow-origin: https://app.example.io", "access-control-allow-credentials: true",
		"access-control-allow-methods: GET, PUT, POST, DELETE, PATCH, OPTIONS",
		"access-control-allow-headers: DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization", "access-control-max-age: 1728000"}
	verbose := cmd(`curl -v --request OPTIONS "https://api.example.io/orders" --header "Origin: https://shop.example.io" --header "Access-Control-Request-Method: DELETE"`,
		"> OPTIONS /orders HTTP/1.1", "> Origin: https://shop.example.io", "< HTTP/1.1 200 OK", "< Access-Control-Allow-Origin: https://shop.example.io", "< Access-Control-Allow-Methods: GET,POST,OPTIONS", "< Access-Control-Allow-Headers: *")
	otherOrigin := cmd(`curl -i -X OPTIONS https://api.example.io/v1/me -H "Origin: https://beta.example.io" -H "Access-Control-Request-Method: POST" -H "Access-Control-Request-Headers: content-type"`,
		"HTTP/1.1 204 No Content", "Access-Control-Allow-Origin: https://app.example.io", "Access-Control-Allow-Headers: Content-Type, Authorization", "Vary: Origin")
	allowed := cmd(`curl -si -X OPTIONS https://api.example.io/v2/invoices -H 'Origin: https://app.example.io' -H 'Access-Control-Request-Method: GET' -H 'Access-Control-Request-Headers: Authorization, Content-Type'`, nginxDefault...)
	plain := cmd(`curl -si https://api.example.io/v2/me -H 'Origin: https://app.example.io'`, "HTTP/2 200", "access-control-allow-origin: https://app.example.io")
	cases := []struct {
		name string
		cmd  evidence.CommandOutput
		says []string
	}{
		{"headers the ingress-nginx default list lacks", cmd(preflight, nginxDefault...), []string{"x-client-version, x-request-id", "Access-Control-Allow-Headers does not list", "https://app.example.io"}},
		{"a method not allowed, curl -v", verbose, []string{"Access-Control-Allow-Methods does not list DELETE"}},
		{"another origin", otherOrigin, []string{`Access-Control-Allow-Origin is "https://app.example.io"`, "https://beta.example.io"}},
		{"everything asked is allowed", allowed, nil},
		{"not a preflight", plain, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectCORSRejected(&Gathered{Commands: []evidence.CommandOutput{c.cmd}, Window: w, Scope: Scope{Service: "api-gateway"}}, nil)
			wantWrittenOn(t, KindCORSRejected, "api-gateway", fs, c.says)
		})
	}
}
