package analyst

import (
	"strings"
	"testing"
)

func TestCertificateExpired(t *testing.T) {
	testLines(t, certificateExpired, []lineCase{
		{`Get "https://payments.internal:8443/v1/charge": x509: certificate has expired or is not yet valid: current time 2026-03-01T11:40:02Z is after 2026-02-28T23:59:59Z`, KindCertificate},
		{`javax.net.ssl.SSLHandshakeException: PKIX path validation failed: java.security.cert.CertificateExpiredException: NotAfter: Sat Feb 28 23:59:59 UTC 2026`, KindCertificate},
		{`Error: certificate has expired at TLSSocket.onConnectSecure (node:_tls_wrap:1659:34) { code: 'CERT_HAS_EXPIRED' }`, KindCertificate},
		{`x509: certificate signed by unknown authority`, KindTLS},
		{`session expired, please log in again`, ""},
	})
	h := &Hypothesis{Kind: KindCertificate, Subject: "checkout", Primary: []*Finding{{Kind: KindCertificate, Subject: "checkout",
		Facts: map[string]string{"target": "payments", "caller": "checkout", "not_after": "2026-02-28T23:59:59Z"}}}}
	wantDescribed(t, h, Scope{}, "the TLS certificate of payments has expired", "from checkout fail", "valid until 2026-02-28T23:59:59Z")
	if recs := recommend(h, Scope{}); len(recs) != 3 || !strings.Contains(recs[0].Action, "Renew the expired TLS certificate of payments") {
		t.Errorf("recommendations %v", recs)
	}
}
