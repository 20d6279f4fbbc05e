package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestRouteController: the controller serving a service's Ingress, read
// in its own namespace, whose reloads fail: ingress-nginx's klog lines
// (the failure, nginx's [emerg] reason, "requeuing ns/name" naming the
// object being loaded) with its RELOAD events, HAProxy ingress's "error
// reloading server" with the [ALERT] reason, and RELOAD events alone. A
// controller that reloads fine, and failures older than the baseline,
// are not it.
func TestRouteController(t *testing.T) {
	w := testWindow()
	at := func(m int) time.Time { return w.Start.Add(time.Duration(m) * time.Minute) }
	lines := func(first time.Time, texts ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for i, s := range texts {
			out = append(out, evidence.LogLine{Time: first.Add(time.Duration(i) * time.Millisecond), Text: s})
		}
		return out
	}
	nginx := lines(at(5),
		`I0501 11:05:00.000000       7 controller.go:193] "Configuration changes detected, backend reload required"`,
		`E0501 11:05:00.200000       7 controller.go:205] Unexpected failure reloading the backend:`,
		`Error: exit status 1`,
		`2026/05/01 11:05:00 [emerg] 4188#4188: unknown directive "more_set_header" in /tmp/nginx/nginx-cfg192:2214`,
		`nginx: configuration file /tmp/nginx/nginx-cfg192 test failed`,
		`W0501 11:05:00.200100       7 queue.go:131] requeuing shop/promo-pages, err`,
	)
	later := lines(at(20), `E0501 11:20:00.000000       7 controller.go:205] Unexpected failure reloading the backend:`,
		`W0501 11:20:00.000100       7 queue.go:131] requeuing partners/partner-api, err`)
	haproxy := lines(at(8),
		`E0501 11:08:00.000000       1 instance.go:321] error reloading server:`,
		`[ALERT]    (212) : config : parsing [/etc/haproxy/haproxy.cfg:88] : unknown keyword 'http-respone' in 'backend' section`,
	)
	healthy := lines(at(5),
		`I0501 11:05:00.000000       7 controller.go:193] "Configuration changes detected, backend reload required"`,
		`I0501 11:05:00.300000       7 controller.go:213] "Backend successfully reloaded"`)
	old := lines(w.BaselineStart.Add(-time.Hour), `E0501 09:00:00.000000       7 controller.go:205] Unexpected failure reloading the backend:`,
		`2026/05/01 09:00:00 [emerg] 1#1: unknown directive "x" in /tmp/nginx/nginx-cfg1:1`)
	reload := corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress-nginx"}, Type: corev1.EventTypeWarning, Reason: "RELOAD", Message: "Error reloading NGINX: ",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "ingress-nginx-controller-7d9c8f6b5d-4zq8m", Namespace: "ingress-nginx"},
		FirstTimestamp: metav1.NewTime(at(30)), LastTimestamp: metav1.NewTime(at(50))}
	cases := []struct {
		name    string
		pod     string
		lines   []evidence.LogLine
		events  []corev1.Event
		want    bool
		subject string
		onset   time.Time
		reason  string
		culprit string
	}{
		{"ingress-nginx log and events", "ingress-nginx/ingress-nginx-controller-7d9c8f6b5d-4zq8m", append(nginx, later...), []corev1.Event{reload}, true,
			"ingress-nginx-controller", at(5).Add(time.Millisecond), `[emerg] 4188#4188: unknown directive "more_set_header" in /tmp/nginx/nginx-cfg192:2214`, "shop/promo-pages"},
		{"haproxy ingress", "haproxy-ingress/haproxy-ingress-6c9f7d8b4-x2x7q", haproxy, nil, true,
			"haproxy-ingress", at(8), `[ALERT]    (212) : config : parsing [/etc/haproxy/haproxy.cfg:88] : unknown keyword 'http-respone' in 'backend' section`, ""},
		{"events alone", "ingress-nginx/ingress-nginx-controller-7d9c8f6b5d-4zq8m", nil, []corev1.Event{reload}, true,
			"ingress-nginx-controller", at(30), "", ""},
		{"reloads fine", "ingress-nginx/ingress-nginx-controller-7d9c8f6b5d-4zq8m", healthy, nil, false, "", time.Time{}, "", ""},
		{"failures before the baseline", "ingress-nginx/ingress-nginx-controller-7d9c8f6b5d-4zq8m", old, nil, false, "", time.Time{}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, ok := detectRouteController(routeControllerInput{Service: "partner-api", Pods: []string{c.pod}, Lines: c.lines, Events: c.events}, w)
			if ok != c.want {
				t.Fatalf("found %v, want %v: %+v", ok, c.want, f)
			}
			if !ok {
				return
			}
			if f.Kind != KindReloadRejected || f.Subject != c.subject || !f.Time.Equal(c.onset) || f.fact("line") != c.reason || f.fact("reloading") != c.culprit {
				t.Fatalf("%s on %s at %s line %q reloading %q", f.Kind, f.Subject, f.Time, f.fact("line"), f.fact("reloading"))
			}
			if (f.fact("why") != "") != (c.reason != "") {
				t.Errorf("why %q with reason %q: only the server's own reason says why", f.fact("why"), c.reason)
			}
			h := &Hypothesis{Kind: KindReloadRejected, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			if d := describe(h, Scope{}); !strings.Contains(d, "rejects every configuration reload") {
				t.Errorf("description: %s", d)
			}
		})
	}
}

// TestRouteControllerOf: the controllers that serve a service's Ingress
// are those of its class (ingress-nginx for nginx, haproxy-ingress for
// haproxy), any ingress controller for an Ingress without a class; a
// service with no Ingress, or a question that is not about a route, asks
// for none.
func TestRouteControllerOf(t *testing.T) {
	class := func(c string) *string { return &c }
	ing := func(name, svc string, cls *string, ann map[string]string) networkingv1.Ingress {
		return networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "partners", Annotations: ann}, Spec: networkingv1.IngressSpec{IngressClassName: cls,
			Rules: []networkingv1.IngressRule{{Host: "api.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/v2", Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc}}}}}}}}}}
	}
	pod := func(ns, name, image string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: image}}}}
	}
	nginxPod := pod("ingress-nginx", "ingress-nginx-controller-7d9c8f6b5d-4zq8m", "registry.k8s.io/ingress-nginx/controller:v1.11.3")
	haproxyPod := pod("haproxy-controller", "kubernetes-ingress-5b8f9c7d6-q9w8e", "haproxytech/kubernetes-ingress:3.0")
	traefikPod := pod("traefik", "traefik-7f8d9c6b5-abcde", "traefik:v3.1")
	app := pod("partners", "partner-api-64b9c8d7f5-7vkq2", "acme/partner-api:2.0.0")
	cases := []struct {
		name    string
		ings    []networkingv1.Ingress
		serves  map[*corev1.Pod]bool
		classes []string
	}{
		{"class nginx", []networkingv1.Ingress{ing("public", "partner-api", class("nginx"), nil)},
			map[*corev1.Pod]bool{nginxPod: true, haproxyPod: false, traefikPod: false, app: false}, []string{"nginx"}},
		{"class by the old annotation", []networkingv1.Ingress{ing("public", "partner-api", nil, map[string]string{"kubernetes.io/ingress.class": "haproxy"})},
			map[*corev1.Pod]bool{nginxPod: false, haproxyPod: true}, []string{"haproxy"}},
		{"no class: the default controller", []networkingv1.Ingress{ing("public", "partner-api", nil, nil)},
			map[*corev1.Pod]bool{nginxPod: true, traefikPod: true, app: false}, []string{""}},
		{"another service's Ingress", []networkingv1.Ingress{ing("docs", "partner-docs", class("nginx"), nil)}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := serviceIngressClasses(c.ings, "partner-api")
			if strings.Join(got, ",") != strings.Join(c.classes, ",") || (got == nil) != (c.classes == nil) {
				t.Fatalf("classes %q, want %q", got, c.classes)
			}
			for p, want := range c.serves {
				if servesClass(p, got) != want {
					t.Errorf("%s/%s serves %v: %v", p.Namespace, p.Name, got, !want)
				}
			}
		})
	}
	for q, want := range map[string]bool{
		"we added /v2 to the ingress at 10:20 and it still 404s":   true,
		"the new rate-limit annotation has no effect":              true,
		"the new route returns not found":                          true,
		"checkout is slow since the deploy":                        false,
		"pods keep restarting with OOMKilled since the 2.1 deploy": false,
	} {
		if routeAskRE.MatchString(q) != want {
			t.Errorf("%q asks about a route: %v", q, !want)
		}
	}
}

// TestSnippetAnnotation: a snippet annotation handed over among an
// object's annotations (jsonpath piped to jq, -o yaml, describe) is quoted
// as the reload's culprit, its JSON escapes undone.
func TestSnippetAnnotation(t *testing.T) {
	for _, c := range []struct{ command, line, want string }{
		{"kubectl get ingress promo -o jsonpath='{.metadata.annotations}' | jq .", `  "nginx.ingress.kubernetes.io/configuration-snippet": "more_set_header \"X-Robots-Tag: noindex\";\n",`, `more_set_header "X-Robots-Tag: noindex";`},
		{"kubectl get ingress promo -o yaml", `    nginx.ingress.kubernetes.io/server-snippet: return 301 https://$host$request_uri`, `return 301 https://$host$request_uri`},
		{"kubectl describe ingress promo", `Annotations:  nginx.ingress.kubernetes.io/configuration-snippet: proxy_set_header X-Id $req_id`, `proxy_set_header X-Id $req_id`},
	} {
		f := Finding{Kind: KindReloadRejected, Subject: "ingress-nginx-controller"}
		reloadFacts(&Gathered{Commands: []evidence.CommandOutput{{Command: c.command, Lines: []string{"{", c.line, "}"}}}}, &f)
		if f.fact("snippet") != c.want {
			t.Errorf("%s: snippet %q, want %q", c.command, f.fact("snippet"), c.want)
		}
	}
}
