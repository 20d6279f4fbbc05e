package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

const ingressMissingPage = `$ kubectl describe ingress wiki -n kb
Name:             wiki
Namespace:        kb
Address:          203.0.113.9
Ingress Class:    %s
Default backend:  <default>
Rules:
  Host           Path  Backends
  ----           ----  --------
  wiki.example.org  
                 /api   wiki-api:8080 (10.42.1.40:8080)
                 /      %s:80 (<error: endpoints "%s" not found>)
Events:           <none>
`

// TestIngressService: an Ingress backend naming a Service the namespace
// does not have is the cause of the controller's 503s, read against the
// namespace's Services listed by kubectl; each controller's own words
// corroborate it. A backend that exists, or Services not listed (one
// described), are not read as missing.
func TestIngressService(t *testing.T) {
	const svcTable = `$ kubectl get svc -n kb
NAME       TYPE        CLUSTER-IP     EXTERNAL-IP   PORT(S)    AGE
wiki       ClusterIP   10.43.118.7    <none>        80/TCP     400d
wiki-api   ClusterIP   10.43.52.190   <none>        8080/TCP   211d
`
	const oneSvc = `$ kubectl describe svc wiki-api -n kb
Name:              wiki-api
Namespace:         kb
Selector:          app=wiki-api
Type:              ClusterIP
IP:                10.43.52.190
Port:              http  8080/TCP
TargetPort:        8080/TCP
Endpoints:         10.42.1.40:8080
`
	now := time.Date(2026, 8, 4, 8, 50, 0, 0, time.UTC)
	cases := []struct {
		name, class, backend, session, log string
		want                               bool
		wantLine                           bool
	}{
		{"ingress-nginx, Services listed", "nginx", "wiki-svc", svcTable,
			`W0804 08:40:14.402911       7 controller.go:1110] Error obtaining Endpoints for Service "kb/wiki-svc": no object matching key "kb/wiki-svc" in local store`, true, true},
		{"traefik, Services listed", "traefik", "wiki-frontend", svcTable,
			`time="2026-08-04T08:40:14Z" level=error msg="Cannot create service: service not found" namespace=kb providerName=kubernetes ingress=wiki serviceName=wiki-frontend servicePort="&ServiceBackendPort{Name:,Number:80,}"`, true, true},
		{"GCE event wording, one Service described", "gce", "wiki-svc", oneSvc,
			`Translation failed: invalid ingress spec: could not find service "kb/wiki-svc"`, true, true},
		{"listed, no controller log", "nginx", "wiki-svc", svcTable, "", true, false},
		{"backend exists", "nginx", "wiki", svcTable, "", false, false},
		{"one Service described, no word of the controller", "nginx", "wiki-svc", oneSvc, "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page := strings.NewReplacer("%s", c.class).Replace(ingressMissingPage[:strings.Index(ingressMissingPage, "Default")]) +
				strings.ReplaceAll(ingressMissingPage[strings.Index(ingressMissingPage, "Default"):], "%s", c.backend)
			ev := ingressEvidence(page+c.session, now)
			if len(ev.K8s.Ingresses) != 1 || len(ev.K8s.Services) == 0 {
				t.Fatalf("read %d ingresses, %d services", len(ev.K8s.Ingresses), len(ev.K8s.Services))
			}
			if c.log != "" {
				ev.Logs = []LogSet{{Source: "controller", Subject: "ingress-controller", Templates: []analysis.LogTemplate{{Example: c.log, FirstSeen: now.Add(-10 * time.Minute)}}}}
			}
			fs := detectIngressServices(ev, nil)
			if got := len(fs) == 1; got != c.want {
				t.Fatalf("found %d findings %+v, want missing backend %v", len(fs), fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != "wiki" || f.fact("service") != c.backend || (f.fact("line") != "") != c.wantLine {
				t.Errorf("finding %+v", f)
			}
			d := ingressService.describe(&Hypothesis{Kind: KindIngressService, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			if !strings.Contains(d, c.backend+", which does not exist") || !strings.Contains(d, "503") {
				t.Errorf("description %q", d)
			}
			if c.backend == "wiki-svc" && c.session == svcTable && !strings.Contains(d, "probably wiki") {
				t.Errorf("description does not name the Service meant: %q", d)
			}
		})
	}
}

// ingressEvidence is the Ingresses and Services a kubectl session shows,
// in a window of the hour before now.
func ingressEvidence(session string, now time.Time) *Gathered {
	res := kubetext.Parse([]byte(session), now)
	ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}}
	for _, o := range res.Objects {
		switch x := o.(type) {
		case *networkingv1.Ingress:
			ev.K8s.Ingresses = append(ev.K8s.Ingresses, *x)
		case *corev1.Service:
			ev.K8s.Services = append(ev.K8s.Services, ServiceState{Service: *x})
		}
	}
	return ev
}
