package analyst

import (
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestLBIdleAboveKeepAlive reads a balancer's idle timeout (an ALB
// Ingress annotation, describe-load-balancer-attributes, HAProxy's
// http-keep-alive, a change that raised it) against its backend's own
// keep-alive (Node's JSON start line, gunicorn's flags, Tomcat's
// connector, Apache's directive), and keeps it only when the balancer
// answers 502s of its own (ALB access-log lines with no target status,
// HTTPCode_ELB_502_Count, a proxy's early closes).
func TestLBIdleAboveKeepAlive(t *testing.T) {
	var ing networkingv1.Ingress
	ing.Name = "shop"
	ing.Annotations = map[string]string{"alb.ingress.kubernetes.io/load-balancer-attributes": "idle_timeout.timeout_seconds=300,routing.http2.enabled=true"}
	ing.Spec.Rules = []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}}}}}}}
	nodeLog := `{"level":30,"time":1771322735840,"pid":1,"port":3000,"keepAliveTimeout":65000,"headersTimeout":66000,"msg":"http server listening"}`
	albLine := `h2 2026-02-17T10:48:10.138079Z app/k8s-public/8f2d 88.237.153.94:35598 10.0.37.62:3000 0.000 -1 -1 502 - 175 272 "GET https://shop.example.com:443/ HTTP/2.0"`
	albCmd := evidence.CommandOutput{Command: "zcat *.log.gz | awk '$9 == 502'", Lines: []string{albLine}}
	attrs := evidence.CommandOutput{Command: "aws elbv2 describe-load-balancer-attributes --output table", Lines: []string{
		"|  idle_timeout.timeout_seconds                     |  120     |",
		"|  routing.http.drop_invalid_header_fields.enabled  |  true    |"}}
	haproxy := evidence.CommandOutput{Command: "cat /usr/local/etc/haproxy/haproxy.cfg", Lines: []string{"defaults", "  timeout http-keep-alive 90s", "  timeout server 30s"}}
	elb502 := MetricSet{Name: "HTTPCode_ELB_502_Count", Series: []evidence.Series{{Points: []evidence.Point{{T: win.Start.Add(5 * time.Minute), V: 4}, {T: win.Start.Add(10 * time.Minute), V: 3}}}}}
	logOf := func(subject string, lines ...string) LogSet {
		set := LogSet{Source: subject + "-7d9f-x2", Subject: subject}
		for _, l := range lines {
			set.Templates = append(set.Templates, analysis.LogTemplate{Example: l, Incident: 5})
		}
		return set
	}
	raised := evidence.Change{Timestamp: win.Start.Add(2 * time.Minute), Service: "api", Kind: "config", Description: "haproxy: timeout http-keep-alive 10s -> 90s for long polling"}
	cases := []struct {
		name     string
		ev       Gathered
		subject  string
		lb, keep string
	}{
		{"ALB annotation 300s, Node 65000 ms, ALB lines without target", Gathered{K8s: K8sEvidence{Ingresses: []networkingv1.Ingress{ing}}, Logs: []LogSet{logOf("web", nodeLog)}, Commands: []evidence.CommandOutput{albCmd}}, "web", "300s", "65s"},
		{"attributes table 120s, gunicorn --keep-alive 5, ELB 502 count", Gathered{Logs: []LogSet{logOf("reports", "[2026-02-17 09:00:01 +0000] [1] [INFO] Starting gunicorn 21.2.0 --bind 0.0.0.0:8000 --keep-alive 5 --workers 4")}, Commands: []evidence.CommandOutput{attrs}, Metrics: []MetricSet{elb502}, Scope: Scope{Service: "reports"}}, "reports", "120s", "5s"},
		{"HAProxy raised to 90s, Tomcat 20000 ms, nginx early closes", Gathered{Logs: []LogSet{
			logOf("api", `<Connector port="8080" protocol="HTTP/1.1" connectionTimeout="20000" keepAliveTimeout="20000"/>`),
			logOf("edge", `2026/02/17 10:01:02 [error] 31#31: *88 upstream prematurely closed connection while reading response header from upstream, client: 10.0.0.5, server: _, request: "GET /api/x HTTP/1.1", upstream: "http://10.0.3.4:8080/api/x"`)},
			Commands: []evidence.CommandOutput{haproxy}, Changes: []evidence.Change{raised}, Scope: Scope{Service: "api"}}, "api", "90s", "20s"},
		{"Apache KeepAliveTimeout 5 (seconds) behind a 60s ELB", Gathered{Logs: []LogSet{logOf("legacy", "AH00558: httpd: KeepAliveTimeout 5")}, Commands: []evidence.CommandOutput{{Command: "kubectl get svc legacy -o yaml", Lines: []string{`    service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout: "60"`}}}, Metrics: []MetricSet{elb502}, Scope: Scope{Service: "legacy"}}, "legacy", "60s", "5s"},
		{"balancer shorter than the backend: the usual setting", Gathered{Logs: []LogSet{logOf("web", nodeLog)}, Commands: []evidence.CommandOutput{albCmd, {Command: "aws elbv2 describe-load-balancer-attributes", Lines: []string{"|  idle_timeout.timeout_seconds  |  60  |"}}}, Scope: Scope{Service: "web"}}, "", "", ""},
		{"longer idle timeout but no 502 of the balancer's own", Gathered{K8s: K8sEvidence{Ingresses: []networkingv1.Ingress{ing}}, Logs: []LogSet{logOf("web", nodeLog)}}, "", "", ""},
		{"no keep-alive stated by the backend", Gathered{K8s: K8sEvidence{Ingresses: []networkingv1.Ingress{ing}}, Commands: []evidence.CommandOutput{albCmd}}, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := c.ev
			ev.Window = win
			f, ok := oneFinding(t, detectLBIdleAboveKeepAlive(&ev, nil), c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.fact("lb_idle") != c.lb || f.fact("keepalive") != c.keep || f.fact("why") == "" || len(f.Evidence) < 3 {
				t.Fatalf("finding %+v facts %v", f, f.Facts)
			}
			h := &Hypothesis{Kind: KindLBIdleAboveKeepAlive, Subject: f.Subject, Primary: []*Finding{&f}}
			d := lbIdleAboveKeepAlive.describe(h, Scope{})
			for _, w := range []string{"idle", "keep-alive", "502", c.lb, c.keep} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	if !lbIdleAboveKeepAlive.fitsChange(nil, &Finding{Facts: map[string]string{"description": raised.Description}}) {
		t.Errorf("the change raising the idle timeout does not fit")
	}
	if lbIdleAboveKeepAlive.fitsChange(nil, &Finding{Facts: map[string]string{"description": "web 8.14.0: product page image carousel"}}) {
		t.Errorf("a release fits")
	}
}
