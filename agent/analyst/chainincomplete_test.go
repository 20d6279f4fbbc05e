package analyst

import (
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestChainIncomplete reads openssl s_client outputs as an on-call
// engineer pastes them: a leaf alone with verify error 21 or 20 (the
// intermediate not sent) is the cause; a full chain, a self-signed leaf,
// an untrusted root sent with its chain, and a clean verification are not.
func TestChainIncomplete(t *testing.T) {
	const cmd = "openssl s_client -connect api.example.com:443 -servername api.example.com -showcerts </dev/null 2>&1 | grep -E 'depth|verify|s:|i:|Verify return'"
	leafOnly := []string{
		"depth=0 CN = api.example.com",
		"verify error:num=20:unable to get local issuer certificate",
		"verify return:1",
		"depth=0 CN = api.example.com",
		"verify error:num=21:unable to verify the first certificate",
		"verify return:1",
		" 0 s:CN = api.example.com",
		"   i:C = GB, ST = Greater Manchester, L = Salford, O = Sectigo Limited, CN = Sectigo RSA Domain Validation Secure Server CA",
		"Verify return code: 21 (unable to verify the first certificate)",
	}
	// OpenSSL 1.1's slash form, with verify code 20 only.
	leafOnlySlash := []string{
		"CONNECTED(00000003)",
		"depth=0 /CN=shop.example.org",
		"verify error:num=20:unable to get local issuer certificate",
		"---",
		"Certificate chain",
		" 0 s:/CN=shop.example.org",
		"   i:/C=US/O=Let's Encrypt/CN=R11",
		"---",
		"Verify return code: 20 (unable to get local issuer certificate)",
	}
	full := []string{
		"depth=2 C = US, O = Internet Security Research Group, CN = ISRG Root X1",
		"verify return:1",
		" 0 s:CN = api.example.com",
		"   i:C = US, O = Let's Encrypt, CN = R11",
		" 1 s:C = US, O = Let's Encrypt, CN = R11",
		"   i:C = US, O = Internet Security Research Group, CN = ISRG Root X1",
		"Verify return code: 0 (ok)",
	}
	selfSigned := []string{
		"depth=0 CN = api.example.com",
		"verify error:num=18:self-signed certificate",
		" 0 s:CN = api.example.com",
		"   i:CN = api.example.com",
		"Verify return code: 21 (unable to verify the first certificate)",
	}
	privateChain := []string{
		"depth=1 CN = Corp Issuing CA",
		"verify error:num=20:unable to get local issuer certificate",
		" 0 s:CN = api.example.com",
		"   i:CN = Corp Issuing CA",
		" 1 s:CN = Corp Issuing CA",
		"   i:CN = Corp Root CA",
		"Verify return code: 20 (unable to get local issuer certificate)",
	}
	var ing networkingv1.Ingress
	ing.Name, ing.Namespace = "partner-api", "partner"
	ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"api.example.com"}, SecretName: "api-example-com-tls"}}
	ing.Spec.Rules = []networkingv1.IngressRule{{Host: "api.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "partner-api"}}}}}}}}
	alert := Finding{Kind: KindTLS, Subject: "0.0.0.0", Time: win.Start.Add(12 * time.Minute), Evidence: []string{"logs ingress-nginx/error: unknown ca"}}
	alert.setFact("line", `2026/05/12 07:02:31 [info] 1184#1184: *9116647 SSL_do_handshake() failed (SSL: error:0A000418:SSL routines::tlsv1 alert unknown ca:SSL alert number 48) while SSL handshaking, client: 81.10.169.2, server: 0.0.0.0:443`)
	renewal := evidence.Change{Timestamp: win.Start.Add(11 * time.Minute), Service: "partner-api", Kind: "config",
		Description: "renewed api.example.com certificate: kubectl create secret tls api-example-com-tls --cert=api_example_com.crt --key=api.example.com.key --dry-run=client -o yaml | kubectl apply -f -"}
	cases := []struct {
		name    string
		command string
		lines   []string
		ings    []networkingv1.Ingress
		subject string // "" for no finding
		issuer  string
	}{
		{"leaf alone, verify 21, the Ingress names the Service", cmd, leafOnly, []networkingv1.Ingress{ing}, "partner-api", "CN = Sectigo RSA Domain Validation Secure Server CA"},
		{"leaf alone, OpenSSL 1.1 form, no Ingress: the service asked about", "openssl s_client -connect shop.example.org:443", leafOnlySlash, nil, "storefront", "CN = R11"},
		{"the full chain verifies", cmd, full, nil, "", ""},
		{"a self-signed leaf: no intermediate to send", cmd, selfSigned, nil, "", ""},
		{"a private CA's chain sent whole", cmd, privateChain, nil, "", ""},
		{"not an s_client output", "curl -v https://api.example.com/", leafOnly, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: []evidence.CommandOutput{{Command: c.command, Run: c.command, Lines: c.lines, ExitCode: -1}},
				K8s: K8sEvidence{Ingresses: c.ings}, Changes: []evidence.Change{renewal}, Window: win, Scope: Scope{Service: "storefront", Namespace: "partner"}}
			f, ok := oneFinding(t, detectChainIncomplete(ev, []Finding{alert}), c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("issuer") != c.issuer || f.fact("why") == "" || !f.Time.Equal(alert.Time) || f.fact("secret") != "api-example-com-tls" {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			d := chainIncomplete.describe(&Hypothesis{Kind: KindChainIncomplete, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range []string{"without its intermediate", "browsers", "api-example-com-tls"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			if !chainIncomplete.related(&Hypothesis{Kind: KindChainIncomplete, Subject: f.Subject}, &alert) {
				t.Errorf("the server's unknown-CA alerts are not related")
			}
		})
	}
}
