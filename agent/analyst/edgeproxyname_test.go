package analyst

import (
	"strings"
	"testing"
)

// TestEdgeProxyNotCaller: an ingress controller or edge proxy in front of
// a failing service is named as the proxy that forwards requests to it,
// not as one of its callers.
func TestEdgeProxyNotCaller(t *testing.T) {
	for name, want := range map[string]bool{
		"ingress-nginx-controller": true, "ingress-nginx": true, "nginx-ingress-controller": true,
		"traefik": true, "envoy-gateway": true, "envoy-default-eg-e41e7b31": true, "contour-envoy": true,
		"istio-ingressgateway": true, "kong-proxy": true, "emissary-ingress": true, "haproxy-ingress": true,
		"checkout": false, "api-gateway": false, "pricing-gateway": false, "ingestion-worker": false, "kongo-sync": false,
	} {
		if got := isEdgeProxyName(name); got != want {
			t.Errorf("isEdgeProxyName(%q) = %v, want %v", name, got, want)
		}
	}
	cases := []struct {
		callers []string
		want    string
	}{
		{[]string{"ingress-nginx-controller"}, "the ingress proxy in front of cart-api (ingress-nginx-controller) forwarding requests to it"},
		{[]string{"checkout", "traefik"}, "its callers (checkout) calling cart-api, and of the ingress proxy in front of it (traefik)"},
		{[]string{"checkout"}, "its callers (checkout) calling cart-api"},
	}
	for _, c := range cases {
		h := &Hypothesis{Kind: KindConnRefused, Subject: "cart-api", Primary: []*Finding{{Kind: KindConnRefused, Subject: "cart-api"}}}
		for _, cl := range c.callers {
			h.Support = append(h.Support, &Finding{Kind: KindConnRefused, Subject: "cart-api", Facts: map[string]string{"caller": cl}})
		}
		if got := dependencyVictims(h); !strings.Contains(got, c.want) {
			t.Errorf("callers %v: %q lacks %q", c.callers, got, c.want)
		}
	}
}
