package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const gpuNodePage = `❯ kubectl describe node ip-10-60-10-205.eu-central-1.compute.internal
Name:               ip-10-60-10-205.eu-central-1.compute.internal
Roles:              <none>
Labels:             karpenter.sh/nodepool=gpu-a10g
                    nvidia.com/gpu.present=true
CreationTimestamp:  Mon, 20 Jul 2026 11:52:37 +0000
Taints:             nvidia.com/gpu=present:NoSchedule
Unschedulable:      false
❯ kubectl describe node ip-10-60-10-118.eu-central-1.compute.internal
Name:               ip-10-60-10-118.eu-central-1.compute.internal
Roles:              <none>
Labels:             karpenter.sh/nodepool=default
CreationTimestamp:  Mon, 15 Jun 2026 08:10:00 +0000
Taints:             <none>
Unschedulable:      false
`

const fluentBitDS = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluent-bit
  namespace: logging
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: fluent-bit
  template:
    metadata:
      labels:
        app.kubernetes.io/name: fluent-bit
    spec:
      containers:
      - name: fluent-bit
        image: cr.fluentbit.io/fluent/fluent-bit:3.1.4
%s
status:
  desiredNumberScheduled: 1
  numberReady: 1
`

// TestDaemonSetTaint: a DaemonSet that tolerates neither taint of a new
// GPU node gets no pod there; one that tolerates it, or tolerates every
// taint (operator Exists, no key), covers it.
func TestDaemonSetTaint(t *testing.T) {
	now := time.Date(2026, 7, 21, 10, 5, 0, 0, time.UTC)
	cases := []struct {
		name, tolerations string
		want              bool
	}{
		{"only the batch pool tolerated", `      tolerations:
      - effect: NoSchedule
        key: workload
        operator: Equal
        value: batch`, true},
		{"the gpu taint tolerated", `      tolerations:
      - effect: NoSchedule
        key: nvidia.com/gpu
        operator: Exists`, false},
		{"every taint tolerated", `      tolerations:
      - operator: Exists`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(gpuNodePage), now)
			ev := &Gathered{Window: Window{BaselineStart: now.Add(-48 * time.Hour), Start: now.Add(-24 * time.Hour), End: now},
				Scope: Scope{Service: "fluent-bit", Namespace: "logging"}}
			for _, o := range res.Objects {
				if n, ok := o.(*corev1.Node); ok {
					ev.K8s.Nodes = append(ev.K8s.Nodes, *n)
				}
			}
			var ds appsv1.DaemonSet
			if err := yaml.Unmarshal([]byte(strings.Replace(fluentBitDS, "%s", c.tolerations, 1)), &ds); err != nil {
				t.Fatal(err)
			}
			ev.K8s.DaemonSets = append(ev.K8s.DaemonSets, ds)
			if len(ev.K8s.Nodes) != 2 || len(ev.K8s.DaemonSets) != 1 {
				t.Fatalf("read %d nodes and %d DaemonSets", len(ev.K8s.Nodes), len(ev.K8s.DaemonSets))
			}
			fs := detectDaemonSetTaints(ev, nil)
			if !c.want {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Weight < 0.9 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindDaemonSetTaint, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "fluent-bit does not tolerate the taint nvidia.com/gpu=present:NoSchedule", "ip-10-60-10-205", "1 pods for 2 nodes")
			if !fs[0].Time.Equal(time.Date(2026, 7, 20, 11, 52, 37, 0, time.UTC)) {
				t.Errorf("onset %s, want the tainted node's creation", fs[0].Time)
			}
		})
	}
}
