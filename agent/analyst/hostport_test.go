package analyst

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Scheduler messages as kube-scheduler 1.2x writes them.
func TestSchedulingWhy(t *testing.T) {
	cases := []struct {
		msg  string
		want []string
		not  []string
	}{
		{"0/5 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't have free ports for the requested pod ports. preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.",
			[]string{"on 3 nodes the host port the pods ask for is already in use (didn't have free ports)"}, []string{"taint", "preemption"}},
		{"0/6 nodes are available: 2 node(s) were unschedulable, 4 node(s) didn't match pod topology spread constraints. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.",
			[]string{"on 4 nodes a pod would break the pods' topology spread constraints", "; on 2 nodes the nodes are cordoned (unschedulable)"}, nil},
		{"0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
			[]string{"on 3 nodes there is not enough cpu left for the pods' requests"}, nil},
		// The older form: the taint's words run on after a comma.
		{"0/3 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 2 Insufficient memory.",
			[]string{"on 2 nodes there is not enough memory left"}, []string{"master"}},
		// The control plane's taint alone is the reason.
		{"0/1 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.",
			[]string{"on 1 node the nodes carry a taint the pods do not tolerate"}, nil},
		{"0/4 nodes are available: 1 node(s) had volume node affinity conflict, 3 node(s) didn't match Pod's node affinity/selector.",
			[]string{"on 3 nodes the nodes do not match the pods' node affinity/selector; on 1 node the pods' volume is bound to another zone"}, nil},
		{"pod has unbound immediate PersistentVolumeClaims", nil, nil},
	}
	for _, c := range cases {
		got := schedulingWhy(c.msg)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("schedulingWhy(%q) = %q, want %q", c.msg, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("schedulingWhy(%q) = %q, has %q", c.msg, got, n)
			}
		}
		if c.want == nil && got != "" {
			t.Errorf("schedulingWhy(%q) = %q, want none", c.msg, got)
		}
	}
}

const portsMsg = "0/5 nodes are available: 2 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) didn't have free ports for the requested pod ports. preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."

// A pending pod's host port is followed to the workload of another
// namespace that binds it on the nodes.
func TestExplainPortConflicts(t *testing.T) {
	pending := `{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"edge-7c9d-x2k4p","namespace":"ingress","creationTimestamp":"2026-11-25T08:51:12Z","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"edge-7c9d","uid":"1"}]},
 "spec":{"containers":[{"name":"envoy","image":"envoy:1.31","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"},{"name":"metrics","containerPort":%PORT%,"hostPort":%PORT%,"protocol":"TCP"}]}]},
 "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":"2026-11-25T08:51:12Z","message":"` + portsMsg + `"}]}}]}`
	agentDS := `{"apiVersion":"apps/v1","kind":"DaemonSetList","items":[{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"node-exporter","namespace":"monitoring"},
 "spec":{"selector":{"matchLabels":{"app":"node-exporter"}},"template":{"metadata":{"labels":{"app":"node-exporter"}},"spec":{"hostNetwork":true,"containers":[{"name":"node-exporter","image":"prom/node-exporter","ports":[{"name":"metrics","containerPort":9100,"protocol":"TCP"}]}]}}}}]}`
	hostPod := `{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fluent-bit-8k2xq","namespace":"logging","labels":{"app":"fluent-bit"}},
 "spec":{"nodeName":"worker-1","containers":[{"name":"fluent-bit","image":"fluent-bit","ports":[{"containerPort":2020,"hostPort":9200,"protocol":"TCP"}]}]},"status":{"phase":"Running"}}]}`
	cases := []struct {
		name  string
		port  string
		files map[string]string
		want  string
	}{
		{"a DaemonSet on the host network", "9100", map[string]string{"kubernetes/monitoring/daemonsets.json": agentDS}, "DaemonSet monitoring/node-exporter (container node-exporter, hostNetwork)"},
		{"a running pod's hostPort", "9200", map[string]string{"kubernetes/monitoring/daemonsets.json": agentDS, "kubernetes/logging/pods.json": hostPod}, "workload logging/fluent-bit (container fluent-bit)"},
		{"nothing else binds it", "9300", map[string]string{"kubernetes/monitoring/daemonsets.json": agentDS, "kubernetes/logging/pods.json": hostPod}, ""},
	}
	now := time.Date(2026, 11, 25, 9, 15, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"bundle.json":                  {Data: []byte(`{"captured_at":"2026-11-25T09:15:00Z"}`)},
				"kubernetes/ingress/pods.json": {Data: []byte(strings.ReplaceAll(pending, "%PORT%", c.port))},
			}
			for k, v := range c.files {
				fsys[k] = &fstest.MapFile{Data: []byte(v)}
			}
			src := bundleSources(t, fsys, now)
			pods, err := src.Kubernetes.Pods(context.Background(), "ingress", "")
			if err != nil || len(pods) != 1 {
				t.Fatalf("pods %v %v", pods, err)
			}
			p := &pods[0]
			fs, _ := pendingPod(p, Finding{Subject: "edge", Object: "pod ingress/" + p.Name, Namespace: "ingress"})
			if len(fs) != 1 || fs[0].fact("host_ports") != c.port+"/TCP" {
				t.Fatalf("pending findings %+v", fs)
			}
			g := newGatherer(Options{}, Scope{Service: "edge", Namespace: "ingress"}, src)
			fs = g.explainPortConflicts(context.Background(), fs)
			if got := fs[0].fact("port_holder"); got != c.want {
				t.Fatalf("holder %q, want %q", got, c.want)
			}
			h := &Hypothesis{Kind: KindUnschedulable, Subject: "edge", Primary: []*Finding{&fs[0]}}
			d := unschedulableM.describe(h, Scope{})
			for _, w := range []string{"host port " + c.port + "/TCP", "hostPort conflict", c.want} {
				if !strings.Contains(d, w) {
					t.Errorf("description %q lacks %q", d, w)
				}
			}
		})
	}
	// A pod that asks for no host port has none to follow.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}}}
	if fs, _ := pendingPod(p, Finding{}); len(fs) != 1 || fs[0].fact("host_ports") != "" {
		t.Fatalf("%+v", fs)
	}
}
