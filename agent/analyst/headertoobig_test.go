package analyst

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A proxy's buffer too small for an upstream's response headers, as nginx,
// ingress-nginx (with its access log naming the upstream Service) and Kong
// log it, with the buffer read from nginx.conf, the controller's ConfigMap
// or an Ingress annotation; a request body too large is another matter.
func TestDetectHeaderTooBig(t *testing.T) {
	nginx := `2026/03/14 09:45:20 [error] 31#31: *9933907 upstream sent too big header while reading response header from upstream, client: 203.0.113.237, server: portal.example.com, request: "GET /auth/callback?code=7f75 HTTP/2.0", upstream: "http://10.20.1.90:3000/auth/callback?code=7f75", host: "portal.example.com"`
	ingressOther := `2026/03/14 09:45:20 [error] 31#31: *9933907 upstream sent too big header while reading response header from upstream, client: 203.0.113.237, server: portal.example.com, request: "GET /login HTTP/1.1", upstream: "http://10.20.9.9:8080/login", host: "portal.example.com"`
	access := `203.0.113.237 - - [14/Mar/2026:09:45:20 +0000] "GET /login HTTP/1.1" 502 552 "-" "Mozilla/5.0 (X11; Linux x86_64)" 704 0.026 [partners-billing-ui-8080] [] 10.20.9.9:8080 0 0.051 502 15c9a8a125f2`
	kong := `2026/03/14 09:45:20 [error] 1098#0: *4423 upstream sent too big header while reading response header from upstream, client: 10.0.0.7, server: kong, request: "POST /sso/callback HTTP/1.1", upstream: "https://10.20.1.90:3000/sso/callback", host: "api.example.com"`
	tooLarge := `2026/03/14 09:45:20 [error] 31#31: *99 client intended to send too large body: 30000000 bytes, client: 10.0.0.7, server: portal.example.com, request: "POST /upload HTTP/1.1", host: "portal.example.com"`
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "portal-5f8b7c9d46-4kz8m", Namespace: "partners", Labels: map[string]string{"app": "portal"}}, Status: corev1.PodStatus{PodIP: "10.20.1.90"}}
	conf := evidence.CommandOutput{Command: "kubectl exec -n ingress-nginx ctrl -- grep proxy_buffer_size /etc/nginx/nginx.conf", Lines: []string{"412:			proxy_buffer_size                       4k;"}}
	cm := evidence.CommandOutput{Command: "kubectl get configmap ingress-nginx-controller -n ingress-nginx -o yaml", Lines: []string{"data:", "  proxy-buffer-size: 8k"}}
	annot := evidence.CommandOutput{Command: "kubectl get ingress billing-ui -n partners -o yaml", Lines: []string{"  annotations:", `    nginx.ingress.kubernetes.io/proxy-buffer-size: "16k"`}}
	cases := []struct {
		name    string
		sets    []LogSet
		cmds    []evidence.CommandOutput
		subject string
		buffer  string
	}{
		{"nginx, the upstream's pod by its address, nginx.conf", []LogSet{minedSet("edge-nginx", false, 0, nginx, nginx)}, []evidence.CommandOutput{conf}, "portal", "4k"},
		{"ingress-nginx, the Service from its access log, the ConfigMap", []LogSet{minedSet("ingress-nginx-controller", false, 0, ingressOther, access)}, []evidence.CommandOutput{cm}, "billing-ui", "8k"},
		{"Kong, an Ingress annotation", []LogSet{minedSet("kong", false, 0, kong, kong)}, []evidence.CommandOutput{annot}, "portal", "16k"},
		{"a request body too large", []LogSet{minedSet("edge-nginx", false, 0, tooLarge, tooLarge)}, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Logs: c.sets, Commands: c.cmds, K8s: K8sEvidence{Pods: []corev1.Pod{pod}}, Window: win, Scope: Scope{Namespace: "partners"}}
			f := onlyFinding(t, detectHeaderTooBig(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("buffer") != c.buffer || !slices.Contains(f.Related, c.sets[0].Subject) {
				t.Errorf("buffer %q related %v", f.fact("buffer"), f.Related)
			}
			h := &Hypothesis{Kind: KindHeaderTooBig, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, "upstream sent too big header", "proxy_buffer_size of "+c.buffer, "cookie")
		})
	}
	// A change that grows the headers triggers it; a feature deploy does not.
	h := &Hypothesis{Kind: KindHeaderTooBig, Subject: "portal", Onset: win.Start}
	claim := &Finding{Kind: KindConfigChange, Time: win.Start}
	claim.setFact("description", "realm partners: groups claim added to portal tokens")
	deploy := &Finding{Kind: KindDeploy, Time: win.Start}
	deploy.setFact("description", "portal 4.8.0: shipments table virtual scrolling")
	if !headerTooBig.fitsChange(h, claim) || headerTooBig.fitsChange(h, deploy) {
		t.Error("a claim change must fit, a feature deploy must not")
	}
}
