package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestGKEWorkloadIdentity reads Google APIs refusing a workload whose
// Kubernetes service account has no iam.gke.io/gcp-service-account
// annotation, in the client libraries' words (Python, Go, Java, the REST
// error), with the workloadIdentityUser binding naming another namespace;
// an annotated service account, or an AWS denial, is not this cause.
func TestGKEWorkloadIdentity(t *testing.T) {
	policy := evidence.CommandOutput{Command: "gcloud iam service-accounts get-iam-policy billing@shop-prod.iam.gserviceaccount.com --format=yaml",
		Lines: []string{"bindings:", "- members:", "  - serviceAccount:shop-prod.svc.id.goog[payments/billing-worker]", "  role: roles/iam.workloadIdentityUser"}}
	sa := func(ns string, annotated bool) corev1.ServiceAccount {
		s := corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "billing-worker", Namespace: ns}}
		if annotated {
			s.Annotations = map[string]string{"iam.gke.io/gcp-service-account": "billing@shop-prod.iam.gserviceaccount.com"}
		}
		return s
	}
	cases := []struct {
		name, line  string
		annotated   bool
		cmds        []evidence.CommandOutput
		want, bound bool
		noWI        bool
	}{
		{"Python Pub/Sub, binding of the old namespace", "google.api_core.exceptions.PermissionDenied: 403 User not authorized to perform this action.", false, []evidence.CommandOutput{policy}, true, true, false},
		{"Go gRPC", `pubsub: rpc error: code = PermissionDenied desc = User not authorized to perform this action.`, false, nil, true, false, false},
		{"Java GCS", `com.google.cloud.storage.StorageException: 403 Forbidden: billing-worker does not have storage.objects.get access to the Google Cloud Storage object. Permission 'storage.objects.get' denied on resource (or it may not exist).`, false, []evidence.CommandOutput{policy}, true, true, false},
		{"REST JSON error", `{"error": {"code": 403, "message": "Permission 'secretmanager.versions.access' denied for resource 'projects/shop-prod/secrets/db/versions/latest'", "status": "PERMISSION_DENIED"}}`, false, nil, true, false, false},
		{"annotated service account", "google.api_core.exceptions.PermissionDenied: 403 User not authorized to perform this action.", true, []evidence.CommandOutput{policy}, false, false, false},
		{"no Workload Identity in the cluster", `pubsub: rpc error: code = PermissionDenied desc = User not authorized to perform this action.`, false, nil, false, false, true},
		{"AWS denial", "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the GetObject operation: Access Denied", false, nil, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Gathered{Window: win, Commands: c.cmds,
				Logs: []LogSet{{Source: "billing-worker-6d9f-x2", Subject: "billing-worker", Namespace: "billing", Templates: []analysis.LogTemplate{{Example: c.line, Incident: 6, FirstIncident: win.Start}}}}}
			other := corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: "billing",
				Annotations: map[string]string{"iam.gke.io/gcp-service-account": "ledger@shop-prod.iam.gserviceaccount.com"}}}
			ev.K8s.ServiceAccounts = []corev1.ServiceAccount{sa("billing", c.annotated)}
			if !c.noWI {
				ev.K8s.ServiceAccounts = append(ev.K8s.ServiceAccounts, other)
			}
			f, ok := oneFinding(t, detectGKEWorkloadIdentity(&ev, nil), c.want)
			if !ok {
				return
			}
			if f.fact("ksa") != "billing/billing-worker" || (f.fact("bound_to") != "") != c.bound {
				t.Fatalf("facts %v", f.Facts)
			}
			d := checkWritten(t, gkeWorkloadIdentity, &f, "workloadIdentityUser", "iam.gke.io/gcp-service-account", "Workload Identity", "403")
			if c.bound && !strings.Contains(d, "payments/billing-worker") {
				t.Errorf("description lacks the old binding: %s", d)
			}
		})
	}
}
