package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRolloutStuck(t *testing.T) {
	testEvents(t, rolloutStuck, []eventCase{
		{"Deployment", "api", "ProgressDeadlineExceeded", corev1.EventTypeWarning, `ReplicaSet "api-7c9d8f6b5" has timed out progressing.`,
			KindRolloutStuck, []string{"the rollout of api is stuck: new pods do not become ready"}},
		{"Deployment", "api", "ScalingReplicaSet", corev1.EventTypeNormal, "Scaled up replica set api-7c9d8f6b5 to 3 from 2", "", nil},
	})
	h := &Hypothesis{Kind: KindRolloutStuck, Subject: "api", Primary: []*Finding{{Kind: KindRolloutStuck, Subject: "api", Summary: "deployment shop/api rollout stuck",
		Facts: map[string]string{"available": "2", "desired": "3"}}}}
	if d := describe(h, Scope{}); !strings.Contains(d, "(2 of 3 replicas available)") {
		t.Errorf("description %q", d)
	}
	if recs := recommend(h, Scope{}); len(recs) != 3 || recs[0].Action != "Mitigate rollout stuck: restart or roll back api" || recs[1].Action != "Investigate deployment shop/api rollout stuck" {
		t.Errorf("recommendations %v", recs)
	}
}
