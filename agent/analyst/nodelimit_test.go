package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestNodeLimit: pods held Pending by an autoscaler's configured limit are
// read from Karpenter's events and log (NodePool, older Provisioner) and the
// cluster autoscaler's (a node group at its max size, --max-nodes-total),
// the NodePool's limits against its status say which limit is used up, and
// the replicas added before say what used it; a scheduler's plain
// FailedScheduling and a cloud's refusal are not this.
func TestNodeLimit(t *testing.T) {
	t0 := time.Date(2026, 8, 20, 16, 5, 0, 0, time.UTC)
	ev := func(from, reason, msg string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ml", Name: "embedder-7f8d9c6b5d-8bq4m"}, Reason: reason, Type: corev1.EventTypeWarning,
			Message: msg, Source: corev1.EventSource{Component: from}, FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0)}
	}
	poolYAML := evidence.CommandOutput{Command: "kubectl get nodepool gpu -o yaml | yq '{\"limits\": .spec.limits, \"status\": .status.resources}'", Lines: strings.Split(`limits:
  cpu: "64"
  nvidia.com/gpu: "8"
status:
  cpu: "32"
  nodes: "8"
  nvidia.com/gpu: "8"`, "\n")}
	poolFull := evidence.CommandOutput{Command: "kubectl get nodepools.karpenter.sh gpu -o yaml", Lines: strings.Split(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  limits:
    cpu: "64"
    nvidia.com/gpu: "8"
  template:
    spec:
      requirements:
      - key: karpenter.sh/capacity-type
        operator: In
        values: ["on-demand"]
status:
  resources:
    cpu: "32"
    nodes: "8"
    nvidia.com/gpu: "8"`, "\n")}
	changes := []evidence.Change{
		{Service: "transcriber", Description: "transcriber replicas 0 -> 2 (batch)", Timestamp: t0.Add(-30 * time.Minute)},
		{Service: "embedder", Description: "embedder replicas 6 -> 10 for the backfill", Timestamp: t0.Add(-time.Minute)},
		{Service: "web", Description: "web replicas 8 -> 4", Timestamp: t0.Add(-10 * time.Minute)},
	}
	cases := []struct {
		name string
		ev   Gathered
		want []string
	}{
		{"Karpenter v1 event, the NodePool cut by yq", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("karpenter", "FailedScheduling", `Failed to schedule pod, incompatible with nodepool "default", did not tolerate taint nvidia.com/gpu=true:NoSchedule; all available instance types exceed limits for nodepool: "gpu"`)}},
			Commands: []evidence.CommandOutput{poolYAML}, Changes: changes, Scope: Scope{Namespace: "ml", Service: "embedder"}},
			[]string{"embedder pods stay Pending because Karpenter NodePool gpu is at its limit: limit nvidia.com/gpu: 8, 8 in use by 8 nodes", "Karpenter works as configured",
				"transcriber replicas 0 -> 2", "embedder replicas 6 -> 10"}},
		{"Karpenter's JSON log, the whole NodePool", Gathered{
			Commands: []evidence.CommandOutput{{Command: "kubectl logs -n kube-system deploy/karpenter", Lines: []string{
				`{"level":"ERROR","time":"2026-08-20T16:38:12.402Z","logger":"controller","message":"could not schedule pod","controller":"provisioner","Pod":{"name":"embedder-7f8d9c6b5d-8bq4m","namespace":"ml"},"error":"all available instance types exceed limits for nodepool: \"gpu\""}`}}, poolFull},
			Scope: Scope{Namespace: "ml", Service: "embedder"}},
			[]string{"embedder pods stay Pending because Karpenter NodePool gpu is at its limit: limit nvidia.com/gpu: 8"}},
		{"Karpenter before v1beta1: a Provisioner", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("karpenter", "FailedScheduling", `Failed to schedule pod, all available instance types exceed limits for provisioner: "default"`)}}, Scope: Scope{Namespace: "ml"}},
			[]string{"embedder pods stay Pending because Karpenter Provisioner default is at its limit"}},
		{"cluster autoscaler: node group at its max size", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("cluster-autoscaler", "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 max node group size reached, 3 node(s) didn't match Pod's node affinity/selector")}}, Scope: Scope{Namespace: "ml"}},
			[]string{"embedder pods stay Pending because every node group it could use (at its max size) is at its limit", "The cluster autoscaler works as configured",
				"No node running has room for them either: \"0/14 nodes are available: 8 Insufficient nvidia.com/gpu.\""}},
		{"cluster autoscaler's klog: the cluster-wide node limit", Gathered{
			Commands: []evidence.CommandOutput{{Command: "kubectl logs -n kube-system deploy/cluster-autoscaler", Lines: []string{
				"I0820 16:10:02.118293       1 static_autoscaler.go:598] Max total nodes in cluster reached: 50. Current number of ready nodes: 50"}}},
			Scope: Scope{Namespace: "ml", Service: "embedder"}},
			[]string{"embedder pods stay Pending because the cluster autoscaler's --max-nodes-total (50 nodes) is at its limit"}},
		{"the scheduler alone", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("default-scheduler", "FailedScheduling", "0/14 nodes are available: 8 Insufficient nvidia.com/gpu.")}}, Scope: Scope{Namespace: "ml"}}, nil},
		{"a cloud's refusal", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("cluster-autoscaler", "FailedScaleUp", "Node scale up in zones eu-west-1a associated with this pod failed: Other: VcpuLimitExceeded.")}}, Scope: Scope{Namespace: "ml"}}, nil},
		{"another namespace's pods", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			ev("karpenter", "FailedScheduling", `all available instance types exceed limits for nodepool: "gpu"`)}}, Scope: Scope{Namespace: "web"}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := []Finding{{Kind: KindUnschedulable, Subject: "embedder", Facts: map[string]string{"message": "0/14 nodes are available: 8 Insufficient nvidia.com/gpu."}}}
			fs := detectNodeLimits(&c.ev, found)
			if len(c.want) == 0 {
				if len(fs) != 0 {
					t.Fatalf("found %+v, want nothing", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings, want 1: %+v", len(fs), fs)
			}
			if fs[0].Subject != "embedder" || fs[0].fact("why") == "" {
				t.Errorf("subject %q, why %q", fs[0].Subject, fs[0].fact("why"))
			}
			h := &Hypothesis{Kind: KindNodeLimit, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := nodeLimitM.describe(h, c.ev.Scope)
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
			var r recommender
			r.h = h
			nodeLimitM.recommend(h, c.ev.Scope, &r)
			if len(r.recs) == 0 || !strings.Contains(r.recs[0].Action, "Raise") {
				t.Errorf("recommendations: %+v", r.recs)
			}
		})
	}
}

// TestNodeLimitDemand: what used up the pool's limit is read from changes
// that put many replicas of another workload on the cluster in the days
// before (a load test, a backfill, a scaled fleet), said in several ways;
// the pending workload's own code deploy, a handful of replicas and a
// change long before are not demand, and a code deploy does not fit as a
// trigger.
func TestNodeLimitDemand(t *testing.T) {
	onset := time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC)
	cases := []struct {
		c    evidence.Change
		want bool
	}{
		{evidence.Change{Service: "orders-loadtest", Description: "LT-77: orders load test environment in namespace perf (60 replicas + mock)", Timestamp: onset.Add(-18 * time.Hour)}, true},
		{evidence.Change{Service: "reindexer", Description: "kubectl scale deploy/reindexer --replicas=24 for the reindex", Timestamp: onset.Add(-2 * time.Hour)}, true},
		{evidence.Change{Service: "spark-executors", Description: "spark-executors scaled up to 30 for the nightly backfill", Timestamp: onset.Add(-6 * time.Hour)}, true},
		{evidence.Change{Service: "batch", Description: "batch: replicas: 12 (new CronJob fan-out)", Timestamp: onset.Add(-time.Hour)}, true},
		{evidence.Change{Service: "web", Description: "web 2 replicas for the canary", Timestamp: onset.Add(-time.Hour)}, false},
		{evidence.Change{Service: "embedder", Description: "embedder 40 replicas baseline", Timestamp: onset.Add(-time.Hour)}, false},
		{evidence.Change{Service: "old-fleet", Description: "old-fleet 50 replicas", Timestamp: onset.Add(-10 * 24 * time.Hour)}, false},
		{evidence.Change{Service: "embedder", Description: "embedder 1.14.0: request batching window 5ms -> 8ms", Timestamp: onset.Add(-time.Hour)}, false},
	}
	for _, c := range cases {
		d := demandChanges(&Gathered{Changes: []evidence.Change{c.c}}, "embedder", onset)
		if got := d != "" && strings.Contains(d, c.c.Service); got != c.want {
			t.Errorf("%q: demand %q, want %v", c.c.Description, d, c.want)
		}
	}
	// A change before the window is read too.
	if d := demandChanges(&Gathered{Earlier: []evidence.Change{cases[0].c}}, "embedder", onset); !strings.Contains(d, "orders-loadtest") {
		t.Errorf("earlier change not read: %q", d)
	}
	h := &Hypothesis{Kind: KindNodeLimit, Subject: "embedder"}
	deploy := &Finding{Kind: KindDeploy, Subject: "embedder", Facts: map[string]string{"description": "embedder 1.14.0: request batching window 5ms -> 8ms"}}
	if nodeLimitM.fitsChange(h, deploy) || !nodeLimitM.strictTriggers {
		t.Error("a code deploy fits as the trigger of a node limit")
	}
}

// TestNodeLimitFits: a change that puts pods on the pool (replicas, a
// raised request, an environment created) fits as the trigger of a node
// limit; a change of code or of settings does not.
func TestNodeLimitFits(t *testing.T) {
	h := &Hypothesis{Kind: KindNodeLimit, Subject: "pr-12-postgresql"}
	for desc, want := range map[string]bool{
		"preview environment created for PR #12 (checkout: new address form)": true,
		"helm install: release installed in namespace preview-12":             true,
		"embedder replicas 6 -> 10":                                           true,
		"resources.requests.cpu 500m -> 2":                                    true,
		"create the new environment for the load test":                        true,
		"pr-12 1.4.0: fix the address form validation":                        false,
		"log level info -> debug":                                             false,
	} {
		c := &Finding{Kind: KindDeploy, Subject: "pr-12-postgresql", Facts: map[string]string{"description": desc}}
		if got := nodeLimitM.fitsChange(h, c); got != want {
			t.Errorf("%q: fits %v, want %v", desc, got, want)
		}
	}
}
