package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEdgeOriginCert pairs a CDN edge's 526 (a curl -v response, the error
// page's title, a Cloudflare Logpush record) with a check of the origin
// whose certificate fails verification, as curl, openssl s_client,
// openssl x509 and Go clients print it. A 526 without such a check, or a
// failing check without a 526, is not this cause.
func TestEdgeOriginCert(t *testing.T) {
	w := testWindow()
	at := w.Start.Add(12 * time.Minute)
	cmd := func(c string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: c, Run: c, ExitCode: -1, Lines: lines}
	}
	curlV := cmd("curl -sv -o /dev/null https://www.example.shop/", "* SSL certificate verify ok.", "> GET / HTTP/2", "< HTTP/2 526", "< server: cloudflare", "< cf-ray: 8e8f2a1c9b7d4e31-AMS")
	title := cmd("curl -s https://shop.example.org/ | grep -o '<title>[^<]*'", "<title>shop.example.org | 526: Invalid SSL certificate")
	curlOrigin := cmd("curl -sS -o /dev/null --resolve www.example.shop:443:203.0.113.20 https://www.example.shop/healthz",
		"curl: (60) SSL certificate problem: self-signed certificate", "More details here: https://curl.se/docs/sslcerts.html")
	sClient := cmd("openssl s_client -connect 203.0.113.20:443 -servername shop.example.org </dev/null",
		"CONNECTED(00000003)", "depth=0 CN = shop.example.org", "verify error:num=18:self-signed certificate", "verify return:1", "    Verify return code: 18 (self-signed certificate)")
	x509 := cmd("echo | openssl s_client -connect 203.0.113.20:443 2>/dev/null | openssl x509 -noout -subject -issuer -dates",
		"subject=CN=www.example.shop", "issuer=CN=www.example.shop", "notBefore=Sep  2 07:31:44 2026 GMT", "notAfter=Dec  1 07:31:44 2026 GMT")
	x509CA := cmd("openssl x509 -in origin.pem -noout -subject -issuer", "subject=CN=www.example.shop", "issuer=C=US, O=Let's Encrypt, CN=R11")
	goClient := cmd("kubectl exec -n shop deploy/checker -- /checker https://203.0.113.20", `Get "https://203.0.113.20": tls: failed to verify certificate: x509: certificate signed by unknown authority`)
	expired := cmd("curl -v https://origin.example.org/", "curl: (60) SSL certificate problem: certificate has expired")
	logpush := LogSet{Source: "cloudflare/http_requests.log", Origin: SrcLogs, HasBaseline: true, Templates: []analysis.LogTemplate{{
		Example: `{"EdgeStartTimestamp":"2026-05-01T11:12:23Z","RayID":"a2d84b09a8f5def8","ClientRequestHost":"www.example.shop","ClientRequestURI":"/","EdgeResponseStatus":526,"OriginResponseStatus":0,"OriginSSLProtocol":"none"}`,
		Count:   300, Incident: 300, FirstSeen: at, FirstIncident: at, LastSeen: w.End,
	}}}
	cases := []struct {
		name string
		cmds []evidence.CommandOutput
		logs []LogSet
		says []string
	}{
		{"curl -v 526 and curl's self-signed error", []evidence.CommandOutput{curlV, curlOrigin}, nil, []string{"526", "Full (strict)", "self-signed certificate"}},
		{"error page title and openssl s_client verify error", []evidence.CommandOutput{title, sClient}, nil, []string{"526", "self-signed"}},
		{"Logpush records and openssl x509 subject equal to issuer", []evidence.CommandOutput{x509}, []LogSet{logpush}, []string{"self-signed certificate (its issuer is its subject", "strict"}},
		{"a private CA in a Go client's words", []evidence.CommandOutput{curlV, goClient}, nil, []string{"authority the edge does not trust"}},
		{"an expired origin certificate", []evidence.CommandOutput{title, expired}, nil, []string{"an expired certificate"}},
		{"526 with an origin certificate a CA issued", []evidence.CommandOutput{curlV, x509CA}, nil, nil},
		{"a self-signed origin without a 526", []evidence.CommandOutput{curlOrigin, x509}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectEdgeOriginCert(&Gathered{Commands: c.cmds, Logs: c.logs, Window: w, Scope: Scope{Service: "storefront", Namespace: "shop"}}, nil)
			wantWrittenOn(t, KindEdgeOriginCert, "storefront", fs, c.says)
		})
	}
	// The setting tightened is the trigger; the origin's release is not.
	h := &Hypothesis{Kind: KindEdgeOriginCert}
	for text, want := range map[string]bool{
		`terraform apply cloudflare/zones: zone setting ssl = "strict" (was "full")`: true,
		"SSL/TLS encryption mode: Full -> Full (strict)":                             true,
		"storefront 7.12.0: new product gallery, image srcset":                       false,
	} {
		c := &Finding{Kind: KindInfraChange, Summary: text}
		c.setFact("description", text)
		if got := edgeOriginCert.fitsChange(h, c); got != want {
			t.Errorf("fitsChange(%q) = %v, want %v", text, got, want)
		}
	}
}
