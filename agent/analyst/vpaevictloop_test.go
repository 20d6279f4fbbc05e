package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestVPAEvictLoop: repeated VPA evictions of one workload's pods, read
// from EvictedByVPA events (one per pod, or one counted) or from the
// updater's log, are a loop; the admission controller's state (its pod
// waiting, the webhook's failure policy) says why it never stops. One or
// two evictions, other evictions and another namespace are not.
func TestVPAEvictLoop(t *testing.T) {
	t0 := time.Date(2026, 4, 2, 9, 0, 0, 0, time.UTC)
	evicted := func(pod string, at time.Duration, count int32) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "billing", Name: pod}, Reason: "EvictedByVPA", Type: corev1.EventTypeNormal,
			Message: "Pod was evicted by VPA Updater to apply resource recommendation.", Count: count,
			FirstTimestamp: metav1.NewTime(t0.Add(at)), LastTimestamp: metav1.NewTime(t0.Add(at + time.Duration(count-1)*2*time.Minute))}
	}
	admission := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "vpa-admission-controller-5f6d7c8b9-abcde"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "admission-controller", RestartCount: 12,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}}}
	webhook := evidence.CommandOutput{Command: "kubectl get mutatingwebhookconfiguration vpa-webhook-config -o jsonpath='{.webhooks[0].failurePolicy} {.webhooks[0].clientConfig.service.name}'", Lines: []string{"Ignore vpa-webhook"}}
	podsTable := evidence.CommandOutput{Command: "kubectl -n kube-system get pods", Lines: []string{
		"NAME                                       READY   STATUS             RESTARTS      AGE",
		"vpa-admission-controller-7c9f5d6b8-pj4tx   0/1     CrashLoopBackOff   19 (3m ago)   95m",
		"vpa-updater-6d4c8b7f95-zt7mn               1/1     Running            0             95m"}}
	updaterLog := evidence.CommandOutput{Command: "kubectl -n kube-system logs deploy/vpa-updater", Lines: []string{
		"I0402 09:02:00.233000       1 update_priority_calculator.go:143] pod accepted for update billing/invoicer-6f7b9c8d54-m4hzt with priority 3.44 - processed recommendations:",
		"invoicer: target: 1191182k 480m; uncappedTarget: 1191182k 480m;",
		"I0402 09:02:00.236000       1 updater.go:298] evicting pod billing/invoicer-6f7b9c8d54-m4hzt",
		"I0402 09:04:00.191000       1 updater.go:298] evicting pod billing/invoicer-6f7b9c8d54-9tqxb",
		"I0402 09:06:00.292000       1 updater.go:298] evicting pod billing/invoicer-6f7b9c8d54-hb7wd"}}
	cases := []struct {
		name string
		ev   Gathered
		want []string
	}{
		{"events per pod, the admission controller's pod waiting", Gathered{K8s: K8sEvidence{Events: []corev1.Event{
			evicted("invoicer-6f7b9c8d54-m4hzt", 0, 1), evicted("invoicer-6f7b9c8d54-9tqxb", 2*time.Minute, 1), evicted("invoicer-6f7b9c8d54-hb7wd", 4*time.Minute, 1)},
			Pods: []corev1.Pod{admission}}, Commands: []evidence.CommandOutput{webhook}, Scope: Scope{Namespace: "billing"}},
			[]string{"3 evictions", "admission controller", "CrashLoopBackOff", "failure policy is Ignore"}},
		{"one counted event, the pods as a table", Gathered{K8s: K8sEvidence{Events: []corev1.Event{evicted("invoicer-6f7b9c8d54-m4hzt", 0, 6)}},
			Commands: []evidence.CommandOutput{podsTable}, Scope: Scope{Namespace: "billing"}},
			[]string{"6 evictions", "is not running", "CrashLoopBackOff"}},
		{"the updater's log alone", Gathered{Commands: []evidence.CommandOutput{updaterLog}, Scope: Scope{Namespace: "billing"}},
			[]string{"3 evictions", "target 1191182k 480m", "webhook does not apply"}},
		{"two evictions", Gathered{K8s: K8sEvidence{Events: []corev1.Event{evicted("invoicer-6f7b9c8d54-m4hzt", 0, 1), evicted("invoicer-6f7b9c8d54-9tqxb", time.Minute, 1)}}}, nil},
		{"another namespace", Gathered{K8s: K8sEvidence{Events: []corev1.Event{evicted("invoicer-6f7b9c8d54-m4hzt", 0, 5)}}, Scope: Scope{Namespace: "web"}}, nil},
		{"other evictions", Gathered{K8s: K8sEvidence{Events: []corev1.Event{{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "billing", Name: "invoicer-6f7b9c8d54-m4hzt"},
			Reason: "Evicted", Message: "The node was low on resource: memory.", Count: 5}}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectVPAEvictLoop(&c.ev, nil)
			if len(c.want) == 0 {
				if len(fs) != 0 {
					t.Fatalf("found %+v, want nothing", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "invoicer" {
				t.Fatalf("findings %+v, want one of invoicer", fs)
			}
			h := &Hypothesis{Kind: KindVPAEvictLoop, Subject: "invoicer", Primary: []*Finding{&fs[0]}}
			d := describe(h, c.ev.Scope)
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
		})
	}
}
