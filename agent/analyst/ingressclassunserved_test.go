package analyst

import (
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestIngressClassUnserved: an Ingress whose ingressClassName is not among
// the cluster's IngressClasses, or that a controller's log says it
// ignores, is the cause of the default backend's 404s; a served class, or
// a class nothing speaks about, is not.
func TestIngressClassUnserved(t *testing.T) {
	const ingresses = `$ kubectl -n web get ingress
NAME          CLASS          HOSTS                ADDRESS                                              PORTS     AGE
marketing     nginx          www.example.com      a1b2c3d4e5f6-1234567890.eu-west-1.elb.amazonaws.com  80, 443   301d
status-page   %s   status.example.com                                                        80, 443   19h
`
	const classes = `$ kubectl get ingressclass
NAME       CONTROLLER                      PARAMETERS   AGE
nginx      k8s.io/ingress-nginx            <none>       301d
internal   k8s.io/internal-ingress-nginx   <none>       120d
`
	const controllerLog = `$ kubectl -n ingress-nginx logs deploy/ingress-nginx-controller --since=1h | grep -i status
I1124 10:12:07.518244       7 store.go:436] "Ignoring ingress because of error while validating ingress class" ingress="web/status-page" error="no object matching key \"nginx-public\" in local store"
10.20.0.14 - - [24/Nov/2026:10:48:31 +0000] "GET / HTTP/1.1" 404 146 "-" "curl/8.4.0" 412 0.000 [upstream-default-backend] [] 127.0.0.1:8181 146 0.000 404 0f2a8e1c9b7d6a5f4e3d2c1b0a9f8e7d
`
	now := time.Date(2026, 11, 24, 10, 50, 0, 0, time.UTC)
	cases := []struct {
		name, class, extra string
		want               float64 // weight; 0: no finding
	}{
		{"class missing and ignored", "nginx-public", classes + controllerLog, 0.9},
		{"class missing from the list", "nginx-public", classes, 0.8},
		{"controller ignores it, classes not listed", "nginx-public", controllerLog, 0.9},
		{"served class", "nginx       ", classes, 0},
		{"nothing says", "nginx-public", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(strings.Replace(ingresses, "%s", c.class, 1)+c.extra), now)
			ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}}
			for _, o := range res.Objects {
				if x, ok := o.(*networkingv1.Ingress); ok {
					ev.K8s.Ingresses = append(ev.K8s.Ingresses, *x)
				}
			}
			for _, o := range res.Outputs {
				ev.Commands = append(ev.Commands, evidence.CommandOutput{Command: o.Command, Lines: o.Lines})
			}
			if len(ev.K8s.Ingresses) != 2 {
				t.Fatalf("read %d ingresses", len(ev.K8s.Ingresses))
			}
			fs := detectIngressClasses(ev, nil)
			if c.want == 0 {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "status-page" || fs[0].Weight != c.want {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindIngressClass, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "web/status-page", "ingressClassName nginx-public", "status.example.com", "404")
		})
	}
}
