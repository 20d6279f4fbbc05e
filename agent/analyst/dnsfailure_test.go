package analyst

import (
	"strings"
	"testing"
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
