package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestBypassesCluster reads NO_PROXY lists as platforms write them.
func TestBypassesCluster(t *testing.T) {
	cases := map[string]bool{
		"localhost,127.0.0.1,169.254.169.254,.svc,.cluster.local,10.0.0.0/8": true,
		"localhost,.svc.cluster.local":                                       true,
		"*.cluster.local,localhost":                                          true,
		"*":                                                                  true,
		"localhost,127.0.0.1,169.254.169.254,.internal.example.com,.amazonaws.com": false,
		"localhost,10.0.0.0/8": false, // CIDRs match IP literals only, not Service names
		"":                     false,
	}
	for v, want := range cases {
		if got := bypassesCluster(v); got != want {
			t.Errorf("bypassesCluster(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNoProxyMissing reads a workload's proxy environment (kubectl exec
// env) with its failing in-cluster calls, as Python, Go and Java clients
// log them through a refusing proxy, a curl from its pod, and a squid
// access log; a NO_PROXY keeping the cluster's domains, or calls that do
// not fail, are no finding.
func TestNoProxyMissing(t *testing.T) {
	env := func(noProxy string) evidence.CommandOutput {
		return evidence.CommandOutput{Exec: true, Namespace: "shop", Pod: "cart-api-69f8c7d4b5-7mq2x", Run: "sh -c 'env | grep -i proxy | sort'", ExitCode: -1,
			Lines: []string{"HTTPS_PROXY=http://egress-proxy.platform.svc:3128", "HTTP_PROXY=http://egress-proxy.platform.svc:3128", "NO_PROXY=" + noProxy,
				"http_proxy=http://egress-proxy.platform.svc:3128", "no_proxy=" + noProxy}}
	}
	const lost = "localhost,127.0.0.1,169.254.169.254,.internal.example.com,.amazonaws.com"
	const kept = "localhost,127.0.0.1,.svc,.cluster.local"
	curl := evidence.CommandOutput{Exec: true, Namespace: "shop", Pod: "cart-api-69f8c7d4b5-7mq2x", ExitCode: -1,
		Run: "curl -s -o /dev/null -w '%{http_code}\\n' http://inventory.shop.svc.cluster.local:8080/healthz", Lines: []string{"403"}}
	failing := func(line string) Finding {
		f := Finding{Kind: KindLogErrors, Subject: "cart-api", Time: win.Start.Add(20 * time.Minute), Evidence: []string{"logs cart-api: " + line}}
		f.setFact("line", line)
		f.setFact("caller", "cart-api")
		return f
	}
	squid := minedSet("egress-proxy", true, 21*time.Minute,
		`10.42.7.140 - - [14/Mar/2026:10:01:27 +0000] "GET http://inventory.shop.svc.cluster.local:8080/v1/stock?sku=SKU-6158 HTTP/1.1" 403 3941 TCP_DENIED:HIER_NONE`,
		`10.42.1.140 - - [14/Mar/2026:10:01:40 +0000] "GET http://inventory.shop.svc.cluster.local:8080/v1/stock?sku=SKU-8324 HTTP/1.1" 403 3941 TCP_DENIED:HIER_NONE`)
	cases := []struct {
		name   string
		cmds   []evidence.CommandOutput
		found  []Finding
		logs   []LogSet
		want   bool
		target string
	}{
		{"Python requests: 403 for an in-cluster URL", []evidence.CommandOutput{env(lost)},
			[]Finding{failing(`{"levelname": "ERROR", "name": "cart.inventory", "message": "stock check failed", "error": "403 Client Error: Forbidden for url: http://inventory.shop.svc.cluster.local:8080/v1/stock?sku=SKU-2494"}`)}, nil, true, "inventory"},
		{"Python requests: tunnel refused by the proxy", []evidence.CommandOutput{env(lost)},
			[]Finding{failing(`ERROR stock check failed: HTTPSConnectionPool(host='inventory.shop.svc', port=8443): Max retries exceeded (Caused by ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden')))`)}, nil, true, "inventory"},
		{"Go net/http through a proxy", []evidence.CommandOutput{env(lost)},
			[]Finding{failing(`level=error msg="reserve stock" err="Get \"https://inventory.shop.svc.cluster.local:8443/v1/stock\": Forbidden"`)}, nil, true, "inventory"},
		{"Java: unable to tunnel", []evidence.CommandOutput{env(lost)},
			[]Finding{failing(`java.io.IOException: Unable to tunnel through proxy. Proxy returns "HTTP/1.1 407 Proxy Authentication Required" calling https://inventory.shop.svc:8443/v1/stock`)}, nil, true, "inventory"},
		{"a curl from its pod answered 403", []evidence.CommandOutput{env(lost), curl}, nil, nil, true, "inventory"},
		{"the proxy's log refuses cluster hosts", []evidence.CommandOutput{env(lost)}, nil, []LogSet{squid}, true, ""},
		{"NO_PROXY keeps the cluster domains", []evidence.CommandOutput{env(kept), curl},
			[]Finding{failing(`403 Client Error: Forbidden for url: http://inventory.shop.svc.cluster.local:8080/v1/stock`)}, []LogSet{squid}, false, ""},
		{"the proxy is set but nothing fails", []evidence.CommandOutput{env(lost)}, nil, nil, false, ""},
		{"an external call refused is not an in-cluster one", []evidence.CommandOutput{env(lost)},
			[]Finding{failing(`403 Client Error: Forbidden for url: https://api.stripe.com/v1/charges`)}, nil, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Logs: c.logs, Window: win, Scope: Scope{Namespace: "shop"},
				Changes: []evidence.Change{{Timestamp: win.Start.Add(15 * time.Minute), Service: "platform", Kind: "config", Description: "corp-proxy v2: egress via egress-proxy.platform.svc (ConfigMap egress-proxy)"}}}
			f, ok := oneFinding(t, detectNoProxyMissing(ev, c.found), c.want)
			if !ok {
				return
			}
			if f.Subject != "cart-api" || f.fact("no_proxy") != lost || f.fact("proxy") != "http://egress-proxy.platform.svc:3128" || f.fact("why") == "" ||
				c.target != "" && f.fact("target") != c.target || f.fact("source") != "ConfigMap egress-proxy" {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			d := noProxyMissing.describe(&Hypothesis{Kind: KindNoProxyMissing, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, "NO_PROXY") || !strings.Contains(d, "egress proxy") {
				t.Errorf("description: %s", d)
			}
		})
	}
}
