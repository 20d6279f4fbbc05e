package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTLSMismatchLines reads each side's own words for a connection whose
// ends disagree on TLS, and leaves certificate failures to the handshake
// rule.
func TestTLSMismatchLines(t *testing.T) {
	testLines(t, tlsMismatch, []lineCase{
		// gRPC-Go dialing a TLS port in plaintext.
		{`{"level":"error","caller":"ledger/client.go:77","error":"rpc error: code = Unavailable desc = connection error: desc = \"error reading server preface: http2: frame too large\"","message":"post failed"}`, KindTLSMismatch},
		// The gRPC-Go server on the other end.
		{`2026/11/25 13:29:24 WARNING: [core] [Server #1 ListenSocket #2]grpc: Server.Serve failed to complete security handshake from "10.42.7.31:55819": tls: first record does not look like a TLS handshake`, KindTLSMismatch},
		// Go net/http server; nginx.
		{`2026/11/25 13:29:24 http: TLS handshake error from 10.1.2.3:51234: tls: first record does not look like a TLS handshake`, KindTLSMismatch},
		{`10.1.2.3 - - [25/Nov/2026:13:29:24 +0000] "GET / HTTP/1.1" 400 255 "-" "curl/8.5.0" "The plain HTTP request was sent to HTTPS port"`, KindTLSMismatch},
		// A TLS client at a plaintext port: Python requests, Go.
		{`requests.exceptions.SSLError: HTTPSConnectionPool(host='billing', port=8080): Max retries exceeded (Caused by SSLError(SSLError(1, '[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)')))`, KindTLSMismatch},
		{`level=error msg="call failed" err="Get \"https://billing:8080/v1\": http: server gave HTTP response to HTTPS client"`, KindTLSMismatch},
		// No common version: Java, OpenSSL, Go, .NET.
		{`javax.net.ssl.SSLHandshakeException: Received fatal alert: protocol_version`, KindTLSMismatch},
		{`javax.net.ssl.SSLHandshakeException: No appropriate protocol (protocol is disabled or cipher suites are inappropriate)`, KindTLSMismatch},
		{`40F7B2D1C27F0000:error:0A00042E:SSL routines:ssl3_read_bytes:tlsv1 alert protocol version:../ssl/record/rec_layer_s3.c:1605:SSL alert number 70`, KindTLSMismatch},
		{`level=error msg="dial" err="remote error: tls: protocol version not supported"`, KindTLSMismatch},
		{`System.Security.Authentication.AuthenticationException: Authentication failed because the remote party sent a TLS alert: 'ProtocolVersion'.`, KindTLSMismatch},
		// Near misses: a certificate the client does not trust.
		{`x509: certificate signed by unknown authority`, KindTLS},
		{`javax.net.ssl.SSLHandshakeException: PKIX path building failed`, KindTLS},
	})
}

// TestTLSMismatchPaired follows a client's failure to the other end (the
// service whose lines say it received plaintext, else the host the
// client's line names) and to the change that moved that end's TLS.
func TestTLSMismatchPaired(t *testing.T) {
	grpcClient := `{"level":"error","caller":"ledger/client.go:77","error":"rpc error: code = Unavailable desc = connection error: desc = \"error reading server preface: http2: frame too large\"","message":"post failed"}`
	grpcServer := `2026/11/25 13:29:24 WARNING: [core] [Server #1 ListenSocket #2]grpc: Server.Serve failed to complete security handshake from "10.42.7.31:55819": tls: first record does not look like a TLS handshake`
	javaClient := `Caused by: org.springframework.web.client.ResourceAccessException: I/O error on POST request for "https://gl-gateway.corp.example.net/api/v1/batch": Received fatal alert: protocol_version; nested exception is javax.net.ssl.SSLHandshakeException: Received fatal alert: protocol_version`
	pyClient := `requests.exceptions.SSLError: HTTPSConnectionPool(host='stock-api.shop.svc', port=8080): Max retries exceeded with url: /v1/items (Caused by SSLError(SSLError(1, '[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)')))`
	cases := []struct {
		name           string
		sets           []LogSet
		changes        []evidence.Change
		client, target string
		mode, change   string
	}{
		{"gRPC plaintext client, the server's own lines, its TLS deploy", []LogSet{
			minedSet("orders", false, 0, grpcClient),
			minedSet("ledger", false, 0, grpcServer),
		}, []evidence.Change{
			{Timestamp: win.Start.Add(-30 * time.Minute), Service: "ledger", Kind: "deploy", Revision: "2.0.0", Description: "ledger 2.0.0: serve gRPC over TLS"},
			{Timestamp: win.Start.Add(-20 * time.Minute), Service: "orders", Kind: "config", Revision: "cfg-9", Description: "orders: FEATURE_X on"},
		}, "orders", "ledger", "plaintext", "serve gRPC over TLS"},
		{"Java client, no common version, the host's hardening", []LogSet{
			minedSet("gl-export", false, 0, javaClient),
		}, []evidence.Change{
			{Timestamp: win.Start.Add(-40 * time.Minute), Service: "gl-gateway", Kind: "infra", Revision: "baseline 3", Description: "CIS baseline: ssl_protocols TLSv1.3 only"},
		}, "gl-export", "gl-gateway", "version", "ssl_protocols"},
		{"Python TLS client at a plaintext port, no change", []LogSet{
			minedSet("checkout", false, 0, pyClient),
			minedSet("stock-api", false, 0, `INFO listening on :8080`),
		}, nil, "checkout", "stock-api", "tls", ""},
	}
	for _, c := range cases {
		ev := &Gathered{Logs: c.sets, Window: win, Changes: c.changes}
		found := DetectLogs(c.sets, win)
		tlsMismatch.detect(ev, found)
		var f *Finding
		for i := range found {
			if found[i].Kind == KindTLSMismatch && found[i].Subject == c.client {
				f = &found[i]
			}
		}
		if f == nil {
			t.Errorf("%s: no finding of %s in %v", c.name, c.client, found)
			continue
		}
		if f.fact("tls_target") != c.target || f.fact("tls_mode") != c.mode || !strings.Contains(f.fact("tls_change"), c.change) || c.change == "" && f.fact("tls_change") != "" {
			t.Errorf("%s: target %q mode %q change %q", c.name, f.fact("tls_target"), f.fact("tls_mode"), f.fact("tls_change"))
		}
		h := &Hypothesis{Kind: KindTLSMismatch, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
		wantDescribed(t, h, Scope{}, c.client, c.target, c.change)
	}
}
