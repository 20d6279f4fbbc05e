package bundle_test

import (
	"context"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

// One pod shown by two transcripts (a kubectl get pods table in one file, a
// describe page in another, in either order) is one pod: the describe
// page's container states (the last termination's reason and exit code)
// are kept whichever file comes first, and the table fills nothing over
// them.
func TestTranscriptsOfOnePodInTwoFiles(t *testing.T) {
	getPods := `$ kubectl get pods -n store
NAME                          READY   STATUS             RESTARTS        AGE
worker-6d8f7b9c5-7xk2p        0/1     CrashLoopBackOff   9 (2m14s ago)   41m
worker-6d8f7b9c5-q4m8n        1/1     Running            0               41m
`
	getPodsWide := `$ kubectl get pods -n store -o wide
NAME                     READY   STATUS             RESTARTS       AGE   IP            NODE                                          NOMINATED NODE   READINESS GATES
worker-6d8f7b9c5-7xk2p   0/1     CrashLoopBackOff   9 (2m14s ago)  41m   10.40.22.140  ip-10-40-21-88.us-east-2.compute.internal     <none>           <none>
`
	describe := `$ kubectl describe pod worker-6d8f7b9c5-7xk2p -n store
Name:             worker-6d8f7b9c5-7xk2p
Namespace:        store
Priority:         0
Node:             ip-10-40-21-88.us-east-2.compute.internal/10.40.21.88
Start Time:       Mon, 23 Nov 2026 17:31:02 +0000
Labels:           app=worker
                  pod-template-hash=6d8f7b9c5
Status:           Running
IP:               10.40.22.140
Controlled By:  ReplicaSet/worker-6d8f7b9c5
Containers:
  worker:
    Container ID:   containerd://58e1b4c7a0d3
    Image:          registry.example.com/store/worker:4.1.3
    Port:           8080/TCP
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Mon, 23 Nov 2026 18:05:32 +0000
      Finished:     Mon, 23 Nov 2026 18:09:46 +0000
    Ready:          False
    Restart Count:  9
    Limits:
      memory:  1Gi
    Requests:
      memory:   1Gi
Conditions:
  Type              Status
  Ready             False
Events:           <none>
`
	describeOld := `$ kubectl describe pod worker-6d8f7b9c5-7xk2p -n store
Name:         worker-6d8f7b9c5-7xk2p
Namespace:    store
Node:         node-3/10.0.3.17
Start Time:   Mon, 23 Nov 2026 17:31:02 +0000
Labels:       app=worker
Status:       Running
Containers:
  worker:
    Image:          registry.example.com/store/worker:4.1.3
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Mon, 23 Nov 2026 18:05:32 +0000
      Finished:     Mon, 23 Nov 2026 18:05:40 +0000
    Ready:          False
    Restart Count:  9
Events:  <none>
`
	tests := []struct {
		name     string
		files    map[string]string
		reason   string
		exit     int32
		restarts int32
	}{
		{"get pods then describe", map[string]string{"kubernetes/01-get-pods.txt": getPods, "kubernetes/02-describe.txt": describe}, "OOMKilled", 137, 9},
		{"describe then get pods", map[string]string{"kubernetes/01-describe.txt": describe, "kubernetes/02-get-pods.txt": getPods}, "OOMKilled", 137, 9},
		{"get pods -o wide at the root, describe under kubernetes/", map[string]string{"session.txt": getPodsWide, "kubernetes/describe.txt": describeOld}, "Error", 1, 9},
		{"describe only", map[string]string{"kubernetes/describe.txt": describeOld}, "Error", 1, 9},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{"bundle.json": {Data: []byte(`{"captured_at": "2026-11-23T18:12:00Z"}`)}}
			for name, data := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			b, err := bundle.Open(fsys, "split")
			if err != nil {
				t.Fatal(err)
			}
			pods, err := b.Sources(b.CapturedAt).Kubernetes.Pods(context.Background(), "store", "")
			if err != nil {
				t.Fatal(err)
			}
			var p *corev1.Pod
			for i := range pods {
				if pods[i].Name == "worker-6d8f7b9c5-7xk2p" {
					if p != nil {
						t.Fatalf("the pod is listed twice")
					}
					p = &pods[i]
				}
			}
			if p == nil || len(p.Status.ContainerStatuses) != 1 {
				t.Fatalf("pod: %+v", p)
			}
			cs := p.Status.ContainerStatuses[0]
			term := cs.LastTerminationState.Terminated
			if cs.Name != "worker" || term == nil || term.Reason != tc.reason || term.ExitCode != tc.exit || cs.RestartCount != tc.restarts {
				t.Errorf("container status: %+v, last termination %+v; want %s, exit code %d, %d restarts", cs, term, tc.reason, tc.exit, tc.restarts)
			}
			if p.Spec.NodeName == "" || len(p.Spec.Containers) == 0 {
				t.Errorf("spec not kept: %+v", p.Spec)
			}
		})
	}
}
