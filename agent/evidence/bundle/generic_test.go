package bundle_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Objects of kinds without a typed reader reach GenericObjectReader from
// every form: a -o yaml file in a namespace folder (without
// metadata.namespace), a -o json List of mixed kinds, and kubectl get -o
// yaml in a transcript, a built-in kind without a reader (RuntimeClass)
// among them.
func TestGenericObjects(t *testing.T) {
	const certYAML = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: api-tls
spec:
  secretName: api-tls
  issuerRef:
    kind: ClusterIssuer
    name: letsencrypt-prod
status:
  conditions:
  - lastTransitionTime: "2027-01-20T16:58:02Z"
    message: 'The certificate request has failed to complete and will be retried: Failed to wait for order resource "api-tls-1-2213" to become ready: order is in "errored" state'
    observedGeneration: 1
    reason: Failed
    status: "False"
    type: Ready
`
	const listJSON = `{
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "networking.istio.io/v1",
            "kind": "DestinationRule",
            "metadata": {"name": "payments", "namespace": "pay"},
            "spec": {"host": "payments.pay.svc.cluster.local", "trafficPolicy": {"tls": {"mode": "ISTIO_MUTUAL"}}}
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "pay-config", "namespace": "pay"},
            "data": {"a": "b"}
        }
    ],
    "metadata": {"resourceVersion": ""}
}`
	const session = `$ kubectl get application orders -n argocd -o yaml
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: orders
  namespace: argocd
spec:
  destination:
    namespace: orders
    server: https://kubernetes.default.svc
status:
  health:
    status: Degraded
  operationState:
    finishedAt: "2027-01-20T17:02:40Z"
    message: 'one or more objects failed to apply, reason: Deployment.apps "orders-api" is invalid'
    phase: Failed
  resources:
  - kind: Deployment
    name: orders-api
    namespace: orders
    health:
      status: Degraded
$ kubectl get runtimeclass gvisor -o yaml
apiVersion: node.k8s.io/v1
handler: runsc
kind: RuntimeClass
metadata:
  name: gvisor
scheduling:
  nodeSelector:
    sandbox: gvisor
`
	ctx := context.Background()
	b := formsBundle(t, fstest.MapFS{
		"kubernetes/edge/certificate-api-tls.yaml": {Data: []byte(certYAML)},
		"kubernetes/pay/objects.json":              {Data: []byte(listJSON)},
		"session.txt":                              {Data: []byte(session)},
	})
	k := b.Sources(b.CapturedAt).Kubernetes
	r, ok := k.(evidence.GenericObjectReader)
	if !ok {
		t.Fatal("the bundle serves no generic objects")
	}
	objs, err := r.GenericObjects(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		s := o.Ref()
		if f := o.FailingConditions(); len(f) > 0 {
			s += " failing " + f[0].Type + "/" + f[0].Reason
		}
		got = append(got, s)
	}
	want := "RuntimeClass gvisor; Application argocd/orders failing Healthy/Degraded; Certificate edge/api-tls failing Ready/Failed; DestinationRule pay/payments"
	if strings.Join(got, "; ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "; "), want)
	}
	for _, o := range objs {
		if o.Source == "" {
			t.Errorf("%s without its source", o.Ref())
		}
		if o.Kind == "Certificate" && !strings.Contains(o.Source, "certificate-api-tls.yaml") {
			t.Errorf("source %s", o.Source)
		}
	}
	// The ConfigMap of the List is still a typed object.
	cms, err := k.Objects(ctx, "ConfigMap", "pay", "")
	if err != nil || len(cms) != 1 {
		t.Errorf("configmaps %v %v", cms, err)
	}
	// Namespace filter: pay's and cluster-scoped ones.
	objs, _ = r.GenericObjects(ctx, "pay")
	if len(objs) != 2 {
		t.Errorf("pay: %d objects", len(objs))
	}
}
