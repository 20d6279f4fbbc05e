package analyst

import (
	"strings"
	"testing"
	"time"
)

const ingressPage = `$ kubectl describe ingress storefront -n web
Name:             storefront
Labels:           app.kubernetes.io/managed-by=Helm
Namespace:        web
Address:          34.118.22.71
Ingress Class:    nginx
Default backend:  <default>
Rules:
  Host              Path  Backends
  ----              ----  --------
  www.acme-shop.eu  
                    /api   storefront-bff:http (10.8.2.44:8080,10.8.3.19:8080)
                    /      storefront:http (<none>)
  acme-shop.eu      
                    /   storefront:http (<none>)
Annotations:        meta.helm.sh/release-name: edge-routes
Events:             <none>
`

const servicePage = `$ kubectl describe svc storefront -n web
Name:                     storefront
Namespace:                web
Labels:                   app.kubernetes.io/name=storefront
Selector:                 app.kubernetes.io/instance=storefront,app.kubernetes.io/name=storefront
Type:                     ClusterIP
IP:                       10.12.7.201
Port:                     %s  80/TCP
TargetPort:               web/TCP
Endpoints:                10.8.1.23:3000,10.8.2.71:3000
Port:                     metrics  9090/TCP
TargetPort:               metrics/TCP
Endpoints:                10.8.1.23:9090,10.8.2.71:9090
Session Affinity:         None
Events:                   <none>
`

// TestIngressPort: an Ingress backend naming a Service port the Service
// no longer has (renamed http → web) is the cause of the controller's
// 503s; a port it has, or ports read from a get svc table (no names,
// unknown), are not.
func TestIngressPort(t *testing.T) {
	const table = `$ kubectl get svc -n web
NAME         TYPE        CLUSTER-IP    EXTERNAL-IP   PORT(S)           AGE
storefront   ClusterIP   10.12.7.201   <none>        80/TCP,9090/TCP   412d
`
	now := time.Date(2026, 8, 4, 8, 50, 0, 0, time.UTC)
	cases := []struct {
		name, session string
		want          bool
	}{
		{"port renamed", ingressPage + strings.Replace(servicePage, "%s", "web", 1), true},
		{"port still there", ingressPage + strings.Replace(servicePage, "%s", "http", 1), false},
		{"ports from a table", ingressPage + table, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := ingressEvidence(c.session, now)
			if len(ev.K8s.Ingresses) != 1 || len(ev.K8s.Services) != 1 {
				t.Fatalf("read %d ingresses, %d services", len(ev.K8s.Ingresses), len(ev.K8s.Services))
			}
			fs := detectIngressPorts(ev, nil)
			if !c.want {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "storefront" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindIngressPort, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "web/storefront", "port http", "www.acme-shop.eu/, acme-shop.eu/", "web 80, metrics 9090", "503")
		})
	}
}
