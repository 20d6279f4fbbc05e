package analyst

import (
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestCertNotServed: an expiring certificate is checked against the
// Secrets that Ingresses and Gateways reference and against what the
// hosts serve before it is called a threat; a leftover Secret nothing
// references refutes the alert for serving. Each form the references come
// in (Ingress objects, custom-columns, describe, Gateway YAML) is read.
func TestCertNotServed(t *testing.T) {
	w := testWindow()
	exp := float64(w.End.Add(6 * 24 * time.Hour).Unix())
	far := float64(w.End.Add(80 * 24 * time.Hour).Unix())
	pt := func(v float64) []evidence.Point { return []evidence.Point{{T: w.End.Add(-time.Minute), V: v}} }
	x509 := MetricSet{Name: "x509_cert_not_after", Series: []evidence.Series{
		{Labels: evidence.Labels{"secret_namespace": "web", "secret_name": "www-tls-old", "subject_CN": "*.example.org", "namespace": "monitoring"}, Points: pt(exp)},
		{Labels: evidence.Labels{"secret_namespace": "web", "secret_name": "www-tls", "subject_CN": "www.example.org", "namespace": "monitoring"}, Points: pt(far)},
	}}
	probe := MetricSet{Name: "probe_ssl_earliest_cert_expiry", Series: []evidence.Series{{Labels: evidence.Labels{"instance": "https://www.example.org", "job": "blackbox"}, Points: pt(far)}}}
	ingress := func(secret string) networkingv1.Ingress {
		return networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "www", Namespace: "web"},
			Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"www.example.org"}, SecretName: secret}}}}
	}
	cmd := func(command string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: command, Run: command, Lines: lines}
	}
	sClient := cmd("echo | openssl s_client -connect www.example.org:443 -servername www.example.org 2>/dev/null | openssl x509 -noout -enddate",
		"notAfter=Mar  1 08:00:00 2027 GMT")
	cases := []struct {
		name    string
		ing     []networkingv1.Ingress
		cmds    []evidence.CommandOutput
		metrics []MetricSet
		want    bool
		served  string // part of what is served
		strong  bool   // weight of a direct refutation
	}{
		{name: "Ingress objects reference another Secret; openssl shows what is served",
			ing: []networkingv1.Ingress{ingress("www-tls")}, cmds: []evidence.CommandOutput{sClient}, metrics: []MetricSet{x509},
			want: true, served: "valid until 2027-03-01", strong: true},
		{name: "custom-columns listing; a probe shows what is served",
			cmds: []evidence.CommandOutput{cmd("kubectl get ingress -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,TLS:.spec.tls[*].secretName",
				"NS    NAME   TLS", "web   www    www-tls", "api   api    api-tls,api-internal-tls")},
			metrics: []MetricSet{x509, probe}, want: true, served: "https://www.example.org", strong: true},
		{name: "kubectl describe ingress",
			cmds:    []evidence.CommandOutput{cmd("kubectl describe ingress www -n web", "Name:             www", "TLS:", "  www-tls terminates www.example.org", "Rules:")},
			metrics: []MetricSet{x509}, want: true},
		{name: "Gateway API YAML",
			cmds:    []evidence.CommandOutput{cmd("kubectl get gateway public -n web -o yaml", "spec:", "  listeners:", "  - name: https", "    tls:", "      certificateRefs:", "      - kind: Secret", "        name: www-tls")},
			metrics: []MetricSet{x509}, want: true},
		{name: "the expiring Secret is the one referenced: the alert stands",
			ing: []networkingv1.Ingress{ingress("www-tls-old")}, metrics: []MetricSet{x509}, want: false},
		{name: "the Gateway references it: the alert stands",
			cmds:    []evidence.CommandOutput{cmd("kubectl get gateway public -n web -o yaml", "      certificateRefs:", "      - name: www-tls-old")},
			metrics: []MetricSet{x509}, want: false},
		{name: "pods of the ingress controller say nothing of references",
			cmds:    []evidence.CommandOutput{cmd("kubectl get pods -n ingress-nginx -l app.kubernetes.io/name=ingress-nginx", "NAME   READY   STATUS", "ingress-nginx-controller-7d9f   1/1   Running")},
			metrics: []MetricSet{x509}, want: false},
		{name: "only another namespace's Ingresses were read",
			ing: []networkingv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Name: "pay", Namespace: "checkout"}}}, metrics: []MetricSet{x509}, want: false},
		{name: "nothing says what is referenced: nothing to refute",
			cmds: []evidence.CommandOutput{sClient}, metrics: []MetricSet{x509}, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := DetectCertExpiry(c.metrics, w)
			if len(found) != 1 || found[0].Kind != KindCertExpiring || found[0].fact("secrets") != "web/www-tls-old" {
				t.Fatalf("expiring findings %+v", found)
			}
			ev := &Gathered{K8s: K8sEvidence{Ingresses: c.ing}, Commands: c.cmds, Metrics: c.metrics, Window: w}
			fs := detectCertNotServed(ev, found)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != found[0].Subject || f.fact("secret") != "web/www-tls-old" {
				t.Errorf("subject %q secret %q", f.Subject, f.fact("secret"))
			}
			if (f.Weight >= 0.95) != c.strong {
				t.Errorf("weight %v, direct refutation %v", f.Weight, c.strong)
			}
			h := &Hypothesis{Kind: KindCertNotServed, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describe(h, Scope{})
			for _, x := range []string{"www-tls-old", "no Ingress or Gateway references", "leftover", "www-tls", c.served} {
				if !strings.Contains(d, x) {
					t.Errorf("description lacks %q: %s", x, d)
				}
			}
			_, listed, _ := strings.Cut(d, "Gateways reference ")
			listed, _, _ = strings.Cut(listed, ")")
			if strings.Contains(listed, "www-tls-old") || strings.Contains(listed, "NAME") || strings.Contains(listed, "TLS") {
				t.Errorf("description lists table headers or the leftover as referenced: %s", d)
			}
		})
	}
}

func TestServingCommand(t *testing.T) {
	cases := []struct {
		cmd, ns string
		ok      bool
	}{
		{"kubectl get ingress -A -o custom-columns=NS:.metadata.namespace,TLS:.spec.tls[*].secretName", "*", true},
		{"kubectl -n web describe gateway/public", "web", true},
		{"kubectl get httproute,gateway -n web -o yaml", "web", true},
		{"kubectl get ingresses.networking.k8s.io --namespace=shop", "shop", true},
		{"kubectl get pods -n ingress-nginx", "", false},
		{"kubectl get secret shop-tls -n web -o yaml | grep ingress", "", false},
		{"kubectl logs -n ingress-nginx deploy/ingress-nginx-controller", "", false},
	}
	for _, c := range cases {
		ns, ok := servingCommand(c.cmd)
		if ok != c.ok || ok && ns != c.ns {
			t.Errorf("servingCommand(%q) = %q, %v; want %q, %v", c.cmd, ns, ok, c.ns, c.ok)
		}
	}
}
