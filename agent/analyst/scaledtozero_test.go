package analyst

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestScaledToZero checks a Deployment scaled to 0 while its Service
// still selects its pods, dated by the controller's event; a rollout's
// old ReplicaSet going to 0 and a Deployment at 0 that nothing routes to
// are not faults.
func TestScaledToZero(t *testing.T) {
	dep := func(replicas int) appsv1.Deployment {
		var d appsv1.Deployment
		js := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"cart-api","namespace":"shop","labels":{"app.kubernetes.io/name":"cart-api"}},
  "spec":{"replicas":` + map[int]string{0: "0", 3: "3"}[replicas] + `,"selector":{"matchLabels":{"app.kubernetes.io/name":"cart-api"}},
    "template":{"metadata":{"labels":{"app.kubernetes.io/name":"cart-api"}},"spec":{"containers":[{"name":"cart-api","image":"registry.shop/cart-api:5.6.0"}]}}},
  "status":{"observedGeneration":14,"replicas":` + map[int]string{0: "0", 3: "3"}[replicas] + `,"conditions":[{"type":"Progressing","status":"True","lastUpdateTime":"2026-04-09T10:51:03Z","lastTransitionTime":"2026-04-06T06:10:40Z","reason":"NewReplicaSetAvailable"}]}}`
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	var svc corev1.Service
	if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"cart-api","namespace":"shop"},"spec":{"selector":{"app.kubernetes.io/name":"cart-api"},"ports":[{"name":"http","port":80,"targetPort":"http"}]}}`), &svc); err != nil {
		t.Fatal(err)
	}
	var ev corev1.Event
	if err := json.Unmarshal([]byte(`{"involvedObject":{"kind":"Deployment","namespace":"shop","name":"cart-api","apiVersion":"apps/v1"},"reason":"ScalingReplicaSet",
  "message":"Scaled down replica set cart-api-9blnxrpsns from 4 to 0","source":{"component":"deployment-controller"},"firstTimestamp":"2026-04-09T10:51:03Z","lastTimestamp":"2026-04-09T10:51:03Z","count":1,"type":"Normal"}`), &ev); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		ev   K8sEvidence
		want bool
	}{
		{"scaled to 0 behind a Service", K8sEvidence{Deployments: []appsv1.Deployment{dep(0)}, Services: []ServiceState{{Service: svc}}, Events: []corev1.Event{ev}}, true},
		{"a rollout's old ReplicaSet to 0", K8sEvidence{Deployments: []appsv1.Deployment{dep(3)}, Services: []ServiceState{{Service: svc}}, Events: []corev1.Event{ev}}, false},
		{"at 0 with nothing routing to it", K8sEvidence{Deployments: []appsv1.Deployment{dep(0)}, Events: []corev1.Event{ev}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectScaledToZero(&c.ev)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			f := fs[0]
			if f.Subject != "cart-api" || f.fact("from_replicas") != "4" || ts(f.Time) != "2026-04-09T10:51:03Z" {
				t.Errorf("finding on %s from %s at %s, want cart-api from 4 at 10:51:03", f.Subject, f.fact("from_replicas"), ts(f.Time))
			}
			h := &Hypothesis{Kind: KindScaledToZero, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{&f}}
			if d := describe(h, Scope{}); !strings.Contains(d, "scaled to 0 replicas") || !strings.Contains(d, "down from 4") {
				t.Errorf("description %q", d)
			}
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "--replicas=4") {
				t.Errorf("recommendations %+v", recs)
			}
		})
	}
}
