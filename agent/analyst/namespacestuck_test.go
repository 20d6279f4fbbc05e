package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// nsSession is a namespace held in Terminating and the APIService behind
// the failing discovery, as kubectl prints them.
const nsSession = `$ kubectl describe ns pr-4821
Name:         pr-4821
Labels:       kubernetes.io/metadata.name=pr-4821
Annotations:  <none>
Status:       %s
Conditions:
  Type                                         Status  LastTransitionTime               Reason                Message
  ----                                         ------  ------------------               ------                -------
  NamespaceDeletionDiscoveryFailure            True    Tue, 24 Nov 2026 19:02:41 +0000  DiscoveryFailed       Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1
  NamespaceContentRemaining                    False   Tue, 24 Nov 2026 19:03:12 +0000  ContentRemoved        All content successfully removed

$ kubectl get apiservice | grep -v Local
NAME                                   SERVICE                        AVAILABLE                      AGE
v1beta1.custom.metrics.k8s.io          monitoring/prometheus-adapter  True                           90d
v1beta1.metrics.k8s.io                 kube-system/metrics-server     False (FailedDiscoveryCheck)   301d

$ kubectl get pods -n kube-system -l k8s-app=metrics-server
NAME                              READY   STATUS             RESTARTS        AGE
metrics-server-7d94c5f8b6-x2mlq   0/1     CrashLoopBackOff   197 (84s ago)   16h
`

// TestAPIServices reads the AVAILABLE column with its reason, and a local
// APIService has no service.
func TestAPIServices(t *testing.T) {
	cmds := []evidence.CommandOutput{{Command: "kubectl get apiservices", Lines: []string{
		"NAME                                   SERVICE                        AVAILABLE                      AGE",
		"v1.apps                                Local                          True                           301d",
		"v1beta1.metrics.k8s.io                 kube-system/metrics-server     False (MissingEndpoints)       301d",
	}}, {Command: "kubectl get pods", Lines: []string{"NAME   READY   STATUS", "x   1/1   Running"}}}
	got := apiServices(cmds)
	want := []apiService{{name: "v1.apps", available: "True"}, {name: "v1beta1.metrics.k8s.io", service: "kube-system/metrics-server", available: "False (MissingEndpoints)"}}
	if len(got) != len(want) {
		t.Fatalf("apiServices = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestNamespaceStuck: a Terminating namespace's discovery failure is
// followed to the APIService and the crash-looping service behind it,
// which becomes the subject with its log line; without the service's pods
// the finding restates the condition (state_only); an Active namespace,
// or conditions that are all False, hold nothing.
func TestNamespaceStuck(t *testing.T) {
	now := time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC)
	logs := []evidence.LogLine{
		{Source: "metrics-server-7d94c5f8b6-x2mlq/metrics-server", Text: `I1125 11:27:03.601877       1 handler.go:275] Adding GroupVersion metrics.k8s.io v1beta1 to ResourceManager`},
		{Source: "metrics-server-7d94c5f8b6-x2mlq/metrics-server", Text: `Error: failed to create listener: failed to listen on 0.0.0.0:10250: listen tcp 0.0.0.0:10250: bind: address already in use`},
	}
	cases := []struct {
		name, status string
		pods         bool
		subject      string
		stateOnly    bool
		want         []string
	}{
		{"discovery failure, service crash-looping", "Terminating", true, "metrics-server", false,
			[]string{"stuck Terminating", "metrics.k8s.io/v1beta1", "v1beta1.metrics.k8s.io is unavailable", "False (FailedDiscoveryCheck)", "CrashLoopBackOff", "address already in use"}},
		{"discovery failure, service not seen", "Terminating", false, "metrics-server", true,
			[]string{"metrics.k8s.io/v1beta1", "served by kube-system/metrics-server"}},
		{"active namespace", "Active", true, "", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, ns, b := parseNsSession(c.status, c.pods, now)
			if c.pods {
				b.Lines = logs
			}
			var cmds []evidence.CommandOutput
			for _, o := range res.Outputs {
				cmds = append(cmds, evidence.CommandOutput{Command: o.Command, Lines: o.Lines})
			}
			cond := blockingCondition(ns)
			if c.subject == "" {
				if cond != nil {
					t.Fatalf("blocking condition of an %s namespace: %+v", c.status, cond)
				}
				return
			}
			if cond == nil || cond.Type != corev1.NamespaceDeletionDiscoveryFailure {
				t.Fatalf("blockingCondition = %+v", cond)
			}
			var api apiService
			for _, a := range apiServices(cmds) {
				if a.name == "v1beta1.metrics.k8s.io" {
					api = a
				}
			}
			f := nsStuckFinding(ns, cond, api, b)
			if f.Subject != c.subject || (f.fact("state_only") == "true") != c.stateOnly || !f.relates("pr-4821") || f.fact("current") != "true" {
				t.Errorf("finding subject %q state_only %q related %v", f.Subject, f.fact("state_only"), f.Related)
			}
			if !f.Time.Equal(time.Date(2026, 11, 24, 19, 2, 41, 0, time.UTC)) {
				t.Errorf("onset %s, want the condition's transition", f.Time)
			}
			h := &Hypothesis{Kind: KindNamespaceStuck, Subject: f.Subject, Primary: []*Finding{&f}}
			wantDescribed(t, h, Scope{}, c.want...)
		})
	}
}

// parseNsSession reads nsSession with the namespace's phase set to
// status: the parse, its Namespace, and its pods as the backend (none
// unless pods).
func parseNsSession(status string, pods bool, now time.Time) (*kubetext.Result, *corev1.Namespace, webhookBackend) {
	res := kubetext.Parse([]byte(strings.Replace(nsSession, "%s", status, 1)), now)
	var ns *corev1.Namespace
	var b webhookBackend
	for _, o := range res.Objects {
		switch x := o.(type) {
		case *corev1.Namespace:
			ns = x
		case *corev1.Pod:
			if pods {
				b.Pods = append(b.Pods, *x)
			}
		}
	}
	return res, ns, b
}

// TestBlockingConditionRemaining: resources whose finalizers no
// controller removes hold the namespace too, and say so in the
// description.
func TestBlockingConditionRemaining(t *testing.T) {
	ns := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: kafkatopics.kafka.strimzi.io has 3 resource instances"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: strimzi.io/topic-operator in 3 resource instances"},
	}}}
	ns.Name = "events"
	c := blockingCondition(ns)
	if c == nil || c.Type != corev1.NamespaceFinalizersRemaining {
		t.Fatalf("blockingCondition = %+v", c)
	}
	f := nsStuckFinding(ns, c, apiService{}, webhookBackend{})
	h := &Hypothesis{Kind: KindNamespaceStuck, Subject: f.Subject, Primary: []*Finding{&f}}
	if d := describe(h, Scope{}); f.Subject != "events" || !strings.Contains(d, "strimzi.io/topic-operator") || f.fact("state_only") != "true" {
		t.Errorf("subject %q state_only %q description %s", f.Subject, f.fact("state_only"), d)
	}
}

// TestNamespaceStuckInferredService: when no APIService table was handed
// over, the failing workload named after the group stands in for its
// service: described as likely and held one link short (state_only) even
// with its crash and log.
func TestNamespaceStuckInferredService(t *testing.T) {
	now := time.Date(2026, 11, 25, 11, 30, 0, 0, time.UTC)
	_, ns, b := parseNsSession("Terminating", true, now)
	b.Lines = []evidence.LogLine{{Source: "metrics-server-7d94c5f8b6-x2mlq", Text: "Error: failed to create listener: failed to listen on 0.0.0.0:10250: listen tcp 0.0.0.0:10250: bind: address already in use"}}
	f := nsStuckFinding(ns, blockingCondition(ns), apiService{name: "v1beta1.metrics.k8s.io", service: "kube-system/metrics-server", inferred: true}, b)
	if f.Subject != "metrics-server" || f.fact("state_only") != "true" || f.fact("backend_state") == "" {
		t.Errorf("subject %q state_only %q backend %q", f.Subject, f.fact("state_only"), f.fact("backend_state"))
	}
	h := &Hypothesis{Kind: KindNamespaceStuck, Subject: f.Subject, Primary: []*Finding{&f}}
	if d := describe(h, Scope{}); !strings.Contains(d, "likely served by kube-system/metrics-server") || !strings.Contains(d, "address already in use") {
		t.Errorf("description: %s", d)
	}
}
