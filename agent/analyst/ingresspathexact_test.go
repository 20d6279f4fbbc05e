package analyst

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// ingressYAML is an Ingress as kubectl get -o yaml prints it, with the
// pathType of its /api rule and the path of its catch-all rule left open.
const ingressYAML = `$ kubectl get ingress web -n shop -o yaml
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  annotations:
    meta.helm.sh/release-name: edge-routes
    meta.helm.sh/release-namespace: shop
  labels:
    app.kubernetes.io/managed-by: Helm
  name: web
  namespace: shop
spec:
  ingressClassName: nginx
  rules:
  - host: www.example.org
    http:
      paths:
      - backend:
          service:
            name: orders-api
            port:
              number: 8080
        path: /api
        pathType: %API%
      - backend:
          service:
            name: %CATCHALL%
            port:
              number: 80
        path: %CATCHPATH%
        pathType: Prefix
`

// TestIngressPathExact: an Exact /api rule whose subpaths reach the web
// frontend (as ingress-nginx's access log, a frontend's JSON log and
// Express's dev log show them) is the cause, named with the rule, the
// backend that caught the requests and the release that manages the
// Ingress; a Prefix rule, a catch-all of the same backend, and 404s on the
// exact path itself are not.
func TestIngressPathExact(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)
	nginx := []string{
		`10.42.0.12 - - [24/Nov/2026:10:05:41 +0000] "GET /api/v2/orders HTTP/2.0" 404 2418 "https://www.example.org/orders" "Mozilla/5.0 (X11; Linux x86_64)" 61 0.011 [shop-web-80] [] 10.42.3.17:3000 2418 0.011 404 9f2c1be04a8d7e3c`,
		`10.42.0.12 - - [24/Nov/2026:10:06:43 +0000] "POST /api/v2/orders/77/items HTTP/2.0" 404 2418 "https://www.example.org/p/1" "Mozilla/5.0 (iPhone)" 212 0.009 [shop-web-80] [] 10.42.1.19:3000 2418 0.009 404 0b7e3f6a1c2d4e5f`,
	}
	exactOnly := []string{
		`10.42.0.12 - - [24/Nov/2026:10:06:02 +0000] "GET /api HTTP/2.0" 404 19 "-" "curl/8.5.0" 38 0.003 [shop-orders-api-8080] [] 10.42.2.41:8080 19 0.003 404 1d4e7a2b`,
		`10.42.0.12 - - [24/Nov/2026:10:07:02 +0000] "GET /api HTTP/2.0" 404 19 "-" "curl/8.5.0" 38 0.003 [shop-orders-api-8080] [] 10.42.2.41:8080 19 0.003 404 1d4e7a2c`,
	}
	pino := []string{
		`{"level":40,"time":1795514741801,"pid":1,"hostname":"web-7f6c5d9b8-zt5qn","msg":"route not found","method":"GET","url":"/api/v2/orders","status":404}`,
		`{"level":40,"time":1795514775620,"pid":1,"hostname":"web-7f6c5d9b8-zt5qn","msg":"route not found","method":"POST","url":"/api/v2/orders/77/items","status":404}`,
	}
	morgan := []string{"GET /api/v2/orders 404 3.114 ms - 146", "POST /api/v2/orders/77/items 404 1.020 ms - 152"}
	yaml := func(pathType, catchAll, catchPath string) string {
		return strings.NewReplacer("%API%", pathType, "%CATCHALL%", catchAll, "%CATCHPATH%", catchPath).Replace(ingressYAML)
	}
	cases := []struct {
		name     string
		session  string
		logs     []LogSet
		cmds     []evidence.CommandOutput
		fallback string // "" for no finding
		from     string
	}{
		{"ingress-nginx's log handed over", yaml("Exact", "web", "/"), nil,
			[]evidence.CommandOutput{{Command: "kubectl logs -n ingress-nginx deploy/ingress-nginx-controller --since=10m", Target: "deployment/ingress-nginx-controller", Lines: nginx}}, "web", "ingress-nginx-controller"},
		{"ingress-nginx's log read", yaml("Exact", "web", "/"), []LogSet{minedSet("ingress-nginx-controller", false, 0, nginx...)}, nil, "web", "ingress-nginx-controller"},
		{"the frontend's JSON log", yaml("Exact", "web", "/"), []LogSet{minedSet("web", false, 0, pino...)}, nil, "web", "web"},
		{"Express's dev log", yaml("Exact", "web", "/"), []LogSet{minedSet("web", false, 0, morgan...)}, nil, "web", "web"},
		{"a Prefix rule", yaml("Prefix", "web", "/"), []LogSet{minedSet("ingress-nginx-controller", false, 0, nginx...)}, nil, "", ""},
		{"a wider rule of the same backend", yaml("Exact", "orders-api", "/api/"), []LogSet{minedSet("web", false, 0, pino...)}, nil, "", ""},
		{"404s on the exact path only", yaml("Exact", "web", "/"), []LogSet{minedSet("ingress-nginx-controller", false, 0, exactOnly...)}, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := ingressEvidence(c.session, now)
			if len(ev.K8s.Ingresses) != 1 {
				t.Fatalf("read %d ingresses", len(ev.K8s.Ingresses))
			}
			ev.Logs, ev.Commands, ev.Scope = c.logs, c.cmds, Scope{Namespace: "shop"}
			fs := detectIngressPathExact(ev, nil)
			if c.fallback == "" {
				onlyFinding(t, fs, "")
				return
			}
			f := onlyFinding(t, fs, "orders-api")
			if f.fact("fallback") != c.fallback || f.fact("count") != "2" || !slices.Contains(f.Related, "edge-routes") || !strings.HasPrefix(f.Evidence[1], c.from+" logged 2 requests") {
				t.Errorf("fallback %q count %q related %v evidence %q", f.fact("fallback"), f.fact("count"), f.Related, f.Evidence)
			}
			h := &Hypothesis{Kind: KindIngressPathExact, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "shop/web routes www.example.org/api to orders-api with pathType Exact", "fall through to web (its Prefix rule /)", "answers 404")
		})
	}
	h := &Hypothesis{Kind: KindIngressPathExact, Subject: "orders-api"}
	routes := &Finding{Kind: KindDeploy}
	routes.setFact("description", "edge-routes chart 2.0.0: explicit pathType on every path")
	feature := &Finding{Kind: KindDeploy}
	feature.setFact("description", "web 3.1.0: new product card, image lazy loading")
	if !ingressPathExact.fitsChange(h, routes) || ingressPathExact.fitsChange(h, feature) {
		t.Error("a change to the routes must fit, a feature release must not")
	}
}
