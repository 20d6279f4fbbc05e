package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestObjectCondition: an object of any kind whose status condition says
// it does not work, turned within the window, is a finding about what
// depends on it (the backend the message names, the asked service among
// its references, the resource an Application reports degraded); a
// working object, or one failing since before the baseline, is not.
func TestObjectCondition(t *testing.T) {
	now := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	const route = `$ kubectl get httproute shop -n storefront -o yaml
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
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
  - backendRefs:
    - name: reviews
      namespace: community
      port: 80
status:
  parents:
  - conditions:
    - lastTransitionTime: "2026-01-10T09:00:00Z"
      reason: Accepted
      status: "True"
      type: Accepted
    - lastTransitionTime: "%s"
      message: Backend ref to Service community/reviews not permitted by any ReferenceGrant.
      reason: RefNotPermitted
      status: "%s"
      type: ResolvedRefs
    controllerName: gateway.envoyproxy.io/gatewayclass-controller
    parentRef:
      name: public
      namespace: gateways
`
	const app = `{
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "orders", "namespace": "argocd"},
    "spec": {"destination": {"namespace": "orders", "server": "https://kubernetes.default.svc"}},
    "status": {
        "health": {"status": "Degraded"},
        "operationState": {"phase": "Failed", "finishedAt": "2026-03-02T10:31:00Z", "message": "one or more synchronization tasks completed unsuccessfully"},
        "resources": [
            {"kind": "Service", "name": "orders-api", "namespace": "orders", "health": {"status": "Healthy"}},
            {"kind": "Deployment", "name": "orders-api-worker", "namespace": "orders", "health": {"status": "Degraded"}}
        ]
    }
}`
	cases := []struct {
		name, session, service string
		subject, object        string // "" : no finding
		evidence               string
	}{
		{"route backend not permitted", strings.Replace(strings.Replace(route, "%s", "2026-03-02T10:12:41Z", 1), "%s", "False", 1), "",
			"reviews", "httproute storefront/shop", "names Service community/reviews (spec.rules.backendRefs)"},
		{"route resolved", strings.Replace(strings.Replace(route, "%s", "2026-03-02T10:12:41Z", 1), "%s", "True", 1), "", "", "", ""},
		{"failing since before the baseline", strings.Replace(strings.Replace(route, "%s", "2026-02-02T10:12:41Z", 1), "%s", "False", 1), "", "", "", ""},
		{"application degraded: its degraded resource", "$ kubectl get app orders -n argocd -o json\n" + app, "",
			"orders-api-worker", "application argocd/orders", "Application argocd/orders reports OperationSucceeded False (Failed)"},
		{"application degraded: the asked service among its resources", "$ kubectl get app orders -n argocd -o json\n" + app, "orders-api",
			"orders-api", "application argocd/orders", "names Service orders/orders-api"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(c.session), now)
			ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}, Scope: Scope{Service: c.service}}
			ev.K8s.Custom = append([]evidence.GenericObject(nil), res.Generic...)
			if len(ev.K8s.Custom) != 1 {
				t.Fatalf("read %d objects (skipped %v)", len(ev.K8s.Custom), res.Skipped)
			}
			fs := detectObjectConditions(ev, nil)
			if c.subject == "" {
				if len(fs) > 0 {
					t.Fatalf("unexpected finding %+v", fs[0])
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings", len(fs))
			}
			f := fs[0]
			if f.Subject != c.subject || f.Object != c.object || f.Time.IsZero() || !f.Time.After(ev.Window.BaselineStart) {
				t.Errorf("finding %s %s at %v", f.Subject, f.Object, f.Time)
			}
			if !strings.Contains(strings.Join(f.Evidence, "\n"), c.evidence) {
				t.Errorf("evidence %q lacks %q", f.Evidence, c.evidence)
			}
			h := &Hypothesis{Kind: KindObjectCondition, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describeObjectCondition(h, ev.Scope)
			if !strings.Contains(d, f.fact("condition")) {
				t.Errorf("description %q", d)
			}
			r := &recommender{h: h}
			recommendObjectCondition(h, ev.Scope, r)
			if len(r.recs) == 0 {
				t.Error("no recommendation")
			}
			if f.fact("reason") == "RefNotPermitted" && !strings.Contains(r.recs[0].Action, "ReferenceGrant in namespace community") {
				t.Errorf("recommendation %q", r.recs[0].Action)
			}
		})
	}
}
