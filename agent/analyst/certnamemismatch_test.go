package analyst

import (
	"strings"
	"testing"
)

// TestCertNameMismatch reads hostname verification failures as the
// clients print them, with the host dialed and the names the certificate
// holds, and leaves an expired certificate and an unknown authority to
// their own rules.
func TestCertNameMismatch(t *testing.T) {
	node := `{"level":50,"time":1795759357410,"msg":"ledger lookup failed","err":{"type":"Error","message":"Hostname/IP does not match certificate's altnames: Host: ledger.shop.svc. is not in the cert's altnames: DNS:ledger-api.shop.svc, DNS:ledger-api.shop.svc.cluster.local","code":"ERR_TLS_CERT_ALTNAME_INVALID","host":"ledger.shop.svc"}}`
	goLine := `level=error msg="call failed" err="Get \"https://ledger.shop.svc:8443/v1/entries\": tls: failed to verify certificate: x509: certificate is valid for ledger-api.shop.svc, ledger-api.shop.svc.cluster.local, not ledger.shop.svc"`
	testLines(t, certNameMismatch, []lineCase{
		{node, KindCertNameMismatch},
		{goLine, KindCertNameMismatch},
		// Java (JSSE), Python, curl, .NET
		{`javax.net.ssl.SSLHandshakeException: No subject alternative DNS name matching ledger.shop.svc found.`, KindCertNameMismatch},
		{`requests.exceptions.SSLError: HTTPSConnectionPool(host='ledger.shop.svc', port=8443): Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, certificate is not valid for 'ledger.shop.svc'. (_ssl.c:1000)")))`, KindCertNameMismatch},
		{`curl: (60) SSL: no alternative certificate subject name matches target host name 'ledger.shop.svc'`, KindCertNameMismatch},
		{`System.Security.Authentication.AuthenticationException: The remote certificate is invalid according to the validation procedure: RemoteCertificateNameMismatch`, KindCertNameMismatch},
		// Near misses: an expired certificate, an unknown authority.
		{`x509: certificate has expired or is not yet valid: current time 2026-11-27T06:02:37Z is after 2026-11-27T06:00:00Z`, KindCertificate},
		{`tls: failed to verify certificate: x509: certificate signed by unknown authority`, KindTLS},
	})
	for _, c := range []struct{ line, host, names string }{
		{node, "ledger.shop.svc", "ledger-api.shop.svc, ledger-api.shop.svc.cluster.local"},
		{goLine, "ledger.shop.svc", "ledger-api.shop.svc, ledger-api.shop.svc.cluster.local"},
		{`curl: (60) SSL: no alternative certificate subject name matches target host name 'ledger.shop.svc'`, "ledger.shop.svc", ""},
	} {
		if got := dialedHost(c.line); got != c.host {
			t.Errorf("dialedHost(%q) = %q, want %q", c.line, got, c.host)
		}
		if got := certNames(c.line); got != c.names {
			t.Errorf("certNames(%q) = %q, want %q", c.line, got, c.names)
		}
	}
	h := &Hypothesis{Kind: KindCertNameMismatch, Subject: "notifier",
		Primary: []*Finding{{Kind: KindCertNameMismatch, Subject: "notifier", Facts: map[string]string{"caller": "notifier", "line": goLine}}}}
	wantDescribed(t, h, Scope{}, "hostname verification", "dials ledger.shop.svc", "subject alternative names are ledger-api.shop.svc", "not expired")
	if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "dnsNames") {
		t.Errorf("recommendations %v do not start with making the names agree", recs)
	}
}
