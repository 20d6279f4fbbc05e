package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
)

// TestApplyRejected: a release (Helm, Flux, Argo CD, kubectl apply) whose
// rendered workload the API server rejects, by validation or by an
// admission policy, is read from the tool's own words; a manual kubectl
// edit in the object's managedFields is its drift. A pod refused by a
// policy (FailedCreate) is not it, nor a release that failed for another
// reason.
func TestApplyRejected(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
	cmd := func(run, out string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: run, Run: run, ExitCode: -1, Lines: strings.Split(strings.Trim(out, "\n"), "\n")}
	}
	managed := cmd("kubectl get deploy orders -n shop --show-managed-fields -o yaml", `
  managedFields:
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"orders"}:
                f:env:
                  k:{"name":"DB_PASSWORD"}:
                    .: {}
                    f:value: {}
    manager: kubectl-edit
    operation: Update
    time: "2026-02-20T08:00:00Z"`)
	cases := []struct {
		name          string
		commands      []evidence.CommandOutput
		events        []corev1.Event
		subject, how  string
		manual        string
		wantNoFinding bool
	}{
		{name: "helm upgrade, validation, with a manual edit",
			commands: []evidence.CommandOutput{cmd("helm upgrade orders charts/orders -n shop", `
Error: UPGRADE FAILED: cannot patch "orders" with kind Deployment: Deployment.apps "orders" is invalid: spec.template.spec.containers[0].env[3].valueFrom: Invalid value: "": may not be specified when `+"`value`"+` is not empty`), managed},
			subject: "orders", how: "validation", manual: "kubectl-edit"},
		{name: "kubectl apply, validation",
			commands: []evidence.CommandOutput{cmd("kubectl apply -f deploy.yaml", `
The Deployment "orders" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"order"}: `+"`selector`"+` does not match template `+"`labels`")},
			subject: "orders", how: "validation"},
		{name: "flux event, admission (gatekeeper)",
			events: []corev1.Event{{Reason: "UpgradeFailed", Type: "Warning", InvolvedObject: corev1.ObjectReference{Kind: "HelmRelease", Name: "orders"},
				Message: `Helm upgrade failed for release shop/orders with chart orders@2.0.0: cannot patch "orders" with kind Deployment: admission webhook "validation.gatekeeper.sh" denied the request: [must-have-owner] you must provide labels: {"owner"}`}},
			subject: "orders", how: "admission"},
		{name: "argo cd sync, admission (kyverno)",
			commands: []evidence.CommandOutput{cmd("argocd app get shop-orders", `
GROUP  KIND        NAMESPACE  NAME    STATUS     HEALTH   HOOK  MESSAGE
apps   Deployment  shop       orders  OutOfSync  Healthy        admission webhook "validate.kyverno.svc-fail" denied the request: resource Deployment/shop/orders was blocked due to the following policies disallow-latest-tag: validate-image-tag: 'validation error: Using a mutable image tag e.g. latest is not allowed. rule validate-image-tag failed at path /spec/template/spec/containers/0/image/'`)},
			subject: "orders", how: "admission"},
		{name: "pods refused by a policy are create refusals",
			events: []corev1.Event{{Reason: "FailedCreate", Type: "Warning", InvolvedObject: corev1.ObjectReference{Kind: "ReplicaSet", Name: "orders-5d9f"},
				Message: `Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: resource Pod/shop/orders-5d9f-x was blocked due to the following policies require-limits: check: 'validation error'`}},
			wantNoFinding: true},
		{name: "a release failed for another reason",
			commands: []evidence.CommandOutput{cmd("helm upgrade orders charts/orders -n shop", `
Error: UPGRADE FAILED: timed out waiting for the condition`)},
			wantNoFinding: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := &Gathered{Commands: tc.commands, Window: w}
			ev.K8s.Events = tc.events
			fs := detectApplyRejected(ev, nil)
			if tc.wantNoFinding {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			f := fs[0]
			if f.Subject != tc.subject || f.fact("how") != tc.how || f.fact("manual_manager") != tc.manual {
				t.Fatalf("got subject %q how %q manual %q, want %q %q %q", f.Subject, f.fact("how"), f.fact("manual_manager"), tc.subject, tc.how, tc.manual)
			}
			h := &Hypothesis{Kind: KindApplyRejected, Subject: f.Subject, Primary: []*Finding{&f}}
			d := describeApplyRejected(h, Scope{})
			if !strings.Contains(d, "rejects the rendered Deployment "+tc.subject) {
				t.Errorf("description: %s", d)
			}
			if tc.manual != "" && !strings.Contains(d, "DB_PASSWORD") {
				t.Errorf("description lacks the hand-set field: %s", d)
			}
		})
	}
}
