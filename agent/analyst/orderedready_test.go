package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestOrderedReady: a StatefulSet of three with OrderedReady whose only
// pod is not ready, its log waiting for the peers never created, is
// deadlocked; all three present, or the policy Parallel, is not.
func TestOrderedReady(t *testing.T) {
	now := time.Date(2026, 9, 2, 6, 45, 0, 0, time.UTC)
	const pods = `$ kubectl get pods -n messaging
NAME         READY   STATUS    RESTARTS     AGE
rabbitmq-0   0/1     Running   6 (4m ago)   48m
%s`
	wait := "2026-09-02 06:40:13.135002+00:00 [error] <0.230.0> Timeout contacting cluster nodes: ['rabbit@rabbitmq-2.rabbitmq-headless.messaging.svc.cluster.local',"
	cases := []struct {
		name, more string
		policy     appsv1.PodManagementPolicyType
		want       bool
	}{
		{"only the first member, waiting for its peers", "", appsv1.OrderedReadyPodManagement, true},
		{"the default policy", "", "", true},
		{"all members present", "rabbitmq-1   0/1     Running   0            48m\nrabbitmq-2   0/1     Running   0            48m\n", "", false},
		{"parallel", "", appsv1.ParallelPodManagement, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := kubetext.Parse([]byte(strings.Replace(pods, "%s", c.more, 1)), now)
			ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now},
				K8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{"messaging/rabbitmq-0/rabbitmq": {{Text: wait}}}}}
			for _, o := range res.Objects {
				if p, ok := o.(*corev1.Pod); ok {
					if len(p.Status.ContainerStatuses) > 0 {
						p.Status.ContainerStatuses[0].Name = "rabbitmq"
					}
					ev.K8s.Pods = append(ev.K8s.Pods, *p)
				}
			}
			three := int32(3)
			ss := appsv1.StatefulSet{}
			ss.Name, ss.Namespace, ss.Spec.Replicas, ss.Spec.PodManagementPolicy = "rabbitmq", "messaging", &three, c.policy
			ev.K8s.StatefulSets = []appsv1.StatefulSet{ss}
			fs := detectOrderedReady(ev, nil)
			if !c.want {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Weight < 0.9 {
				t.Fatalf("findings %+v from %d pods", fs, len(ev.K8s.Pods))
			}
			h := &Hypothesis{Kind: KindOrderedReady, Subject: "rabbitmq", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, "OrderedReady", "rabbitmq-0 is not ready", "rabbitmq-1, rabbitmq-2 are never created", "Timeout contacting cluster nodes")
		})
	}
}

// TestOrderedReadyProbe: the member blocking an ordered start is not
// ready because its own readiness probe fails (an exec probe's output, an
// HTTP probe's status, as the kubelet's Unhealthy event words them): the
// answer says so and recommends fixing that probe; its liveness probe
// says nothing of readiness.
func TestOrderedReadyProbe(t *testing.T) {
	now := time.Date(2026, 6, 30, 11, 20, 0, 0, time.UTC)
	res := kubetext.Parse([]byte(`$ kubectl get pods -n stg
NAME          READY   STATUS    RESTARTS   AGE
zookeeper-0   0/1     Running   0          52m
`), now)
	for _, c := range []struct {
		name, probe, msg string
		want             bool
	}{
		{"exec probe output", "readiness", "Readiness probe failed: zookeeper answered: ruok is not executed because it is not in the whitelist.", true},
		{"HTTP probe status", "readiness", "Readiness probe failed: HTTP probe failed with statuscode: 503", true},
		{"liveness only", "liveness", "Liveness probe failed: dial tcp 10.48.3.27:2181: connect: connection refused", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Window: Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}}
			for _, o := range res.Objects {
				if p, ok := o.(*corev1.Pod); ok {
					ev.K8s.Pods = append(ev.K8s.Pods, *p)
				}
			}
			three := int32(3)
			ss := appsv1.StatefulSet{}
			ss.Name, ss.Namespace, ss.Spec.Replicas = "zookeeper", "stg", &three
			ev.K8s.StatefulSets = []appsv1.StatefulSet{ss}
			probe := Finding{Kind: KindProbeFailure, Subject: "zookeeper", Object: "pod stg/zookeeper-0"}
			probe.setFact("message", c.msg)
			probe.setFact("probe", c.probe)
			fs := detectOrderedReady(ev, []Finding{probe})
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindOrderedReady, Subject: "zookeeper", Primary: []*Finding{&fs[0]}}
			if !c.want {
				if fs[0].fact("probe_failure") != "" {
					t.Errorf("facts %v", fs[0].Facts)
				}
				return
			}
			want := strings.TrimPrefix(c.msg, "Readiness probe failed: ")
			wantDescribed(t, h, Scope{}, "zookeeper-0 is not ready because its readiness probe fails", want, "zookeeper-1, zookeeper-2 are never created")
			r := &recommender{h: h}
			orderedReady.recommend(h, Scope{}, r)
			if !strings.Contains(r.recs[0].Action, "readiness probe of zookeeper-0") {
				t.Errorf("recommendations %+v", r.recs)
			}
		})
	}
}
