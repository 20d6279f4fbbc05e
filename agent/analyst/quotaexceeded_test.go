package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestQuotaExceeded(t *testing.T) {
	testEvents(t, quotaExceeded, []eventCase{
		{"ReplicaSet", "api-6b7c9d8f4", "FailedCreate", corev1.EventTypeWarning,
			`Error creating: pods "api-6b7c9d8f4-x2k9q" is forbidden: exceeded quota: compute-quota, requested: limits.cpu=2, used: limits.cpu=8, limited: limits.cpu=8`,
			KindQuota, []string{"api cannot create pods: resource quota exceeded", "ResourceQuota compute-quota", "limits.cpu: 8 used of 8, a new pod asks 2 more"}},
		// kubectl's "combined from similar events" prefix, two resources
		{"ReplicaSet", "web-7d9c8b6f5", "FailedCreate", corev1.EventTypeWarning,
			`(combined from similar events): Error creating: pods "web-7d9c8b6f5-p8w6r" is forbidden: exceeded quota: team-a, requested: requests.cpu=800m,requests.memory=1Gi, used: requests.cpu=11500m,requests.memory=19Gi, limited: requests.cpu=12,requests.memory=32Gi`,
			KindQuota, []string{"ResourceQuota team-a is used up", "requests.cpu: 11500m used of 12, a new pod asks 800m more"}},
		// a StatefulSet's and a Job's controller say the same
		{"StatefulSet", "kafka", "FailedCreate", corev1.EventTypeWarning,
			`create Pod kafka-2 in StatefulSet kafka failed error: pods "kafka-2" is forbidden: exceeded quota: storage-and-pods, requested: pods=1, used: pods=10, limited: pods=10`,
			KindQuota, []string{"kafka cannot create pods", "pods: 10 used of 10"}},
		{"Job", "nightly-export-29000", "FailedCreate", corev1.EventTypeWarning,
			`Error creating: pods "nightly-export-29000-abcde" is forbidden: exceeded quota: batch`,
			KindQuota, []string{"ResourceQuota batch is used up"}},
		{"ReplicaSet", "api-6b7c9d8f4", "FailedCreate", corev1.EventTypeWarning,
			`Error creating: pods "api-6b7c9d8f4-x2k9q" is forbidden: error looking up service account shop/api: serviceaccount "api" not found`, "", nil},
		{"ReplicaSet", "api-6b7c9d8f4", "SuccessfulCreate", corev1.EventTypeNormal, "Created pod: api-6b7c9d8f4-x2k9q", "", nil},
	})
}

// A workload the quota holds below the replicas it was scaled to (an
// autoscaler asked for more under load) is told as capped: what runs
// carries the load of what is missing.
func TestQuotaCapsScaleUp(t *testing.T) {
	f := &Finding{Kind: KindQuota, Subject: "web", Namespace: "shop"}
	f.setFact("quota", "compute")
	f.setFact("quota_resource", "requests.cpu")
	f.setFact("quota_used", "11500m")
	f.setFact("quota_hard", "12")
	f.setFact("quota_requested", "800m")
	r := &Finding{Kind: KindRolloutStuck, Subject: "web"}
	r.setFact("desired", "10")
	r.setFact("available", "6")
	l := &Finding{Kind: KindLatency, Subject: "web"}
	h := &Hypothesis{Kind: KindQuota, Subject: "web", Primary: []*Finding{f}, Support: []*Finding{r, l}}
	d := describe(h, Scope{Namespace: "shop"})
	for _, want := range []string{"runs 6 of the 10 replicas", "carry the load", "requests.cpu: 11500m used of 12"} {
		if !strings.Contains(d, want) {
			t.Errorf("description %q lacks %q", d, want)
		}
	}
	var recs []string
	for _, rec := range recommend(h, Scope{Namespace: "shop"}) {
		recs = append(recs, rec.Action)
	}
	if all := strings.Join(recs, "\n"); !strings.Contains(all, "kubectl describe quota compute -n shop") || !strings.Contains(all, "autoscaler's maximum") {
		t.Errorf("recommendations:\n%s", all)
	}
	h.Support = nil // no scale-up asked for: nothing said of one
	if d := describe(h, Scope{Namespace: "shop"}); strings.Contains(d, "replicas") {
		t.Errorf("description %q speaks of replicas", d)
	}
}
