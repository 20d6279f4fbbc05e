package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestTLSIntercepted compares the chains openssl s_client showed for one
// host: a leaf re-signed by an inspection proxy's CA beside the server's
// own verified chain is the client's proxy; the proxy's CA alone, two
// chains from one issuer, or a leaf with no chain listed are not.
func TestTLSIntercepted(t *testing.T) {
	viaProxy := evidence.CommandOutput{Command: "openssl s_client -proxy proxy.acme.local:8080 -connect api.example.com:443 -servername api.example.com </dev/null 2>/dev/null | grep -E '^ *[0-9] s:|^ *i:'", ExitCode: -1,
		Lines: []string{" 0 s:CN = api.example.com",
			"   i:C = US, ST = California, O = Zscaler Inc., OU = Zscaler Inc., CN = Zscaler Intermediate Root CA (zscaler.net) (t)",
			" 1 s:C = US, ST = California, O = Zscaler Inc., OU = Zscaler Inc., CN = Zscaler Intermediate Root CA (zscaler.net) (t)",
			"   i:C = US, ST = California, O = Zscaler Inc., OU = Zscaler Inc., CN = Zscaler Root CA"}}
	netskope := viaProxy
	netskope.Lines = []string{"Certificate chain", " 0 s:/CN=api.example.com", "   i:/C=US/O=Netskope Inc/OU=certadmin/CN=ca.acme.goskope.com", "---"}
	direct := evidence.CommandOutput{Command: "openssl s_client -connect api.example.com:443 -servername api.example.com </dev/null 2>/dev/null | grep -E '^ *[0-9] s:|^ *i:|Verify return'", ExitCode: -1,
		Lines: []string{" 0 s:CN = api.example.com", "   i:C = US, O = Let's Encrypt, CN = R11", " 1 s:C = US, O = Let's Encrypt, CN = R11",
			"   i:C = US, O = Internet Security Research Group, CN = ISRG Root X1", "Verify return code: 0 (ok)"}}
	dates := evidence.CommandOutput{Command: "openssl s_client -connect api.example.com:443 -servername api.example.com </dev/null 2>/dev/null | openssl x509 -noout -issuer -dates", ExitCode: -1,
		Lines: []string{"issuer=C = US, O = Let's Encrypt, CN = R11", "notBefore=Nov  4 06:12:40 2026 GMT", "notAfter=Feb  2 06:12:39 2027 GMT"}}
	zscalerIssued := direct // a server whose own issuer is that CA
	zscalerIssued.Lines = viaProxy.Lines
	release := evidence.Change{Timestamp: win.Start.Add(10 * time.Minute), Service: "api-gateway", Kind: "deploy", Description: "api-gateway: Envoy v1.30.7 -> v1.31.4"}
	cases := []struct {
		name string
		cmds []evidence.CommandOutput
		ca   string // "" for no finding
	}{
		{"Zscaler's chain beside the server's verified one", []evidence.CommandOutput{viaProxy, direct}, "CN = Zscaler Intermediate Root CA (zscaler.net) (t)"},
		{"Netskope, OpenSSL 1.1's slash form", []evidence.CommandOutput{direct, netskope}, "CN = ca.acme.goskope.com"},
		{"with the served certificate's dates", []evidence.CommandOutput{viaProxy, direct, dates}, "CN = Zscaler Intermediate Root CA (zscaler.net) (t)"},
		{"the proxy's chain alone", []evidence.CommandOutput{viaProxy}, ""},
		{"the server's own chain alone", []evidence.CommandOutput{direct}, ""},
		{"both chains from one issuer", []evidence.CommandOutput{viaProxy, zscalerIssued}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Changes: []evidence.Change{release}, Window: win, Scope: Scope{Service: "api-gateway", Namespace: "edge"}}
			f, ok := oneFinding(t, detectTLSIntercepted(ev, nil), c.ca != "")
			if !ok {
				return
			}
			if f.Subject != "api-gateway" || f.fact("intercepting_ca") != c.ca || f.fact("served") != "CN = R11" || f.fact("why") == "" {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			if withDates := len(c.cmds) == 3; withDates != (f.fact("cause_at") == "2026-11-04T06:12:40Z") {
				t.Errorf("served since %q", f.fact("cause_at"))
			}
			// The server's own pods are its own story, not consequences.
			h := &Hypothesis{Kind: KindTLSIntercepted, Subject: f.Subject, Primary: []*Finding{&f}}
			probe := &Finding{Kind: KindProbeFailure, Subject: "api-gateway", Source: SrcEvents}
			if !tlsIntercepted.unrelated(h, probe) || supports(h, probe) {
				t.Errorf("a readiness probe failure of the server supports the interception")
			}
			d := tlsIntercepted.describe(&Hypothesis{Kind: KindTLSIntercepted, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"not at fault", "inspecting proxy", "deploy of api-gateway", "verifies"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}
