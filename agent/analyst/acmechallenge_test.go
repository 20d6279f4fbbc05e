package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReadACMEFailure reads cert-manager's Challenge status, its
// controller's log line (quotes escaped in err="…") and the CA's
// authorization error as they are printed; lines about a challenge that
// works are not failures.
func TestReadACMEFailure(t *testing.T) {
	cases := []struct {
		line string
		want acmeFailure
		ok   bool
	}{
		{`  Reason:      Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://shop.example.com/.well-known/acme-challenge/Vd0mXq2s': Get "http://shop.example.com/.well-known/acme-challenge/Vd0mXq2s": dial tcp 203.0.113.45:80: i/o timeout`,
			acmeFailure{domain: "shop.example.com", url: "http://shop.example.com/.well-known/acme-challenge/Vd0mXq2s", err: "dial tcp 203.0.113.45:80: i/o timeout", typ: "HTTP-01"}, true},
		{`E1125 09:13:14.417765       1 sync.go:208] "propagation check failed" err="failed to perform self check GET request 'http://www.shop.example.com/.well-known/acme-challenge/Lq7r': Get \"http://www.shop.example.com/.well-known/acme-challenge/Lq7r\": dial tcp 203.0.113.45:80: i/o timeout" logger="cert-manager.controller" resource_name="shop-example-com-tls-4-2877391840-880214077" resource_namespace="storefront" resource_kind="Challenge"`,
			acmeFailure{challenge: "shop-example-com-tls-4-2877391840-880214077", domain: "www.shop.example.com", url: "http://www.shop.example.com/.well-known/acme-challenge/Lq7r", err: "dial tcp 203.0.113.45:80: i/o timeout", typ: "HTTP-01"}, true},
		{`  Reason:      Waiting for HTTP-01 challenge propagation: wrong status code '404', expected '200'`, acmeFailure{}, false},
		{`E0304 10:01:02.000000       1 sync.go:190] "Failed to accept challenge" err="acme: authorization error for api.example.org: 400 urn:ietf:params:acme:error:connection: 198.51.100.7: Fetching http://api.example.org/.well-known/acme-challenge/abc: Timeout during connect (likely firewall problem)" resource_name="api-example-org-tls-1-1234567-7654321"`,
			acmeFailure{challenge: "api-example-org-tls-1-1234567-7654321", domain: "api.example.org", err: "400 urn:ietf:params:acme:error:connection: 198.51.100.7: Fetching http://api.example.org/.well-known/acme-challenge/abc: Timeout during connect (likely firewall problem)"}, true},
		{`  Reason:      Waiting for DNS-01 challenge propagation: DNS record for "example.net" not yet propagated`,
			acmeFailure{err: `DNS record for`, typ: "DNS-01"}, true},
		{`I1125 09:12:43.998104       1 pod.go:59] "found one existing HTTP01 solver pod" logger="cert-manager.controller.http01" resource_name="shop-example-com-tls-4-2877391840-3126589925"`, acmeFailure{}, false},
		{`  Reason:      Successfully authorized domain`, acmeFailure{}, false},
	}
	for _, c := range cases {
		got, ok := readACMEFailure(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("readACMEFailure(%.70q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestCertificateOfChallenge strips the revision and hashes cert-manager
// adds to a certificate's name.
func TestCertificateOfChallenge(t *testing.T) {
	for in, want := range map[string]string{
		"shop-example-com-tls-4-2877391840-3126589925": "shop-example-com-tls",
		"api-tls-12-1234567-7654321":                   "api-tls",
		"shop-example-com-tls":                         "",
		"cm-acme-http-solver-7xw2q":                    "",
	} {
		if got := certificateOfChallenge(in); got != want {
			t.Errorf("certificateOfChallenge(%q) = %q, want %q", in, got, want)
		}
	}
}

// acmeCommands is what a transcript hands over: the challenges, one
// described, the listeners of the load balancer (table or JSON), an
// outside curl and the solver answering inside.
func acmeCommands(listeners []string) []evidence.CommandOutput {
	cmds := []evidence.CommandOutput{
		{Command: "kubectl get challenges -n storefront", Lines: []string{
			"NAME                                            STATE     DOMAIN                 AGE",
			"shop-example-com-tls-4-2877391840-3126589925    pending   shop.example.com       24d",
			"shop-example-com-tls-4-2877391840-880214077     pending   www.shop.example.com   24d"}},
		{Command: "kubectl describe challenge shop-example-com-tls-4-2877391840-3126589925 -n storefront", Lines: []string{
			"Status:",
			"  Presented:   true",
			"  Reason:      Waiting for HTTP-01 challenge propagation: failed to perform self check GET request 'http://shop.example.com/.well-known/acme-challenge/Vd0m': Get \"http://shop.example.com/.well-known/acme-challenge/Vd0m\": dial tcp 203.0.113.45:80: i/o timeout",
			"  State:       pending"}},
		{Command: "kubectl exec -n storefront deploy/storefront -- curl -s -o /dev/null -w '%{http_code}\\n' http://cm-acme-http-solver-5bx8n.storefront.svc:8089/.well-known/acme-challenge/Vd0m",
			Exec: true, Target: "deploy/storefront", Run: "curl -s -o /dev/null -w '%{http_code}\\n' http://cm-acme-http-solver-5bx8n.storefront.svc:8089/.well-known/acme-challenge/Vd0m", Lines: []string{"200"}},
		{Command: "curl -sv -m 10 http://shop.example.com/.well-known/acme-challenge/Vd0m", Lines: []string{
			"*   Trying 203.0.113.45:80...", "* Connection timed out after 10001 milliseconds", "curl: (28) Connection timed out after 10001 milliseconds"}},
	}
	if listeners != nil {
		cmds = append(cmds, evidence.CommandOutput{Command: "aws elbv2 describe-listeners --load-balancer-arn arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/net/x/y", Lines: listeners})
	}
	return cmds
}

// TestDetectACMEChallenges: one finding per certificate with its domains
// and the pending age as onset; a load balancer without the challenge's
// port, or a change that cut the path, is the reason (weight up); with
// neither the finding restates the failure (state_only).
func TestDetectACMEChallenges(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 20, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	table := []string{"------------------------", "|   DescribeListeners  |", "+-------+--------------+", "| Port  |  Protocol    |",
		"+-------+--------------+", "|  443  |  TCP         |", "+-------+--------------+"}
	jsonOut := []string{`[`, `  {`, `    "Port": 443,`, `    "Protocol": "TLS"`, `  },`, `  {`, `    "Port": 80,`, `    "Protocol": "TCP"`, `  }`, `]`}
	change := evidence.Change{Timestamp: time.Date(2026, 10, 31, 16, 40, 0, 0, time.UTC), Service: "edge-nlb", Kind: "infra",
		Description: "terraform edge: public NLB listeners HTTPS only (drop TCP/80 listener and its security group rule)", Revision: "infra-edge#377"}
	cases := []struct {
		name      string
		listeners []string
		changes   []evidence.Change
		stateOnly bool
		want      []string
	}{
		{"listener table without port 80", table, nil, false, []string{"ACME HTTP-01 challenge for shop.example.com, www.shop.example.com", "i/o timeout", "no listener on port 80 (its listeners: 443)", "HTTP 200 from deploy/storefront", "Connection timed out"}},
		{"port 80 served, change names the listener", jsonOut, []evidence.Change{change}, false, []string{"infra-edge#377", "port 80 of 203.0.113.45 is not reachable"}},
		{"no reason shown", nil, nil, true, []string{"self check GET http://shop.example.com"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectACMEChallenges(acmeCommands(c.listeners), nil, c.changes, Scope{Namespace: "storefront"}, w)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			if f.Subject != "shop-example-com-tls" || (f.fact("state_only") == "true") != c.stateOnly || !f.Time.Equal(now.Add(-24*24*time.Hour)) {
				t.Errorf("subject %q state_only %q onset %s", f.Subject, f.fact("state_only"), f.Time)
			}
			if strings.Contains(strings.Join(c.listeners, ""), `"Port": 80`) && f.fact("listeners") != "" {
				t.Errorf("a listener on port 80 was reported missing: %s", f.fact("listeners"))
			}
			h := &Hypothesis{Kind: KindACMEChallenge, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
	// Nothing about challenges: nothing found.
	if fs := detectACMEChallenges([]evidence.CommandOutput{{Command: "kubectl get certificate", Lines: []string{"NAME   READY", "x   True"}}}, nil, nil, Scope{}, w); len(fs) != 0 {
		t.Errorf("findings without a failing challenge: %+v", fs)
	}
}

// TestACMEPresentDenied reads a DNS-01 challenge cert-manager cannot
// present because the DNS provider refuses its identity, in the Challenge's
// describe page, its -o yaml and cert-manager's log, and follows it to the
// identity's policy and the change that narrowed it.
func TestACMEPresentDenied(t *testing.T) {
	const denied = `failed to change Route 53 record set: operation error Route 53: ChangeResourceRecordSets, https response error StatusCode: 403, RequestID: 0e5d9a77, api error AccessDenied: User: arn:aws:sts::412345678901:assumed-role/eks-prod-cert-manager/17568 is not authorized to perform: route53:ChangeResourceRecordSets on resource: arn:aws:route53:::hostedzone/Z07458123NQ2KXAMPLE because no identity-based policy allows the route53:ChangeResourceRecordSets action`
	for _, c := range []struct{ name, line, typ string }{
		{"describe reason", "  Reason:      Error presenting challenge: " + denied, "DNS-01"},
		{"-o yaml reason", `  reason: 'Error presenting challenge: ` + denied + `'`, "DNS-01"},
		{"klog", `E0903 10:28:31.412907       1 sync.go:190] "error presenting challenge" err="` + denied + `" logger="cert-manager.controller" resource_name="partners-wildcard-4-1873520961-2207516455" type="DNS-01"`, "DNS-01"},
		{"Cloud DNS", `Error presenting challenge: googleapi: Error 403: Forbidden, forbidden`, "DNS-01"},
		{"rate limit", `Failed to create Order: 429 urn:ietf:params:acme:error:rateLimited: Error creating new order :: too many certificates already issued for "example.com"`, ""},
	} {
		a, ok := readACMEFailure(c.line)
		if !ok || a.err == "" || a.typ != c.typ {
			t.Errorf("%s: %+v %v", c.name, a, ok)
		}
	}
	get := evidence.CommandOutput{Command: "kubectl get certificaterequest,order,challenge -n edge", Lines: []string{
		"NAME                                                    APPROVED   DENIED   READY   ISSUER                 REQUESTOR   AGE",
		"certificaterequest.cert-manager.io/partners-wildcard-4  True                False   letsencrypt-prod-dns   system:sa   20h",
		"",
		"NAME                                                                          STATE     DOMAIN                          AGE",
		"challenge.acme.cert-manager.io/partners-wildcard-4-1873520961-1405538277      pending   sandbox.partners.example.com    20h",
		"challenge.acme.cert-manager.io/partners-wildcard-4-1873520961-2207516455      pending   partners.example.com            20h"}}
	describe := evidence.CommandOutput{Command: "kubectl describe challenge partners-wildcard-4-1873520961-2207516455 -n edge", Lines: []string{"  Reason:      Error presenting challenge: " + denied}}
	policy := evidence.CommandOutput{Command: "aws iam get-role-policy --role-name eks-prod-cert-manager --policy-name route53-dns01 --query PolicyDocument", Lines: strings.Split(`{
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": "route53:GetChange", "Resource": "arn:aws:route53:::change/*"},
        {"Effect": "Allow", "Action": ["route53:ChangeResourceRecordSets", "route53:ListResourceRecordSets"], "Resource": "arn:aws:route53:::hostedzone/Z0381245LAW7EXAMPLE"},
        {"Effect": "Allow", "Action": "route53:ListHostedZonesByName", "Resource": "*"}
    ]
}`, "\n")}
	iam := evidence.Change{Timestamp: win.Start.Add(-40 * time.Hour), Service: "cert-manager", Kind: "infra", Description: "terraform apply infra-live/prod/iam: eks-prod-cert-manager route53 policy resource narrowed to hostedzone/Z0381245LAW7EXAMPLE"}
	upgrade := evidence.Change{Timestamp: win.Start.Add(-30 * time.Minute), Service: "cert-manager", Kind: "deploy", Description: "helm upgrade cert-manager jetstack/cert-manager v1.15.3 -> v1.15.4 (patch release)"}
	fs := detectACMEChallenges([]evidence.CommandOutput{get, describe, policy}, nil, []evidence.Change{iam, upgrade}, Scope{Service: "cert-manager", Namespace: "edge"}, win)
	if len(fs) != 1 || fs[0].Subject != "partners-wildcard" {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.fact("denied") == "" || f.fact("state_only") != "" || !strings.Contains(f.fact("policy"), "only on arn:aws:route53:::hostedzone/Z0381245LAW7EXAMPLE") ||
		!strings.Contains(f.fact("change"), "narrowed") || f.fact("domains") != "partners.example.com, sandbox.partners.example.com" && f.fact("domains") != "sandbox.partners.example.com, partners.example.com" {
		t.Errorf("facts %v", f.Facts)
	}
	if !f.relates("cert-manager") {
		t.Error("the challenge is cert-manager's")
	}
	h := &Hypothesis{Kind: KindACMEChallenge, Subject: f.Subject, Primary: []*Finding{&f}}
	wantDescribed(t, h, Scope{}, "DNS-01", "AccessDenied", "policy")
}

// A challenge whose domains are not known is described without an empty
// "for": the answer names only what it knows.
func TestForDomainsNeverEmpty(t *testing.T) {
	for _, c := range []struct{ domains, want string }{
		{"", ""},
		{"  ", ""},
		{"api.example.com", " for api.example.com"},
		{"a.example.com, b.example.com", " for a.example.com, b.example.com"},
	} {
		if got := forDomains(c.domains); got != c.want {
			t.Errorf("forDomains(%q) = %q, want %q", c.domains, got, c.want)
		}
	}
}

// TestCertificateSecrets reads the Secret a certificate is stored in from
// the forms kubectl prints: a get of certificates alone or among other
// cert-manager kinds, a describe, a manifest.
func TestCertificateSecrets(t *testing.T) {
	cmds := []evidence.CommandOutput{
		{Command: "kubectl get certificate,certificaterequest -n edge", Lines: []string{
			"NAME                                       READY   SECRET             AGE",
			"certificate.cert-manager.io/api-tls        False   api-tls-secret     38m",
			"certificate.cert-manager.io/grpc-tls       True    grpc-tls           212d",
			"",
			"NAME                                              APPROVED   DENIED   READY   ISSUER             REQUESTOR   AGE",
			"certificaterequest.cert-manager.io/api-tls-1      True                False   letsencrypt-prod   system:sa   38m"}},
		{Command: "kubectl get certificates -n shop", Lines: []string{
			"NAME        READY   SECRET          AGE",
			"shop-cert   False   shop-tls        2d"}},
		{Command: "kubectl describe certificate wild -n edge", Lines: []string{
			"Name:         wild", "Spec:", "  Dns Names:", "    *.example.org", "  Secret Name:  wildcard-example-org"}},
		{Command: "kubectl get certificate docs -n web -o yaml", Lines: []string{
			"spec:", "  dnsNames:", "  - docs.example.com", "  secretName: docs-example-com-tls"}},
	}
	got := certificateSecrets(cmds)
	want := map[string]string{"api-tls": "api-tls-secret", "grpc-tls": "grpc-tls", "shop-cert": "shop-tls", "wild": "wildcard-example-org", "docs": "docs-example-com-tls"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("secret of %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["api-tls-1"]; ok {
		t.Errorf("a CertificateRequest is no certificate: %v", got)
	}
}

// TestACMENeverIssued checks that pods waiting for the Secret of a
// certificate whose challenge fails are its consequence (FailedMount or
// CreateContainerConfigError, as the kubelet words them), and that a
// denial naming no resource is read with its role and action.
func TestACMENeverIssued(t *testing.T) {
	const denied = `Failed to determine Route 53 hosted zone ID: AccessDenied: User: arn:aws:sts::412345678901:assumed-role/prod-dns01/1760432515 is not authorized to perform: route53:ListHostedZonesByName because no identity-based policy allows the route53:ListHostedZonesByName action`
	get := evidence.CommandOutput{Command: "kubectl get certificate,challenge -n web", Lines: []string{
		"NAME                                    READY   SECRET         AGE",
		"certificate.cert-manager.io/shop-cert   False   shop-tls       40m",
		"",
		"NAME                                                          STATE     DOMAIN             AGE",
		"challenge.acme.cert-manager.io/shop-cert-1-3927412085-1467735071   pending   shop.example.com   40m"}}
	describe := evidence.CommandOutput{Command: "kubectl describe challenge shop-cert-1-3927412085-1467735071 -n web", Lines: []string{"  Reason:      Error presenting challenge: " + denied}}
	fs := detectACMEChallenges([]evidence.CommandOutput{get, describe}, nil, nil, Scope{Namespace: "web"}, win)
	if len(fs) != 1 || fs[0].fact("secret") != "shop-tls" || !strings.Contains(fs[0].fact("denied"), "prod-dns01 the action route53:ListHostedZonesByName") {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	h := &Hypothesis{Kind: KindACMEChallenge, Subject: f.Subject, Primary: []*Finding{&f}}
	for _, c := range []struct {
		name string
		g    Finding
		want bool
	}{
		{"FailedMount event", Finding{Kind: KindConfigError, Subject: "shop", Facts: map[string]string{"missing": "secret shop-tls"},
			Evidence: []string{`event FailedMount on pod web/shop-7d9-x2: "MountVolume.SetUp failed for volume \"tls\" : secret \"shop-tls\" not found"`}}, true},
		{"CreateContainerConfigError", Finding{Kind: KindConfigError, Subject: "shop", Facts: map[string]string{"message": `secret "shop-tls" not found`}}, true},
		{"another secret", Finding{Kind: KindConfigError, Subject: "shop", Facts: map[string]string{"missing": "secret db-credentials"}}, false},
		{"not a pod waiting", Finding{Kind: KindCrashLoop, Subject: "shop", Facts: map[string]string{"message": `secret "shop-tls" not found`}}, false},
	} {
		if got := acmeChallenge.related(h, &c.g); got != c.want {
			t.Errorf("%s: related %v, want %v", c.name, got, c.want)
		}
		if c.want {
			h.Support = []*Finding{&c.g}
			wantDescribed(t, h, Scope{}, "was never issued", "Secret shop-tls does not exist", "pods of shop")
		}
	}
	r := &recommender{h: h}
	acmeChallenge.recommend(h, Scope{}, r)
	if len(r.recs) == 0 || !strings.Contains(r.recs[0].Action, "route53:ListHostedZonesByName to role prod-dns01") {
		t.Errorf("recommendations %+v", r.recs)
	}
}
