package analyst

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
)

func TestNoEndpoints(t *testing.T) {
	for _, c := range []struct {
		subject, summary, want string
	}{
		{"cart", "service shop/cart has no ready endpoints (3 not ready)", "service cart has no ready endpoints, so requests to it fail"},
		{"payments", "service shop/payments has no ready endpoints (0 not ready)", "service payments has no ready endpoints"},
	} {
		h := &Hypothesis{Kind: KindNoEndpoints, Subject: c.subject, Primary: []*Finding{{Kind: KindNoEndpoints, Subject: c.subject, Summary: c.summary}}}
		if d := describe(h, Scope{}); !strings.Contains(d, c.want) {
			t.Errorf("description %q lacks %q", d, c.want)
		}
		recs := recommend(h, Scope{})
		if len(recs) != 3 || recs[1].Action != "Investigate "+c.summary {
			t.Errorf("recommendations %v", recs)
		}
	}
}

// TestNoEndpointsLabelsUnknown: pods and Services read from get tables
// carry no labels and no endpoint counts. A selector whose value names a
// listed workload counts that workload's pods; one no listed pod's name
// fits has unknown endpoints, not zero.
func TestNoEndpointsLabelsUnknown(t *testing.T) {
	const session = `[dba@jump-2 ~]$ kubectl get pods -n profiles
NAME                                  READY   STATUS             RESTARTS      AGE
profile-api-7d6c5b8f9-6mfpx           1/1     Running            0             6d
profile-api-7d6c5b8f9-hs2kn           1/1     Running            0             6d
profiles-db-0                         1/1     Running            0             27d
profiles-db-1                         1/1     Running            0             27d
search-5d8c9b7f6-q2x7k                0/1     CrashLoopBackOff   7 (2m ago)    14m
[dba@jump-2 ~]$ kubectl get svc -n profiles -o wide
NAME             TYPE        CLUSTER-IP      EXTERNAL-IP   PORT(S)    AGE     SELECTOR
profile-api      ClusterIP   10.96.88.14     <none>        80/TCP     2y41d   app=profile-api
profiles-db-ro   ClusterIP   10.96.140.201   <none>        5432/TCP   2y41d   app=profiles-db,role=replica
search           ClusterIP   10.96.140.210   <none>        8080/TCP   2y41d   app.kubernetes.io/name=search
exporter         ClusterIP   10.96.140.211   <none>        9187/TCP   2y41d   component=pg-exporter
`
	res := kubetext.Parse([]byte(session), time.Date(2026, 11, 18, 14, 40, 0, 0, time.UTC))
	var pods []corev1.Pod
	var svcs []ServiceState
	for _, o := range res.Objects {
		switch x := o.(type) {
		case *corev1.Pod:
			pods = append(pods, *x)
		case *corev1.Service:
			// As list_services reports a Service without an Endpoints
			// object: empty lists.
			svcs = append(svcs, ServiceState{Service: *x, Known: true})
		}
	}
	// A pod seen only in a kubectl logs line: name, no state.
	seen := corev1.Pod{}
	seen.Name, seen.Namespace = "exporter-6b7c8d9f5-h2k4m", "profiles"
	pods = append(pods, seen)
	for i := range svcs {
		if svcs[i].Service.Name == "exporter" {
			svcs[i].Service.Spec.Selector = map[string]string{"app": "exporter"}
		}
	}
	if len(pods) != 6 || len(svcs) != 4 {
		t.Fatalf("read %d pods and %d services from the session, want 5 and 4", len(pods), len(svcs))
	}
	got := map[string]bool{}
	for _, f := range DetectServices(svcs, pods) {
		if f.Kind == KindNoEndpoints {
			got[f.Subject] = true
		}
	}
	// search's only pod is not ready: no endpoints. profile-api and
	// profiles-db-ro have ready pods by name; exporter's pod, seen only by
	// name, has an unknown state.
	if want := map[string]bool{"search": true}; !maps.Equal(got, want) {
		t.Errorf("services without endpoints %v, want %v", got, want)
	}
}
