package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A caller whose calls to an external host the egress proxy refuses, as
// clients report it (Python's urllib3, curl, Java's HttpURLConnection,
// Node's tunnel agent) and as squid logs it (native and common formats),
// with the proxy's dstdomain allowlist read from its ConfigMap (a file key
// and an inline ACL); a host the list holds (another rule refused it), a 407 asking for proxy
// credentials and a refused call to a cluster Service are not one.
func TestDetectProxyDenied(t *testing.T) {
	fileList := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "squid-config", Namespace: "egress"}, Data: map[string]string{
		"allowed_domains.txt": ".payments.example\napi.maps.example\n",
		"squid.conf":          "http_port 3128\nacl allowed_domains dstdomain \"/etc/squid/allowed_domains.txt\"\nhttp_access allow allowed_domains\nhttp_access deny all\n",
	}}
	inlineList := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proxy", Namespace: "net"}, Data: map[string]string{
		"squid.conf": "acl partners dstdomain .payments.example api.maps.example\nhttp_access allow partners\nhttp_access deny all\n",
	}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "geo-7d9c8b6f5-abcde", Namespace: "shop", Labels: map[string]string{"app": "geo"}}, Status: corev1.PodStatus{PodIP: "10.1.2.3"}}
	native := `1795606711.241      0 10.1.2.3 TCP_DENIED/403 3995 CONNECT v2.maps.example:443 - HIER_NONE/- text/html`
	common := `10.1.2.3 - - [25/Nov/2026:11:06:52 +0000] "CONNECT v2.maps.example:443 HTTP/1.1" 403 3995 "-" "python-requests/2.32" TCP_DENIED:HIER_NONE`
	passed := `1795606714.802   3139 10.1.9.9 TCP_TUNNEL/200 77689 CONNECT api.maps.example:443 - HIER_DIRECT/1.2.3.4 -`
	cases := []struct {
		name, client string
		proxyLog     []string
		list         *corev1.ConfigMap
		want         []string
	}{
		{"urllib3 with squid's native log and a file allowlist",
			`ERROR lookup failed error=HTTPSConnectionPool(host='v2.maps.example', port=443): Max retries exceeded with url: /geo (Caused by ProxyError('Unable to connect to proxy', OSError('Tunnel connection failed: 403 Forbidden')))`,
			[]string{native, passed}, &fileList, []string{"v2.maps.example", "squid", "allowed_domains.txt of ConfigMap egress/squid-config", "api.maps.example", "TCP_DENIED"}},
		{"curl with squid's common log and an inline ACL",
			`curl: (56) CONNECT tunnel failed, response 403 for https://v2.maps.example/geo`,
			[]string{common}, &inlineList, []string{"v2.maps.example", "squid.conf of ConfigMap net/proxy"}},
		{"Java with no proxy log",
			`java.io.IOException: Unable to tunnel through proxy. Proxy returns "HTTP/1.1 403 Forbidden" calling https://v2.maps.example/geo`,
			nil, &fileList, []string{"v2.maps.example", "not on the proxy's domain allowlist"}},
		{"Node's tunnel agent",
			`Error: tunneling socket could not be established, statusCode=403 url=https://v2.maps.example/geo`,
			nil, nil, []string{"v2.maps.example", "not on the proxy's allowlist"}},
		{"a host the list holds (refused by another rule)",
			`ERROR HTTPSConnectionPool(host='api.maps.example', port=443): Tunnel connection failed: 403 Forbidden`,
			nil, &fileList, nil},
		{"proxy credentials asked", `ERROR ProxyError: Tunnel connection failed: 407 Proxy Authentication Required host='v2.maps.example'`, nil, &fileList, nil},
		{"a cluster Service through the proxy", `ERROR HTTPConnectionPool(host='geo.shop.svc.cluster.local', port=8080): Tunnel connection failed: 403 Forbidden`, nil, &fileList, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			logs := []LogSet{minedSet("geo", false, 0, c.client, c.client)}
			if len(c.proxyLog) > 0 {
				logs = append(logs, minedSet("squid", false, 0, c.proxyLog...))
			}
			ev := &Gathered{Logs: logs, K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Window: win}
			if c.list != nil {
				if !isProxyAllowlist(c.list) {
					t.Fatal("the allowlist ConfigMap is not recognised")
				}
				ev.K8s.ProxyAllowlists = []corev1.ConfigMap{*c.list}
			}
			want := ""
			if c.want != nil {
				want = "geo"
			}
			f := onlyFinding(t, detectProxyDenied(ev, nil), want)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindProxyDenied, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, append([]string{"egress proxy", "geo"}, c.want...)...)
		})
	}
}
