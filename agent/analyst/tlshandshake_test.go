package analyst

import (
	"strings"
	"testing"
)

func TestTLSHandshake(t *testing.T) {
	testLines(t, tlsHandshake, []lineCase{
		{`Get "https://ledger.shop.svc:8443/entries": tls: failed to verify certificate: x509: certificate signed by unknown authority`, KindTLS},
		{`requests.exceptions.SSLError: HTTPSConnectionPool(host='ledger', port=8443): Max retries exceeded with url: /entries (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self signed certificate in certificate chain (_ssl.c:1006)')))`, KindTLS},
		{`http: TLS handshake error from 10.0.3.17:51234: remote error: tls: bad certificate`, KindTLS},
		{`x509: certificate has expired or is not yet valid`, KindCertificate},
		{`GET /healthz 200 1ms`, ""},
	})
	h := &Hypothesis{Kind: KindTLS, Subject: "ledger", Primary: []*Finding{{Kind: KindTLS, Subject: "ledger",
		Facts: map[string]string{"caller": "checkout", "target": "ledger", "line": "tls: failed to verify certificate: x509: certificate signed by unknown authority"}}}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "TLS handshakes from checkout to ledger fail (certificate verify failed)") || !strings.Contains(d, "unknown authority") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "Fix TLS between checkout and ledger") {
		t.Errorf("recommendations %v", recs)
	}
}
