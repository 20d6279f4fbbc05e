package analyst

import (
	"fmt"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// describeAllAtOnce is kubectl describe deployment of a service with the
// given strategy lines, status line and scaling events.
func describeAllAtOnce(strategy, replicas, events string) string {
	return fmt.Sprintf(`$ kubectl describe deployment gateway -n web
Name:                   gateway
Namespace:              web
Selector:               app=gateway
Replicas:               %s
%s
MinReadySeconds:        0
Pod Template:
  Labels:  app=gateway
  Containers:
   gateway:
    Image:      registry.local/web/gateway:3.1.0
    Port:       8080/TCP
    Readiness:  http-get http://:8080/ready delay=45s timeout=1s period=10s #success=1 #failure=3
Conditions:
  Type           Status  Reason
  ----           ------  ------
  Available      True    MinimumReplicasAvailable
  Progressing    True    NewReplicaSetAvailable
NewReplicaSet:   gateway-7d5b9c6f8d (6/6 replicas created)
Events:
  Type    Reason             Age   From                   Message
  ----    ------             ----  ----                   -------
%s`, replicas, strategy, events)
}

// A rollout whose strategy takes every pod down at once, read from
// kubectl describe deployment: maxUnavailable 100% with the 1.26+ event
// "Scaled down replica set X to 0 from 6", an older controller's "to 0"
// without its count, the Recreate strategy, and an integer maxUnavailable
// at the replica count from a Deployment's spec (-o yaml) with the "from 6
// to 0" wording. A 25% maxUnavailable stepping down, a 100% one whose old
// ReplicaSet went down in steps, a rollout not fully available now (the
// new version fails: its own cause) and a single replica are none.
func TestRolloutAllAtOnce(t *testing.T) {
	now := time.Date(2026, 5, 12, 9, 45, 0, 0, time.UTC)
	w := Window{BaselineStart: now.Add(-3 * time.Hour), Start: now.Add(-time.Hour), End: now}
	const (
		pct100    = "StrategyType:           RollingUpdate\nRollingUpdateStrategy:  100% max unavailable, 25% max surge"
		pct25     = "StrategyType:           RollingUpdate\nRollingUpdateStrategy:  25% max unavailable, 25% max surge"
		recreate  = "StrategyType:           Recreate"
		healthy   = "6 desired | 6 updated | 6 total | 6 available | 0 unavailable"
		upNew     = "  Normal  ScalingReplicaSet  33m   deployment-controller  Scaled up replica set gateway-7d5b9c6f8d to 2\n"
		downNew   = "  Normal  ScalingReplicaSet  33m   deployment-controller  Scaled down replica set gateway-6c8f7d9b54 to 0 from 6\n"
		downOld   = "  Normal  ScalingReplicaSet  33m   deployment-controller  Scaled down replica set gateway-6c8f7d9b54 to 0\n"
		downSteps = "  Normal  ScalingReplicaSet  35m   deployment-controller  Scaled down replica set gateway-6c8f7d9b54 to 3 from 6\n" +
			"  Normal  ScalingReplicaSet  33m   deployment-controller  Scaled down replica set gateway-6c8f7d9b54 to 0 from 3\n"
	)
	fromText := func(text string) *Gathered {
		res := kubetext.Parse([]byte(text), now)
		ev := &Gathered{Window: w}
		for _, o := range res.Objects {
			if d, ok := o.(*appsv1.Deployment); ok {
				ev.K8s.Deployments = append(ev.K8s.Deployments, *d)
			}
		}
		ev.K8s.Events = res.Events
		return ev
	}
	// A Deployment as -o yaml has it, with an integer maxUnavailable.
	six := int32(6)
	eight := intstr.FromInt32(8)
	spec := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gateway", Namespace: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &six, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &eight}}},
		Status: appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, AvailableReplicas: 6, ReadyReplicas: 6}}
	specEv := &Gathered{Window: w, K8s: K8sEvidence{Deployments: []appsv1.Deployment{spec}, Events: []corev1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "web"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "gateway", Namespace: "web"},
		Reason:         "ScalingReplicaSet", Message: "Scaled down replica set gateway-6c8f7d9b54 from 6 to 0",
		LastTimestamp: mt(now.Add(-30 * time.Minute))}}},
		Earlier: []evidence.Change{{Timestamp: now.Add(-7 * 24 * time.Hour), Service: "gateway", Kind: "config", Description: "gateway: move to the shared chart, rollout block copied from the worker preset"}}}
	cases := []struct {
		name    string
		ev      *Gathered
		subject string
		want    []string
	}{
		{"describe: 100% with 'to 0 from 6'", fromText(describeAllAtOnce(pct100, healthy, upNew+downNew)), "gateway",
			[]string{"maxUnavailable 100% of 6 replicas", "gateway-6c8f7d9b54 down to 0 from 6", "readiness probe delay 45s", "6 of 6 replicas available"}},
		{"describe: 100% with an older controller's 'to 0'", fromText(describeAllAtOnce(pct100, healthy, upNew+downOld)), "gateway",
			[]string{"every pod down at once", "down to 0 from every replica"}},
		{"describe: Recreate", fromText(describeAllAtOnce(recreate, healthy, downNew+upNew)), "gateway", []string{"strategy Recreate"}},
		{"spec: integer maxUnavailable above the replicas, 'from 6 to 0'", specEv, "gateway",
			[]string{"maxUnavailable 8 of 6 replicas", "rollout block copied from the worker preset"}},
		{"25% max unavailable: none", fromText(describeAllAtOnce(pct25, healthy, upNew+downNew)), "", nil},
		{"100% but scaled down in steps: none", fromText(describeAllAtOnce(pct100, healthy, upNew+downSteps)), "", nil},
		{"not available now: none", fromText(describeAllAtOnce(pct100, "6 desired | 6 updated | 6 total | 0 available | 6 unavailable", upNew+downNew)), "", nil},
		{"one replica: none", fromText(describeAllAtOnce(pct100, "1 desired | 1 updated | 1 total | 1 available | 0 unavailable",
			"  Normal  ScalingReplicaSet  33m   deployment-controller  Scaled down replica set gateway-6c8f7d9b54 to 0 from 1\n")), "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := onlyFinding(t, detectRolloutAllAtOnce(c.ev), c.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindRolloutAllAtOnce, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}
