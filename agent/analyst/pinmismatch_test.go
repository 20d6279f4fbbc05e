package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Pin failures as TrustKit's reports (with the served chain), OkHttp's
// CertificatePinner and a TrustKit breadcrumb print them; openssl
// s_client's chain gives the intermediate when the report does not. A
// report whose validation succeeded is not a failure.
func TestDetectPinMismatch(t *testing.T) {
	rep := func(l string, n int) []string {
		var out []string
		for range n {
			out = append(out, l)
		}
		return out
	}
	sClient := evidence.CommandOutput{Command: "echo | openssl s_client -connect api.example.app:443 -servername api.example.app", Lines: []string{
		"Certificate chain",
		" 0 s:CN = api.example.app",
		"   i:C = US, O = Let's Encrypt, CN = E6",
		"   v:NotBefore: Nov 13 07:53:40 2026 GMT; NotAfter: Feb 11 07:53:39 2027 GMT",
	}}
	cases := []struct {
		name  string
		lines []string
		cmds  []evidence.CommandOutput
		inter string // "-" for no finding
	}{
		{"TrustKit report", rep(`INFO pin_report received {"app-bundle-id":"app.example.ios","trustkit-version":"3.0.3","hostname":"api.example.app","known-pins":["pin-sha256=\"K7rZ=\""],"validation-result":1,"served-certificate-chain-subjects":["CN=api.example.app","CN=R11,O=Let's Encrypt,C=US","CN=ISRG Root X1,O=Internet Security Research Group,C=US"]}`, 4), nil, "Let's Encrypt R11"},
		{"OkHttp with openssl's chain", rep(`E/OkHttp: javax.net.ssl.SSLPeerUnverifiedException: Certificate pinning failure!`, 5), []evidence.CommandOutput{sClient}, "Let's Encrypt E6"},
		{"TrustKit breadcrumb", rep(`breadcrumb: TrustKit: Pin validation failed for api.example.app`, 3), nil, ""},
		{"validation succeeded", rep(`pin_report {"validation-result":0,"hostname":"api.example.app"}`, 5), nil, "-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: []LogSet{minedSet("mobile-telemetry", false, 0, c.lines...)}, Commands: c.cmds, Window: win, Scope: Scope{Service: "api-gateway"}}
			want := "api-gateway"
			if c.inter == "-" {
				want = ""
			}
			f := onlyFinding(t, detectPinMismatch(ev, nil), want)
			if f == nil {
				return
			}
			if f.fact("intermediate") != c.inter {
				t.Fatalf("intermediate %q, want %q", f.fact("intermediate"), c.inter)
			}
			h := &Hypothesis{Kind: KindPinMismatch, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "pinning", c.inter)
			if recs := recommend(h, Scope{}); len(recs) < 2 {
				t.Errorf("recommendations %v", recs)
			}
			ch := &Finding{Kind: KindInfraChange, Subject: "api-gateway", Summary: "cert-manager renewed the certificate"}
			if !pinMismatch.fitsChange(h, ch) {
				t.Errorf("a renewal not taken for the change")
			}
		})
	}
}
