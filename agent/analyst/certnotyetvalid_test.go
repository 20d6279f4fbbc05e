package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A certificate refused as not yet valid, as TLS libraries print it (Go's
// "current time … is before …", Python's and curl's OpenSSL message,
// Java's CertificateNotYetValidException, Node's CERT_NOT_YET_VALID,
// rustls' NotValidYet), with or without a host whose time service reports
// its clock unsynchronised (timedatectl, chronyc tracking). An expired
// certificate ("is after") and a refusal of another kind are not it.
func TestCertNotYetValid(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 35, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	timedatectl := evidence.CommandOutput{Host: "ca-02", Run: "timedatectl", Lines: []string{
		"               Local time: Fri 2026-11-27 09:33:41 CST",
		"           Universal time: Fri 2026-11-27 15:33:41 UTC",
		"                Time zone: America/Chicago (CST, -0600)",
		"System clock synchronized: no",
		"              NTP service: inactive",
		"          RTC in local TZ: yes",
	}}
	chrony := evidence.CommandOutput{Host: "pki-1", Run: "chronyc tracking", Lines: []string{
		"Reference ID    : 00000000 ()",
		"Stratum         : 0",
		"Leap status     : Not synchronised",
	}}
	synced := evidence.CommandOutput{Host: "ca-03", Run: "timedatectl", Lines: []string{
		"System clock synchronized: yes",
		"              NTP service: active",
	}}
	for _, tc := range []struct {
		name string
		line string
		cmds []evidence.CommandOutput
		want []string // nil: no finding
	}{
		{"go grpc client, issuer host unsynchronised and ahead",
			`{"level":"error","msg":"reserve stock failed","error":"rpc error: code = Unavailable desc = connection error: desc = \"transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-11-27T09:02:06Z is before 2026-11-27T15:01:42Z\""}`,
			[]evidence.CommandOutput{synced, timedatectl},
			[]string{"is not yet valid", "notBefore (2026-11-27T15:01:42Z) lies 6 h after", "(2026-11-27T09:02:06Z)", "the clock of ca-02 is not synchronised", "RTC in local TZ: yes", "reads 6 h ahead"}},
		{"python requests, chrony unsynchronised",
			`requests.exceptions.SSLError: HTTPSConnectionPool(host='billing.internal', port=443): Max retries exceeded with url: /v1/invoices (Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate is not yet valid (_ssl.c:1006)')))`,
			[]evidence.CommandOutput{chrony},
			[]string{"is not yet valid", "the clock of pki-1 is not synchronised (Leap status     : Not synchronised)"}},
		{"java, no host shown",
			`Caused by: java.security.cert.CertificateNotYetValidException: NotBefore: Fri Nov 27 15:01:42 UTC 2026`,
			nil,
			[]string{"its notBefore is 2026-11-27T15:01:42Z", "an issuer whose clock runs ahead"}},
		{"curl", `curl: (60) SSL certificate problem: certificate is not yet valid`, []evidence.CommandOutput{synced},
			[]string{"is not yet valid", "the issuer's time sync"}},
		{"node", `Error: certificate is not yet valid at TLSSocket.onConnectSecure (node:_tls_wrap:1674:34) { code: 'CERT_NOT_YET_VALID' }`, nil,
			[]string{"is not yet valid"}},
		{"rustls", `WARN hyper_util::client::legacy: error trying to connect: invalid peer certificate: NotValidYet`, nil,
			[]string{"is not yet valid"}},
		{"an expired certificate", `x509: certificate has expired or is not yet valid: current time 2026-11-27T09:02:06Z is after 2026-11-26T23:59:59Z`, []evidence.CommandOutput{timedatectl}, nil},
		{"a name mismatch", `x509: certificate is valid for ingress.local, not billing.internal`, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, _ := ClassifyLine(tc.line)
			f := Finding{Kind: kind, Subject: "billing", Time: now.Add(-30 * time.Minute), Weight: 0.9,
				Facts: map[string]string{"line": tc.line, "caller": "orders-api", "target": "billing:443"}}
			fs := detectCertNotYetValid(&Gathered{Window: w, Commands: tc.cmds}, []Finding{f})
			if tc.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if kind != KindCertificate {
				t.Fatalf("line classified %q, want %q", kind, KindCertificate)
			}
			g := onlyFinding(t, fs, "billing")
			if g.Kind != KindCertNotYetValid {
				t.Fatalf("kind %q", g.Kind)
			}
			h := &Hypothesis{Kind: g.Kind, Subject: g.Subject, Primary: []*Finding{g}}
			d := certNotYetValid.describe(h, Scope{})
			for _, s := range tc.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q:\n%s", s, d)
				}
			}
			if f.Facts["clock_host"] != "" {
				t.Errorf("the certificate finding's facts were changed")
			}
		})
	}
}
