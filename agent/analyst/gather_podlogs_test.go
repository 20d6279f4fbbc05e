package analyst

import (
	"slices"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	corev1 "k8s.io/api/core/v1"
)

// TestPodsForLogs: every pod of the asked service, and one pod of each
// other Deployment when all are healthy, but every member of a StatefulSet (a primary and its replica
// differ) and every pod someone ran commands in, from a get pods table.
func TestPodsForLogs(t *testing.T) {
	const session = `[dba@jump-2 ~]$ kubectl get pods -n profiles
NAME                                  READY   STATUS    RESTARTS     AGE
profile-api-7d6c5b8f9-6mfpx           1/1     Running   0            6d
profile-api-7d6c5b8f9-hs2kn           1/1     Running   0            6d
profile-api-7d6c5b8f9-vl8qd           1/1     Running   0            6d
profiles-db-0                         1/1     Running   0            27d
profiles-db-1                         1/1     Running   0            27d
avatar-resizer-5c9d8e7f6-kp3zt        1/1     Running   0            8d
avatar-resizer-5c9d8e7f6-x8m2q        1/1     Running   0            8d
`
	res := kubetext.Parse([]byte(session), time.Date(2026, 11, 18, 14, 40, 0, 0, time.UTC))
	var pods []corev1.Pod
	for _, o := range res.Objects {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, *p)
		}
	}
	names := func(g *gatherer) []string {
		var out []string
		for _, p := range g.podsForLogs() {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	g := newGatherer(Options{MaxPodLogs: 30}, Scope{Service: "profile-api", Namespace: "profiles"}, nil)
	g.k8s.Pods = pods
	if got, want := names(g), []string{"avatar-resizer-5c9d8e7f6-kp3zt", "profile-api-7d6c5b8f9-6mfpx", "profile-api-7d6c5b8f9-hs2kn", "profile-api-7d6c5b8f9-vl8qd", "profiles-db-0", "profiles-db-1"}; !slices.Equal(got, want) {
		t.Errorf("pods read %v, want %v", got, want)
	}
	g.commands = []evidence.CommandOutput{{Command: "kubectl exec -it avatar-resizer-5c9d8e7f6-x8m2q -n profiles -- sh", Exec: true, Namespace: "profiles", Pod: "avatar-resizer-5c9d8e7f6-x8m2q", Run: "df -h /tmp"}}
	if got := names(g); !slices.Contains(got, "avatar-resizer-5c9d8e7f6-x8m2q") {
		t.Errorf("pods read %v: the pod commands ran in is missing", got)
	}
}
