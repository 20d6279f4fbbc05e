package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestParseWebhookCall: FailedCreate messages of a webhook the API server
// could not reach are read (webhook, service, namespace, error); a webhook
// that answered (denied) or a TLS failure are not this.
func TestParseWebhookCall(t *testing.T) {
	cases := []struct {
		msg  string
		want webhookCall
		ok   bool
	}{
		{`Error creating: Internal error occurred: failed calling webhook "namespace.sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": context deadline exceeded`,
			webhookCall{"namespace.sidecar-injector.istio.io", "istiod", "istio-system", "context deadline exceeded"}, true},
		{`Error creating: Internal error occurred: failed calling webhook "validate.kyverno.svc-fail": failed to call webhook: Post "https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s": no endpoints available for service "kyverno-svc"`,
			webhookCall{"validate.kyverno.svc-fail", "kyverno-svc", "kyverno", `no endpoints available for service "kyverno-svc"`}, true},
		{`(combined from similar events): Error creating: Internal error occurred: failed calling webhook "webhook.cert-manager.io": failed to call webhook: Post "https://cert-manager-webhook.cert-manager.svc:443/mutate?timeout=10s": dial tcp 10.96.20.5:443: connect: connection refused`,
			webhookCall{"webhook.cert-manager.io", "cert-manager-webhook", "cert-manager", "dial tcp 10.96.20.5:443: connect: connection refused"}, true},
		{`Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: policy Deployment/shop/orders-api for resource violation: require-labels`, webhookCall{}, false},
		{`Error creating: Internal error occurred: failed calling webhook "webhook.cert-manager.io": failed to call webhook: Post "https://cert-manager-webhook.cert-manager.svc:443/mutate?timeout=10s": x509: certificate signed by unknown authority`, webhookCall{}, false},
		{`Error creating: pods "orders-api-5d9c7b6f48-" is forbidden: exceeded quota: compute, requested: cpu=500m`, webhookCall{}, false},
	}
	for _, c := range cases {
		got, ok := parseWebhookCall(c.msg)
		if ok != c.ok || got != c.want {
			t.Errorf("parseWebhookCall(%.60q) = %+v, %v; want %+v, %v", c.msg, got, ok, c.want, c.ok)
		}
	}
}

// TestWebhookFinding: the workload whose creations fail is the subject;
// the webhook's not-ready pods raise the weight and their log's refusal
// (not its exit line) is quoted; ready pods say nothing of them.
func TestWebhookFinding(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 40, 0, 0, time.UTC)
	const events = `$ kubectl -n orders get events
LAST SEEN   TYPE      REASON         OBJECT                            MESSAGE
9m44s       Warning   FailedCreate   replicaset/orders-api-5d9c7b6f48  Error creating: Internal error occurred: failed calling webhook "namespace.sidecar-injector.istio.io": failed to call webhook: Post "https://istiod.istio-system.svc:443/inject?timeout=10s": context deadline exceeded
`
	const pods = `$ kubectl -n istio-system get pods
NAME                                    READY   STATUS    RESTARTS        AGE
istio-ingressgateway-6c8d9f7b6d-4hq2n   1/1     Running   0               12d
istiod-7c9f6d8b54-xw9rz                 %s     Running   7 (4m12s ago)   35m
`
	logs := []evidence.LogLine{
		{Source: "istiod-7c9f6d8b54-xw9rz", Text: `2026-11-24T09:35:52.004120Z	error	klog	k8s.io/client-go@v0.28.3/tools/cache/reflector.go:229: failed to list *v1.Secret: secrets is forbidden: User "system:serviceaccount:istio-system:istiod" cannot list resource "secrets" in API group "" at the cluster scope`},
		{Source: "istiod-7c9f6d8b54-xw9rz", Text: `Error: failed to start istiod: failed to sync secret informer: timed out waiting for the condition`},
	}
	cases := []struct {
		name, ready string
		weight      float64
		log         string
	}{
		{"webhook pods not ready", "0/1", 0.9, "secrets is forbidden"},
		{"webhook pods ready", "1/1", 0.8, "secrets is forbidden"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(events+strings.Replace(pods, "%s", c.ready, 1)), now)
			var b webhookBackend
			for _, o := range res.Objects {
				if p, ok := o.(*corev1.Pod); ok && workloadOfName(p.Name) == "istiod" {
					b.Pods = append(b.Pods, *p)
				}
			}
			b.Lines = logs
			var call webhookCall
			var failed []corev1.Event
			for _, e := range res.Events {
				if cl, ok := parseWebhookCall(e.Message); ok && e.Reason == "FailedCreate" {
					call, failed = cl, append(failed, e)
				}
			}
			if len(b.Pods) != 1 || len(failed) != 1 {
				t.Fatalf("read %d istiod pods, %d FailedCreate", len(b.Pods), len(failed))
			}
			f, ok := webhookFinding(call, failed, b, now.Add(-time.Hour))
			if !ok || f.Subject != "orders-api" || f.Weight != c.weight || !strings.Contains(f.fact("backend_log"), c.log) {
				t.Fatalf("finding %+v", f)
			}
			h := &Hypothesis{Kind: KindWebhookUnreachable, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, "namespace.sidecar-injector.istio.io", "istio-system/istiod", "context deadline exceeded", "secrets is forbidden")
			if _, ok := webhookFinding(call, nil, b, now); ok {
				t.Error("a finding without failed creations")
			}
		})
	}
}
