package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// networkChanges are changes as the change sources word them, and whether
// a network-path cause is produced by them.
var networkChanges = []struct {
	c    Finding
	fits bool
}{
	{Finding{Kind: KindInfraChange, Summary: "NetworkPolicy shop/deny-egress created"}, true},
	{Finding{Kind: KindConfigChange, Facts: map[string]string{"description": "security group sg-0a1b2c rule removed: egress 0.0.0.0/0 tcp/5432"}}, true},
	{Finding{Kind: KindDeploy, Summary: "deployment checkout image checkout:2.4.0 (egress proxy settings)"}, false},
	{Finding{Kind: KindConfigChange, Summary: "ConfigMap checkout-config changed: LOG_LEVEL"}, false},
}

func TestDNSFailure(t *testing.T) {
	testLines(t, dnsResolution, []lineCase{
		{`dial tcp: lookup payments.shop.svc.cluster.local on 10.96.0.10:53: no such host`, KindDNS},
		{`java.net.UnknownHostException: inventory-db: Name or service not known`, KindDNS},
		{`Error: getaddrinfo ENOTFOUND ledger.internal`, KindDNS},
		{`socket.gaierror: [Errno -3] Temporary failure in name resolution`, KindDNS},
		{`GET /api/hosts 200 12ms`, ""},
		// Spring's logger of unmapped paths is not Node's ENOTFOUND.
		{`2026-12-08T16:02:46.127Z  WARN 1 --- [inventory-service] [nio-8080-exec-5] o.s.web.servlet.PageNotFound                  : No mapping for GET /metrics`, ""},
	})
	h := &Hypothesis{Kind: KindDNS, Subject: "payments", Primary: []*Finding{{Kind: KindDNS, Subject: "payments",
		Facts: map[string]string{"caller": "checkout", "target": "payments.shop.svc.cluster.local", "line": `dial tcp: lookup payments.shop.svc.cluster.local on 10.96.0.10:53: no such host`}}}}
	d := describe(h, Scope{})
	if !strings.Contains(d, "DNS resolution fails for payments.shop.svc.cluster.local (no such host) in checkout") {
		t.Errorf("description %q", d)
	}
	if len(recommend(h, Scope{})) == 0 {
		t.Errorf("no recommendations")
	}
	for _, c := range networkChanges {
		if got := dnsResolution.fitsChange(h, &c.c); got != c.fits {
			t.Errorf("fitsChange(%s %q) = %v", c.c.Kind, c.c.Summary+c.c.fact("description"), got)
		}
	}
}

// A short name that does not resolve in the caller's namespace while a
// Service of that name lives in another is the caller's name, not the DNS:
// the short name resolves only inside the Service's own namespace. Each
// runtime's form of the refusal names the host.
func TestDNSShortNameOtherNamespace(t *testing.T) {
	svc := func(ns, name, typ, ext string) ServiceState {
		s := ServiceState{}
		s.Service.Namespace, s.Service.Name = ns, name
		s.Service.Spec.Type = corev1.ServiceType(typ)
		s.Service.Spec.ExternalName = ext
		return s
	}
	k := K8sEvidence{
		Services: []ServiceState{svc("checkout", "cart-api", "ClusterIP", "")},
		CalledServices: []ServiceState{svc("cache", "redis", "ClusterIP", ""), svc("shop", "redis", "ExternalName", "redis.cache.svc.cluster.local"),
			svc("data", "orders-db", "ClusterIP", "")},
	}
	for _, c := range []struct {
		line, fqdn string
		alias      bool
	}{
		{`{"level":50,"err":{"message":"getaddrinfo ENOTFOUND redis","code":"ENOTFOUND"},"msg":"redis connection error"}`, "redis.cache.svc.cluster.local", true},
		{`dial tcp: lookup redis on 10.96.0.10:53: no such host`, "redis.cache.svc.cluster.local", true},
		{`redis.exceptions.ConnectionError: Error -2 connecting to redis:6379. Name or service not known.`, "", false}, // no host named by the resolver
		{`Caused by: java.net.UnknownHostException: orders-db: Name or service not known`, "orders-db.data.svc.cluster.local", false},
		{`curl: (6) Could not resolve host: orders-db`, "orders-db.data.svc.cluster.local", false},
		// a temporary failure says nothing about the name
		{`Error: getaddrinfo EAI_AGAIN redis`, "", false},
		// the caller's own namespace has the name: the DNS itself fails
		{`dial tcp: lookup cart-api on 10.96.0.10:53: no such host`, "", false},
		// a full name is markMissingService's
		{`dial tcp: lookup redis.cache.svc.cluster.local on 10.96.0.10:53: no such host`, "", false},
	} {
		f := &Finding{Kind: KindDNS, Namespace: "checkout", Weight: 0.5, Facts: map[string]string{"line": c.line}}
		markMissingService(f, k)
		if got := f.fact("service_fqdn"); got != c.fqdn {
			t.Errorf("%s: fqdn %q, want %q", c.line, got, c.fqdn)
			continue
		}
		if c.fqdn == "" {
			continue
		}
		d := f.fact("other_namespace")
		if !strings.Contains(d, "namespace checkout has no Service") || strings.Contains(d, "ExternalName") != c.alias {
			t.Errorf("%s: %q", c.line, d)
		}
		if f.Weight < 0.9 || len(f.Evidence) == 0 {
			t.Errorf("%s: weight %v evidence %q", c.line, f.Weight, f.Evidence)
		}
	}
	// the caller's namespace not listed: nothing is concluded
	f := &Finding{Kind: KindDNS, Namespace: "checkout", Facts: map[string]string{"line": `getaddrinfo ENOTFOUND redis`}}
	markMissingService(f, K8sEvidence{CalledServices: k.CalledServices})
	if f.fact("other_namespace") != "" {
		t.Errorf("concluded without the caller's namespace: %q", f.fact("other_namespace"))
	}
}
