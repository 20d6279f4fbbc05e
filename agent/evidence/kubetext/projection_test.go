package kubetext_test

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A get -o yaml|json cut by yq or jq to a few fields has no kind to decode
// it by: it is kept as text with its command (a mechanism that knows the
// resource reads its fields), not dropped; so is a whole custom resource
// (a VirtualService, a ScaledObject), whose kind is not read into objects;
// whole objects of the built-in kinds are still read.
func TestProjectionKeptAsText(t *testing.T) {
	ref := time.Date(2026, 8, 20, 16, 40, 0, 0, time.UTC)
	cases := []struct {
		name, text    string
		outputs, objs int
	}{
		{"yq projection of a custom resource", `$ kubectl get nodepool gpu -o yaml | yq '{"limits": .spec.limits, "status": .status.resources}'
limits:
  cpu: "64"
  nvidia.com/gpu: "8"
status:
  nodes: "8"
  nvidia.com/gpu: "8"
`, 1, 0},
		{"jq projection to JSON", `$ kubectl get deploy web -n shop -o json | jq '.spec.template.spec.containers[0].resources'
{
  "limits": {"cpu": "500m"}
}
`, 1, 0},
		{"a whole custom resource (a VirtualService) in YAML", `$ kubectl get virtualservice pricing -n shop -o yaml
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: pricing
  namespace: shop
spec:
  hosts:
  - pricing.shop.svc.cluster.local
  http:
  - route:
    - destination:
        host: pricing.shop.svc.cluster.local
    timeout: 1s
`, 1, 0},
		{"a custom resource (a KEDA ScaledObject) in JSON", `$ kubectl get scaledobject worker -n jobs -o json
{
  "apiVersion": "keda.sh/v1alpha1",
  "kind": "ScaledObject",
  "metadata": {"name": "worker", "namespace": "jobs"},
  "spec": {"scaleTargetRef": {"name": "worker"}, "minReplicaCount": 1, "maxReplicaCount": 4}
}
`, 1, 0},
		{"several YAML documents, custom and built-in", `$ kubectl get cm,destinationrule -n shop -o yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: shop
data:
  MODE: fast
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: pricing
  namespace: shop
spec:
  host: pricing
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: stock
  namespace: shop
spec:
  host: stock
`, 1, 1},
		{"a whole object", `$ kubectl get cm app -n shop -o yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: shop
data:
  MODE: fast
`, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(c.text), ref)
			if len(res.Outputs) != c.outputs || len(res.Objects) != c.objs {
				t.Errorf("%d outputs, %d objects; want %d, %d", len(res.Outputs), len(res.Objects), c.outputs, c.objs)
			}
			for _, o := range res.Outputs {
				if len(o.Lines) < 2 {
					t.Errorf("output kept without its lines: %+v", o)
				}
			}
		})
	}
}
