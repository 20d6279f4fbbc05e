package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
)

// hpaObjects: a Deployment-owned pod whose HPA is at its maximum, a
// StatefulSet pod with an HPA, pods without owner references (as a kubectl
// get table gives them: the name says the workload), a bare pod, and an
// HPA of another workload.
const hpaObjects = `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: search, namespace: api, uid: d-search}
  spec:
    selector: {matchLabels: {app: search}}
    template:
      metadata: {labels: {app: search}}
      spec: {containers: [{name: search, image: search:1}]}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata:
    name: search-7d8c9b5f4
    namespace: api
    uid: rs-search
    ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: search, uid: d-search, controller: true}]
  spec:
    selector: {matchLabels: {app: search}}
    template:
      metadata: {labels: {app: search}}
      spec: {containers: [{name: search, image: search:1}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: search-7d8c9b5f4-2lq8d
    namespace: api
    labels: {app: search}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: search-7d8c9b5f4, uid: rs-search, controller: true}]
  spec: {containers: [{name: search, image: search:1}]}
  status: {phase: Running}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db, namespace: api, uid: s-db}
  spec:
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec: {containers: [{name: db, image: db:1}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: db-0
    namespace: api
    labels: {app: db}
    ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: s-db, controller: true}]
  spec: {containers: [{name: db, image: db:1}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: search-7d8c9b5f4-k7rjp, namespace: api}
  spec: {containers: [{name: search, image: search:1}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: searcher-7d8c9b5f4-k7rjp, namespace: api}
  spec: {containers: [{name: search, image: search:1}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: debug, namespace: api}
  spec: {containers: [{name: sh, image: busybox}]}
  status: {phase: Running}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: search, namespace: api}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: search}
    minReplicas: 3
    maxReplicas: 8
    metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
  status:
    currentReplicas: 8
    desiredReplicas: 8
    currentMetrics:
    - type: Resource
      resource: {name: cpu, current: {averageUtilization: 186, averageValue: 931m}}
    conditions:
    - {type: ScalingLimited, status: "True", reason: TooManyReplicas}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: db, namespace: api}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
    maxReplicas: 5
  status: {currentReplicas: 3, desiredReplicas: 3}
- apiVersion: autoscaling/v2
  kind: HorizontalPodAutoscaler
  metadata: {name: other, namespace: api}
  spec:
    scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: other}
    maxReplicas: 4
  status: {currentReplicas: 4, desiredReplicas: 4}
`

// TestDescribePodAutoscaler: describe_pod relates a pod to the HPA whose
// scale target is the workload owning it, whatever that workload's kind.
func TestDescribePodAutoscaler(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kubernetes", "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubernetes", "api", "all.yaml"), []byte(hpaObjects), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundle.json"), []byte(`{"captured_at": "2026-12-08T19:42:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Builtin()
	s := &tools.Session{Catalog: c, Toolkit: c.Names(), Env: &tools.Env{Sources: b.Sources(b.CapturedAt)}}
	for _, tc := range []struct {
		pod  string
		want []string // autoscaler relations, in order
	}{
		{"search-7d8c9b5f4-2lq8d", []string{"autoscaler HorizontalPodAutoscaler api/search found: replicas 8 current, 8 desired, max 8; metrics cpu 186%/70%; ScalingLimited (TooManyReplicas)"}},
		{"db-0", []string{"autoscaler HorizontalPodAutoscaler api/db found: replicas 3 current, 3 desired, max 5"}},
		{"search-7d8c9b5f4-k7rjp", []string{"autoscaler HorizontalPodAutoscaler api/search found: replicas 8 current, 8 desired, max 8; metrics cpu 186%/70%; ScalingLimited (TooManyReplicas); owner Deployment search inferred from the pod name"}},
		{"searcher-7d8c9b5f4-k7rjp", nil},
		{"debug", nil},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			out, err := s.Call(context.Background(), "describe_pod", json.RawMessage(`{"namespace": "api", "name": "`+tc.pod+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			d := out.(tools.PodDescription)
			var got []string
			for _, l := range rel(&tools.ResourceDescription{Related: d.Related}) {
				if strings.HasPrefix(l, "autoscaler ") {
					got = append(got, l)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("autoscalers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, r := range d.Related {
				if r.Relation == "autoscaler" && r.Object == nil {
					t.Errorf("autoscaler %s without its object", r.Name)
				}
			}
		})
	}
}
