package kubetext_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// A kubectl get pods row of a pod of several containers shows the state
// of the one that fails (kubectl's STATUS column), of an init container
// behind "Init:"; the logs the transcript read name it.
func TestPodRowsOfSeveralContainers(t *testing.T) {
	ref := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(`$ kubectl -n shop get pods
NAME                      READY   STATUS                  RESTARTS       AGE
api-7d9f6c8b5-x2k4p       1/3     CrashLoopBackOff        12 (2m ago)    40m
api-7d9f6c8b5-q8j3n       2/3     Error                   11 (4m ago)    40m
orders-6b8d7f9c4-h2k8m    0/2     Init:CrashLoopBackOff   6 (90s ago)    12m
orders-6b8d7f9c4-w7v5s    0/2     Init:0/2                0              12m
orders-6b8d7f9c4-z3c6d    0/2     PodInitializing         0              1m
web-5c6d7f8b9-abcde       1/2     Running                 3 (40s ago)    3d
web-5c6d7f8b9-fghij       2/2     Running                 0              3d
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c metrics-agent --previous
2026-11-25T11:17:58Z FATAL required environment variable STATSD_HOST is not set
$ kubectl -n shop logs api-7d9f6c8b5-x2k4p -c api
2026-11-25T11:19:58Z INFO serving on :8080
$ kubectl -n shop logs orders-6b8d7f9c4-h2k8m -c db-migrate --previous
2026-11-25T11:18:21Z ERROR migration 0042 failed: pq: relation "orders_v2" does not exist
$ kubectl -n shop logs orders-6b8d7f9c4-w7v5s -c wait-for-db
waiting for postgres:5432...
`), ref)
	tests := []struct {
		pod        string
		init       bool   // the state is an init container's
		name       string // the container's name, "" when unknown
		waiting    string
		terminated string
		running    bool
		restarts   int32
		ready      corev1.ConditionStatus // "" when the row does not say
	}{
		// the previous log names the crashing sidecar, not the app
		// container whose current log was read too
		{pod: "api-7d9f6c8b5-x2k4p", name: "metrics-agent", waiting: "CrashLoopBackOff", restarts: 12, ready: corev1.ConditionFalse},
		{pod: "api-7d9f6c8b5-q8j3n", terminated: "Error", restarts: 11, ready: corev1.ConditionFalse},
		{pod: "orders-6b8d7f9c4-h2k8m", init: true, name: "db-migrate", waiting: "CrashLoopBackOff", restarts: 6, ready: corev1.ConditionFalse},
		{pod: "orders-6b8d7f9c4-w7v5s", init: true, name: "wait-for-db", running: true, ready: corev1.ConditionFalse},
		{pod: "orders-6b8d7f9c4-z3c6d", waiting: "PodInitializing", ready: corev1.ConditionFalse},
		{pod: "web-5c6d7f8b9-abcde", ready: corev1.ConditionFalse},
		{pod: "web-5c6d7f8b9-fghij", ready: corev1.ConditionTrue},
	}
	for _, tc := range tests {
		t.Run(tc.pod, func(t *testing.T) {
			p := object[*corev1.Pod](t, res, "shop", tc.pod)
			sts, other := p.Status.ContainerStatuses, p.Status.InitContainerStatuses
			if tc.init {
				sts, other = other, sts
			}
			if len(other) != 0 {
				t.Fatalf("statuses on the wrong list: %+v", other)
			}
			if tc.waiting == "" && tc.terminated == "" && !tc.running {
				if len(sts) != 0 {
					t.Errorf("which container restarted is not shown, got %+v", sts)
				}
			} else {
				if len(sts) != 1 {
					t.Fatalf("statuses: %+v", sts)
				}
				cs := sts[0]
				if cs.Name != tc.name || cs.RestartCount != tc.restarts || cs.Ready {
					t.Errorf("container %q restarts %d ready %v, want %q %d false", cs.Name, cs.RestartCount, cs.Ready, tc.name, tc.restarts)
				}
				switch {
				case tc.waiting != "" && (cs.State.Waiting == nil || cs.State.Waiting.Reason != tc.waiting),
					tc.terminated != "" && (cs.State.Terminated == nil || cs.State.Terminated.Reason != tc.terminated),
					tc.running && cs.State.Running == nil:
					t.Errorf("state %+v", cs.State)
				}
			}
			if tc.init && p.Status.Phase != corev1.PodPending {
				t.Errorf("phase %q, want Pending before the init containers finish", p.Status.Phase)
			}
			got := corev1.ConditionStatus("")
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					got = c.Status
				}
			}
			if got != tc.ready {
				t.Errorf("Ready %q, want %q", got, tc.ready)
			}
		})
	}
}

// A describe page of the pod names every container: the row's unnamed
// state does not stand beside them.
func TestPodRowOfSeveralContainersUnderDescribe(t *testing.T) {
	ref := time.Date(2026, 11, 25, 11, 20, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(`$ kubectl -n shop get pods
NAME                   READY   STATUS             RESTARTS      AGE
api-7d9f6c8b5-x2k4p    1/2     CrashLoopBackOff   12 (2m ago)   40m
$ kubectl -n shop describe pod api-7d9f6c8b5-x2k4p
Name:             api-7d9f6c8b5-x2k4p
Namespace:        shop
Status:           Running
Containers:
  api:
    Image:          registry.example.com/api:1.4.0
    State:          Running
      Started:      Wed, 25 Nov 2026 10:40:10 +0000
    Ready:          True
    Restart Count:  0
  metrics-agent:
    Image:          registry.example.com/metrics-agent:2.4.1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    1
      Started:      Wed, 25 Nov 2026 11:17:57 +0000
      Finished:     Wed, 25 Nov 2026 11:17:58 +0000
    Ready:          False
    Restart Count:  12
`), ref)
	p := object[*corev1.Pod](t, res, "shop", "api-7d9f6c8b5-x2k4p")
	if len(p.Status.ContainerStatuses) != 2 {
		t.Fatalf("statuses: %+v", p.Status.ContainerStatuses)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "" {
			t.Errorf("an unnamed status beside the described ones: %+v", cs)
		}
	}
	if p.Annotations[kubetext.SourceAnnotation] != "describe" {
		t.Errorf("source: %v", p.Annotations)
	}
}
