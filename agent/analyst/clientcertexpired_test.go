package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestWhoseCertificateExpired reads whose certificate expired from who
// says so, in real client logs: a peer's alert about the client's own
// certificate (Go, OpenSSL/Python, Java, Node, rustls) is the client's
// certificate; the client's own verification failing on the server's is
// the server's.
func TestWhoseCertificateExpired(t *testing.T) {
	cases := []struct {
		line string
		want Kind
	}{
		{`{"level":"error","ts":"2026-06-03T06:00:19.514Z","msg":"post ledger entry","error":"Post \"https://ledger-api.ledger.svc.cluster.local:8443/v1/entries\": remote error: tls: expired certificate"}`, KindClientCertExpired},
		{`2026-06-03 06:00:19,514 ERROR settlement: HTTPSConnectionPool(host='clearing.bank.example', port=443): Max retries exceeded (Caused by SSLError(SSLError(1, '[SSL: SSLV3_ALERT_CERTIFICATE_EXPIRED] sslv3 alert certificate expired (_ssl.c:2580)')))`, KindClientCertExpired},
		{`2026-06-03 06:00:19.514 ERROR 1 --- [nio-8080-exec-4] c.e.l.LedgerClient : post failed: javax.net.ssl.SSLHandshakeException: Received fatal alert: certificate_expired`, KindClientCertExpired},
		{`Error: write EPROTO 40C8A1F6A17F0000:error:0A000415:SSL routines:ssl3_read_bytes:sslv3 alert certificate expired:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:1586:SSL alert number 45`, KindClientCertExpired},
		{`2026-06-03T06:00:19.514Z ERROR ledger_client: request failed: error trying to connect: received fatal alert: CertificateExpired`, KindClientCertExpired},
		// The client verifying the server's certificate: the server's.
		{`Post "https://ledger-api.ledger.svc.cluster.local:8443/v1/entries": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-06-03T06:00:19Z is after 2026-06-03T06:00:12Z`, KindCertificate},
		{`requests.exceptions.SSLError: HTTPSConnectionPool(host='clearing.bank.example', port=443): [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)`, KindCertificate},
		{`sun.security.validator.ValidatorException: PKIX path validation failed: java.security.cert.CertPathValidatorException: validity check failed caused by java.security.cert.CertificateExpiredException: NotAfter: Wed Jun 03 06:00:12 UTC 2026`, KindCertificate},
	}
	for _, c := range cases {
		if k, _ := ClassifyLine(c.line); k != c.want {
			t.Errorf("%s:\n got %q, want %q", c.line, k, c.want)
		}
	}
}

// TestClientCertExpiredDetail checks what the answer adds to a client
// rejected for an expired certificate: the certificate's notAfter read
// with openssl in its pod (the "why"), and its peer answering others.
func TestClientCertExpiredDetail(t *testing.T) {
	line := `{"level":"error","ts":"2026-03-14T10:00:19.514Z","msg":"post ledger entry","error":"Post \"https://ledger-api.ledger.svc.cluster.local:8443/v1/entries\": remote error: tls: expired certificate"}`
	onset := win.Start.Add(10 * time.Minute)
	rejected := Finding{Kind: KindClientCertExpired, Subject: "payments-gateway", Time: onset, Evidence: []string{"logs payments-gateway: " + line}}
	rejected.setFact("line", line)
	openssl := evidence.CommandOutput{Exec: true, Namespace: "payments", Pod: "payments-gateway-7b9d6c5f48-4kqzt",
		Run:   "sh -c 'openssl x509 -in /etc/ledger-client/tls.crt -noout -subject -issuer -dates'",
		Lines: []string{"subject=CN = payments-gateway, O = payments", "issuer=CN = Internal Services Intermediate CA G2", "notBefore=Dec 14 10:00:12 2025 GMT", "notAfter=Mar 14 10:00:12 2026 GMT"}}
	valid := openssl
	valid.Lines = []string{"notBefore=Mar  1 10:00:12 2026 GMT", "notAfter=May 30 10:00:12 2026 GMT"}
	other := openssl
	other.Pod = "billing-worker-5d8f7c9b6-x2m4q"
	peerLog := minedSet("ledger-api", false, 15*time.Minute, servedLines(`[2026-03-14T10:%02d:58.220Z] "POST /v1/entries HTTP/1.1" 201 - via_upstream - "-" 412 188 14 13 "-" "billing-worker/2.7.4" "4b1f0c9e-%d" "ledger-api.ledger.svc.cluster.local:8443" "127.0.0.1:8080"`, 4)...)
	cases := []struct {
		name     string
		cmds     []evidence.CommandOutput
		logs     []LogSet
		notAfter string
		serves   bool
	}{
		{"openssl in its pod shows it expired, the peer answers others", []evidence.CommandOutput{openssl}, []LogSet{peerLog}, "2026-03-14 10:00 UTC", true},
		{"the alert alone", nil, nil, "", false},
		{"its certificate is still valid for months: not read as the one", []evidence.CommandOutput{valid}, nil, "", false},
		{"another workload's certificate", []evidence.CommandOutput{other}, nil, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Logs: c.logs, Window: win}
			f, ok := oneFinding(t, detectClientCertExpired(ev, []Finding{rejected}), true)
			if !ok {
				return
			}
			if f.fact("peer") != "ledger-api" || f.fact("why") == "" || f.fact("not_after") != c.notAfter || (f.fact("peer_serves") != "") != c.serves {
				t.Fatalf("facts %v", f.Facts)
			}
			d := clientCertExpired.describe(&Hypothesis{Kind: KindClientCertExpired, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"client certificate that payments-gateway presents to ledger-api", "payments-gateway's own certificate, not ledger-api's"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if c.notAfter != "" && !strings.Contains(d, "/etc/ledger-client/tls.crt") {
				t.Errorf("description lacks the certificate's file: %s", d)
			}
		})
	}
}
