package analyst

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// gatheredOf reads a kubectl transcript into the evidence the analyst
// gathers (pods, nodes, Jobs, events).
func gatheredOf(t *testing.T, session string, now time.Time) (*Gathered, []corev1.Event) {
	t.Helper()
	res := kubetext.Parse([]byte(session), now)
	ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}}
	for _, o := range res.Objects {
		switch x := o.(type) {
		case *corev1.Pod:
			ev.K8s.Pods = append(ev.K8s.Pods, *x)
		case *corev1.Node:
			ev.K8s.Nodes = append(ev.K8s.Nodes, *x)
		case *batchv1.Job:
			ev.K8s.Jobs = append(ev.K8s.Jobs, *x)
		}
	}
	return ev, res.Events
}

// TestSelectorUnmatched: a pod the scheduler places nowhere because no
// node matches its node selector is explained by the label no node
// carries, read from the pod (or its Job's template) against the nodes'
// labels, as kubectl shows them: describe node pages, get nodes -L
// columns, -o yaml; the provisioner's word on a label it knows no value of
// counts too. Nodes whose labels were not read, or a selector some node
// matches, explain nothing.
func TestSelectorUnmatched(t *testing.T) {
	now := time.Date(2026, 10, 21, 7, 30, 0, 0, time.UTC)
	const unmatched = `Warning  FailedScheduling  2m47s (x11 over 47m)  default-scheduler  0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector. preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.`
	sched := func(n string) string {
		return strings.NewReplacer("%d", n).Replace(unmatched)
	}
	cases := []struct {
		name, session string
		says          []string // words of the description; none: no finding
		related       string
		earlier       []evidence.Change
	}{
		{"Job template selector, nodes -L, Karpenter", `$ kubectl describe job reports-etl-manual-8821 -n reporting
Name:             reports-etl-manual-8821
Namespace:        reporting
Labels:           app=reports-etl
Parallelism:      1
Pod Template:
  Labels:  app=reports-etl
           job-name=reports-etl-manual-8821
  Containers:
   etl:
    Image:      ghcr.io/lumen-analytics/reports-etl:2.7.4
  Node-Selectors:      lifecycle=spot
  Tolerations:         spot=true:NoSchedule
$ kubectl describe pod reports-etl-manual-8821-b9t6k -n reporting | tail -6
Events:
  Type     Reason            Age                   From               Message
  ----     ------            ----                  ----               -------
  ` + sched("3") + `
  Warning  FailedScheduling  2m40s (x10 over 51m)  karpenter          Failed to schedule pod, incompatible with nodepool "spot-general", label "lifecycle" does not have known values
$ kubectl get nodes -L lifecycle,karpenter.sh/capacity-type
NAME                                         STATUS   ROLES    AGE   VERSION               LIFECYCLE   CAPACITY-TYPE
ip-10-12-40-118.us-east-2.compute.internal   Ready    <none>   13h   v1.30.4-eks-a737599               spot
ip-10-12-41-9.us-east-2.compute.internal     Ready    <none>   13h   v1.30.4-eks-a737599               spot
ip-10-12-50-61.us-east-2.compute.internal    Ready    <none>   27d   v1.30.4-eks-a737599               on-demand
`, []string{"node selector requires the node label lifecycle=spot, which no node carries", "none of the 3 nodes carries the label lifecycle",
			"karpenter.sh/capacity-type=spot (2 nodes)", "the node provisioner knows no value of the label lifecycle",
			"The change that names the label: replace managed node group ng-spot-2 with Karpenter NodePool spot-general (nodes labelled karpenter.sh/capacity-type=spot)"}, "reports-etl",
			[]evidence.Change{
				{Timestamp: now.Add(-20 * 24 * time.Hour), Kind: "infra", Description: "add node group ng-lifecycle-hooks"},
				{Timestamp: now.Add(-13 * time.Hour), Kind: "infra", Description: "replace managed node group ng-spot-2 with Karpenter NodePool spot-general (nodes labelled karpenter.sh/capacity-type=spot)"},
			}},
		{"pod selector, described nodes without the label", `$ kubectl describe pod ingest-7d9f8b6c5-x2k9p -n data
Name:             ingest-7d9f8b6c5-x2k9p
Namespace:        data
Status:           Pending
Controlled By:    ReplicaSet/ingest-7d9f8b6c5
Node-Selectors:   disktype=nvme
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  ` + sched("2") + `
$ kubectl describe node worker-a
Name:               worker-a
Labels:             kubernetes.io/arch=amd64
                    kubernetes.io/hostname=worker-a
                    kubernetes.io/os=linux
                    storage=nvme
$ kubectl describe node worker-b
Name:               worker-b
Labels:             kubernetes.io/arch=amd64
                    kubernetes.io/hostname=worker-b
                    kubernetes.io/os=linux
`, []string{"ingest pods are unschedulable", "disktype=nvme", "none of the 2 nodes carries the label disktype", "storage=nvme (1 node)"}, "", nil},
		{"required node affinity In, nodes in other zones (-o yaml, --show-labels)", `$ kubectl get pod cache-0 -n edge -o yaml
apiVersion: v1
kind: Pod
metadata:
  name: cache-0
  namespace: edge
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - key: topology.kubernetes.io/zone
            operator: In
            values:
            - eu-west-1c
  containers:
  - name: cache
    image: redis:7.2
status:
  phase: Pending
$ kubectl get events -n edge
LAST SEEN   TYPE      REASON             OBJECT        MESSAGE
2m          Warning   FailedScheduling   pod/cache-0   0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.
$ kubectl get nodes --show-labels
NAME    STATUS   ROLES    AGE   VERSION   LABELS
n-1     Ready    <none>   9d    v1.29.6   kubernetes.io/hostname=n-1,topology.kubernetes.io/zone=eu-west-1a
n-2     Ready    <none>   9d    v1.29.6   kubernetes.io/hostname=n-2,topology.kubernetes.io/zone=eu-west-1a
n-3     Ready    <none>   9d    v1.29.6   kubernetes.io/hostname=n-3,topology.kubernetes.io/zone=eu-west-1b
`, []string{"topology.kubernetes.io/zone=eu-west-1c", "the 3 nodes carry topology.kubernetes.io/zone=eu-west-1a (2 nodes), eu-west-1b (1 node)"}, "", nil},
		{"node labels not read: nothing claimed", `$ kubectl describe pod ingest-7d9f8b6c5-x2k9p -n data
Name:             ingest-7d9f8b6c5-x2k9p
Namespace:        data
Status:           Pending
Node-Selectors:   disktype=nvme
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  ` + sched("2") + `
$ kubectl get nodes
NAME       STATUS   ROLES    AGE   VERSION
worker-a   Ready    <none>   40d   v1.29.6
worker-b   Ready    <none>   40d   v1.29.6
`, nil, "", nil},
		{"a node carries the label: the selector is not why", `$ kubectl describe pod ingest-7d9f8b6c5-x2k9p -n data
Name:             ingest-7d9f8b6c5-x2k9p
Namespace:        data
Status:           Pending
Node-Selectors:   disktype=nvme
Events:
  Type     Reason            Age   From               Message
  ----     ------            ----  ----               -------
  Warning  FailedScheduling  2m  default-scheduler  0/2 nodes are available: 1 Insufficient memory, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.
$ kubectl get nodes -L disktype
NAME       STATUS   ROLES    AGE   VERSION   DISKTYPE
worker-a   Ready    <none>   40d   v1.29.6   nvme
worker-b   Ready    <none>   40d   v1.29.6
`, nil, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, events := gatheredOf(t, c.session, now)
			ev.Earlier = c.earlier
			found := DetectEvents(events, ev.K8s.Pods, ev.Window)
			fs := detectSelectorUnmatched(ev, found)
			if c.says == nil {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding from %d events and %d nodes, got %+v", len(events), len(ev.K8s.Nodes), fs)
			}
			h := &Hypothesis{Kind: KindUnschedulable, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.says...)
			if recs := recommend(h, Scope{}); len(recs) == 0 || !strings.Contains(recs[0].Action, "node selector") {
				t.Errorf("recommendations %+v", recs)
			}
			if c.related != "" && !fs[0].relates(c.related) {
				t.Errorf("finding of %s does not relate to %s: %v", fs[0].Subject, c.related, fs[0].Related)
			}
		})
	}
}
