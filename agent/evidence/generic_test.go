package evidence

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// Objects of kinds without a typed reader, as kubectl get -o yaml|json
// prints them, read generically: metadata, references, status conditions.
func TestReadGenericObject(t *testing.T) {
	cases := []struct {
		name, doc string
		kind, ns  string
		failing   string // "Type Status Reason" of the first failing condition; "" none
		parent    string
		refs      []string // "Kind ns/name" that must be among the refs
		stale     bool
	}{
		{name: "Gateway API HTTPRoute, backend not permitted", doc: `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  generation: 4
  name: shop
  namespace: storefront
spec:
  parentRefs:
  - name: public
    namespace: gateways
  rules:
  - backendRefs:
    - name: catalog
      port: 8080
    - name: reviews
      namespace: community
      port: 80
status:
  parents:
  - conditions:
    - lastTransitionTime: "2026-03-02T09:00:00Z"
      reason: Accepted
      status: "True"
      type: Accepted
    - lastTransitionTime: "2026-03-02T10:41:07Z"
      message: Failed to process route rule 1 backendRef 0, Backend ref to Service community/reviews not permitted by any ReferenceGrant.
      observedGeneration: 4
      reason: RefNotPermitted
      status: "False"
      type: ResolvedRefs
    controllerName: gateway.envoyproxy.io/gatewayclass-controller
    parentRef:
      name: public
      namespace: gateways
`, kind: "HTTPRoute", ns: "storefront", failing: "ResolvedRefs False RefNotPermitted", parent: "gateways/public",
			refs: []string{"Service storefront/catalog", "Service community/reviews", "Gateway gateways/public"}},
		{name: "cert-manager Certificate not Ready, json", doc: `{
    "apiVersion": "cert-manager.io/v1",
    "kind": "Certificate",
    "metadata": {"name": "api-tls", "namespace": "edge", "generation": 3},
    "spec": {
        "dnsNames": ["api.example.org"],
        "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "letsencrypt-prod"},
        "secretName": "api-tls"
    },
    "status": {
        "conditions": [
            {"lastTransitionTime": "2026-03-01T02:00:11Z", "message": "Issuing certificate as Secret does not exist", "observedGeneration": 3, "reason": "DoesNotExist", "status": "False", "type": "Ready"},
            {"lastTransitionTime": "2026-03-01T02:00:11Z", "message": "Issuing certificate as Secret does not exist", "observedGeneration": 3, "reason": "DoesNotExist", "status": "True", "type": "Issuing"}
        ],
        "failedIssuanceAttempts": 4
    }
}`, kind: "Certificate", ns: "edge", failing: "Ready False DoesNotExist", refs: []string{"ClusterIssuer edge/letsencrypt-prod", "Secret edge/api-tls"}},
		{name: "Argo CD Application degraded, sync failed", doc: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: orders
  namespace: argocd
  finalizers:
  - resources-finalizer.argocd.argoproj.io
spec:
  destination:
    namespace: orders
    server: https://kubernetes.default.svc
  source:
    path: apps/orders
    repoURL: https://git.example.org/platform/deploy.git
    targetRevision: main
status:
  health:
    status: Degraded
    message: Deployment "orders-api" exceeded its progress deadline
  operationState:
    finishedAt: "2026-03-04T11:02:40Z"
    message: 'one or more objects failed to apply, reason: admission webhook denied the request'
    phase: Failed
    startedAt: "2026-03-04T11:02:31Z"
  resources:
  - kind: Deployment
    name: orders-api
    namespace: orders
    health:
      status: Degraded
  sync:
    status: OutOfSync
`, kind: "Application", ns: "argocd", failing: "Healthy False Degraded", refs: []string{"Deployment orders/orders-api"}},
		{name: "Flux Kustomization stalled", doc: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  generation: 7
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps/prod
  sourceRef:
    kind: GitRepository
    name: fleet
status:
  observedGeneration: 6
  conditions:
  - lastTransitionTime: "2026-03-04T08:15:00Z"
    message: 'kustomize build failed: accumulating resources: open apps/prod/payments: no such file or directory'
    observedGeneration: 7
    reason: BuildFailed
    status: "False"
    type: Ready
  - lastTransitionTime: "2026-03-04T08:15:00Z"
    message: 'kustomize build failed'
    reason: BuildFailed
    status: "True"
    type: Stalled
`, kind: "Kustomization", ns: "flux-system", failing: "Ready False BuildFailed", refs: []string{"GitRepository flux-system/fleet"}, stale: true},
		{name: "KEDA ScaledObject ready and idle", doc: `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: worker
  namespace: jobs
spec:
  scaleTargetRef:
    name: worker
  triggers:
  - type: rabbitmq
    authenticationRef:
      name: rabbit-auth
status:
  conditions:
  - message: ScaledObject is defined correctly and is ready for scaling
    reason: ScaledObjectReady
    status: "True"
    type: Ready
  - message: Scaling is not performed because triggers are not active
    reason: ScalerNotActive
    status: "False"
    type: Active
`, kind: "ScaledObject", ns: "jobs", failing: "", refs: []string{"Deployment jobs/worker"}},
		{name: "Karpenter NodeClaim launched, no conditions failing", doc: `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-x7k2p
  ownerReferences:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    name: default
spec:
  nodeClassRef:
    group: karpenter.k8s.aws
    kind: EC2NodeClass
    name: default
status:
  conditions:
  - status: "True"
    type: Launched
  - status: "True"
    type: Registered
  - reason: Initializing
    status: "Unknown"
    type: Initialized
`, kind: "NodeClaim", refs: []string{"EC2NodeClass /default"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, err := yaml.YAMLToJSON([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			o, ok := ReadGenericObject(raw)
			if !ok {
				t.Fatal("not read")
			}
			if o.Kind != c.kind || o.Namespace != c.ns {
				t.Errorf("kind/ns = %s %s", o.Kind, o.Namespace)
			}
			fails := o.FailingConditions()
			got := ""
			if len(fails) > 0 {
				got = fails[0].Type + " " + fails[0].Status + " " + fails[0].Reason
				if fails[0].LastTransitionTime.IsZero() && c.kind != "ScaledObject" {
					t.Errorf("failing condition without its time: %+v", fails[0])
				}
				if fails[0].Parent != c.parent {
					t.Errorf("parent = %q, want %q", fails[0].Parent, c.parent)
				}
			}
			if got != c.failing {
				t.Errorf("failing = %q, want %q (conditions %+v)", got, c.failing, o.Conditions)
			}
			var refs []string
			for _, r := range o.Refs {
				refs = append(refs, r.Kind+" "+r.Namespace+"/"+r.Name)
			}
			for _, w := range c.refs {
				found := false
				for _, r := range refs {
					found = found || r == w
				}
				if !found {
					t.Errorf("ref %q missing from %v", w, refs)
				}
			}
			if o.Stale() != c.stale {
				t.Errorf("stale = %v", o.Stale())
			}
		})
	}
}

func TestReadGenericObjectMetadata(t *testing.T) {
	raw := []byte(`{"apiVersion":"external-secrets.io/v1beta1","kind":"ExternalSecret","metadata":{"name":"db","namespace":"pay",
"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{...}","team":"payments"},"labels":{"app":"pay"},
"deletionTimestamp":"2026-03-04T09:00:00Z","finalizers":["externalsecrets.external-secrets.io/externalsecret-cleanup"],
"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"pay","uid":"x"}]},
"spec":{"secretStoreRef":{"kind":"ClusterSecretStore","name":"vault"},"target":{"name":"db-credentials"}},
"status":{"conditions":[{"type":"Ready","status":"False","reason":"SecretSyncedError","message":"could not get secret data from provider","lastTransitionTime":"2026-03-04T08:59:00Z"}]}}`)
	o, ok := ReadGenericObject(raw)
	if !ok {
		t.Fatal("not read")
	}
	if _, has := o.Annotations[LastAppliedAnnotation]; has || o.Annotations["team"] != "payments" || o.Labels["app"] != "pay" {
		t.Errorf("annotations %v labels %v", o.Annotations, o.Labels)
	}
	if !o.Deleting.Equal(time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)) || len(o.Finalizers) != 1 || len(o.Owners) != 1 {
		t.Errorf("deleting %v finalizers %v owners %v", o.Deleting, o.Finalizers, o.Owners)
	}
	if f := o.FailingConditions(); len(f) != 1 || !strings.Contains(f[0].Message, "provider") {
		t.Errorf("failing %+v", f)
	}
	if !strings.Contains(o.Ref(), "ExternalSecret pay/db") {
		t.Errorf("ref %s", o.Ref())
	}
	for _, bad := range []string{`[]`, `{"kind":"X"}`, `{"metadata":{"name":"a"}}`, `{"kind":"PodList","items":[],"metadata":{"name":"x"}}`, `nope`} {
		if _, ok := ReadGenericObject([]byte(bad)); ok {
			t.Errorf("%s read as an object", bad)
		}
	}
}

func FuzzReadGenericObject(f *testing.F) {
	f.Add([]byte(`{"kind":"HTTPRoute","metadata":{"name":"a","namespace":"b"},"spec":{"rules":[{"backendRefs":[{"name":"s"}]}]},"status":{"parents":[{"parentRef":{"name":"g"},"conditions":[{"type":"ResolvedRefs","status":"False","reason":"RefNotPermitted","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}]}}`))
	f.Add([]byte(`{"kind":"Application","metadata":{"name":"a"},"status":{"health":{"status":"Degraded"},"operationState":{"phase":"Failed"},"resources":[{"kind":"Deployment","name":"d","health":{"status":"Missing"}}]}}`))
	f.Add([]byte(`{"kind":"X","metadata":{"name":"a","generation":2},"spec":{"a":{"b":{"destination":{"host":"svc.ns.svc.cluster.local"}}}},"status":{"observedGeneration":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		o, ok := ReadGenericObject(raw)
		if !ok {
			return
		}
		if o.Kind == "" || o.Name == "" || len(o.Conditions) > maxGenericConditions || len(o.Refs) > maxGenericRefs {
			t.Fatalf("bad object %+v", o)
		}
		_ = o.FailingConditions()
		_ = o.Stale()
	})
}
