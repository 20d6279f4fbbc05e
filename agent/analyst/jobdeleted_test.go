package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestJobDeleted reads the deletes of Jobs from an API server's audit log
// as EKS, a log file and GKE ship it, and says who deleted a Job of the
// question's subject: the TTL-after-finished controller with the TTL, or
// a person by name.
func TestJobDeleted(t *testing.T) {
	at := time.Date(2026, 3, 4, 2, 40, 27, 0, time.UTC)
	eksTTL := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"eee42171","stage":"ResponseComplete","requestURI":"/apis/batch/v1/namespaces/data/jobs/nightly-export-29927640","verb":"delete","user":{"username":"system:serviceaccount:kube-system:ttl-after-finished-controller","groups":["system:serviceaccounts"]},"userAgent":"kube-controller-manager/v1.33.5","objectRef":{"resource":"jobs","namespace":"data","name":"nightly-export-29927640","apiGroup":"batch","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-03-04T02:40:27.211000Z","stageTimestamp":"2026-03-04T02:40:27.218000Z"}`
	human := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","stage":"ResponseComplete","requestURI":"/apis/batch/v1/namespaces/data/jobs/nightly-export-29927641?propagationPolicy=Background","verb":"delete","user":{"username":"arn:aws:sts::123456789012:assumed-role/platform-admin/jane"},"objectRef":{"resource":"jobs","namespace":"data","name":"nightly-export-29927641","apiGroup":"batch","apiVersion":"v1"},"requestReceivedTimestamp":"2026-03-04T03:10:00.000000Z"}`
	gke := `{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"system:serviceaccount:kube-system:ttl-after-finished-controller"},"methodName":"io.k8s.batch.v1.jobs.delete","resourceName":"batch/v1/namespaces/data/jobs/nightly-export-29927642","serviceName":"k8s.io"},"resource":{"type":"k8s_cluster"},"timestamp":"2026-03-04T04:00:01.500Z","logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity"}`
	// Not deletes of a Job: the status of one, the pods the garbage
	// collector removes after it.
	status := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","requestURI":"/apis/batch/v1/namespaces/data/jobs/nightly-export-29927640/status","verb":"update","user":{"username":"system:serviceaccount:kube-system:job-controller"},"objectRef":{"resource":"jobs","namespace":"data","name":"nightly-export-29927640","subresource":"status"},"requestReceivedTimestamp":"2026-03-04T02:30:27.103000Z"}`
	pods := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","requestURI":"/api/v1/namespaces/data/pods/nightly-export-29927640-7x2kq","verb":"delete","user":{"username":"system:serviceaccount:kube-system:generic-garbage-collector"},"objectRef":{"resource":"pods","namespace":"data","name":"nightly-export-29927640-7x2kq"},"requestReceivedTimestamp":"2026-03-04T02:40:27.420000Z"}`
	lines := []evidence.LogLine{{Time: at, Text: eksTTL}, {Time: at, Text: status}, {Time: at, Text: pods}, {Time: at, Text: human}, {Time: at, Text: gke}}
	ds := auditJobDeletes(lines)
	if len(ds) != 3 {
		t.Fatalf("read %d deletes, want 3: %+v", len(ds), ds)
	}
	if ds[0].Job != "nightly-export-29927640" || ds[0].By != ttlController || !ds[0].At.Equal(time.Date(2026, 3, 4, 2, 40, 27, 211000000, time.UTC)) {
		t.Errorf("EKS delete read as %+v", ds[0])
	}
	if ds[2].Job != "nightly-export-29927642" || ds[2].Namespace != "data" || ds[2].By != ttlController {
		t.Errorf("GKE delete read as %+v", ds[2])
	}

	ttl := int32(600)
	cj := batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly-export", Namespace: "data"}}
	cj.Spec.JobTemplate.Spec.TTLSecondsAfterFinished = &ttl
	sc := Scope{Service: "nightly-export", Namespace: "data"}
	for _, c := range []struct {
		name string
		ev   Gathered
		want []string
	}{
		{"the CronJob's TTL", Gathered{JobDeletes: ds[:1], K8s: K8sEvidence{CronJobs: []batchv1.CronJob{cj}}},
			[]string{"Job data/nightly-export-29927640 is gone because Kubernetes deleted it itself", "TTL-after-finished controller", "10 minutes after it finished (ttlSecondsAfterFinished: 600)"}},
		{"the TTL printed by a cut get -o yaml", Gathered{JobDeletes: ds[:1], Commands: []evidence.CommandOutput{{Command: "kubectl -n data get cronjob nightly-export -o yaml | sed -n '/^spec:/,$p'", Lines: []string{"spec:", "  jobTemplate:", "    spec:", "      ttlSecondsAfterFinished: 3600"}}}},
			[]string{"one hour after it finished (ttlSecondsAfterFinished: 3600)"}},
		{"a person", Gathered{JobDeletes: ds[1:2]}, []string{"Job data/nightly-export-29927641 was deleted at 2026-03-04T03:10:00Z by arn:aws:sts::123456789012:assumed-role/platform-admin/jane"}},
	} {
		got := removedJobs(&c.ev, sc)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
	if got := removedJobs(&Gathered{JobDeletes: ds}, Scope{Service: "billing-snapshot"}); got != "" {
		t.Errorf("the Jobs of another workload are not the question's: %q", got)
	}
}
