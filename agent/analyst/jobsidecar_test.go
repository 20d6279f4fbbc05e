package analyst

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestJobSidecars(t *testing.T) {
	pod := func(mainState, sidecarState string) corev1.Pod {
		var p corev1.Pod
		if err := json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ledger-rollup-29917680-k8w2c","namespace":"finance",
  "labels":{"app.kubernetes.io/name":"ledger-rollup","batch.kubernetes.io/job-name":"ledger-rollup-29917680","job-name":"ledger-rollup-29917680"}},
  "spec":{"containers":[{"name":"rollup","image":"ledger-rollup:2.4.1"},{"name":"istio-proxy","image":"docker.io/istio/proxyv2:1.23.2"}]},
  "status":{"phase":"Running","containerStatuses":[
    {"name":"rollup","ready":false,"restartCount":0,"state":`+mainState+`},
    {"name":"istio-proxy","ready":true,"restartCount":0,"state":`+sidecarState+`}]}}`), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	completed := `{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-11-19T04:00:04Z","finishedAt":"2026-11-19T04:06:31Z"}}`
	running := `{"running":{"startedAt":"2026-11-19T04:00:03Z"}}`
	skip := corev1.Event{Reason: "JobAlreadyActive", Type: "Normal", Count: 6, Message: "Not starting job because prior execution is running and concurrency policy is Forbid",
		InvolvedObject: corev1.ObjectReference{Kind: "CronJob", Name: "ledger-rollup", Namespace: "finance"}}
	cases := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"main container done, istio-proxy still running", pod(completed, running), true},
		{"main container still working", pod(running, running), false},
		{"main container failed", pod(`{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"2026-11-19T04:06:31Z"}}`, running), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectJobSidecars(&Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{c.pod}, Events: []corev1.Event{skip}}, Window: win}, nil)
			if (len(fs) == 1) != c.want {
				t.Fatalf("findings %+v, want one: %v", fs, c.want)
			}
			if !c.want {
				return
			}
			d := jobSidecar.describe(&Hypothesis{Kind: KindJobSidecar, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range []string{"Job ledger-rollup-29917680 of ledger-rollup never completes", "sidecar container istio-proxy keeps pod", "concurrencyPolicy Forbid", "6 times"} {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}

// TestJobSidecarChain: the chain of a Job held open by a sidecar: the
// injector's mark on the pod (Istio, Linkerd, Vault), the change that
// switched injection on (a namespace label, an annotation, a mesh
// onboarding) and the run before it that completed; changes of other
// namespaces or that say nothing of injection are not it.
func TestJobSidecarChain(t *testing.T) {
	day := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	mk := func(ann map[string]string, sidecar string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "export-29927640-m4c7j", Namespace: "ledger", Annotations: ann,
			Labels: map[string]string{"batch.kubernetes.io/job-name": "export-29927640"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "export", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(day.Add(7 * time.Minute))}}},
				{Name: sidecar, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(day)}}}}}}
	}
	prev := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "export-29926200", Namespace: "ledger"},
		Status: batchv1.JobStatus{Succeeded: 1, StartTime: &metav1.Time{Time: day.Add(-24 * time.Hour)}, CompletionTime: &metav1.Time{Time: day.Add(-24*time.Hour + 6*time.Minute)}}}
	cases := []struct {
		name    string
		pod     corev1.Pod
		changes []evidence.Change
		want    []string
		not     []string
	}{
		{"istio namespace label", mk(map[string]string{"sidecar.istio.io/status": `{"initContainers":["istio-init"],"containers":["istio-proxy"]}`}, "istio-proxy"),
			[]evidence.Change{{Timestamp: day.Add(-15 * time.Hour), Service: "ledger", Kind: "infra", Description: "namespace ledger: label istio-injection=enabled"}},
			[]string{"annotation sidecar.istio.io/status lists istio-proxy", "injection was switched on by the infra change", "istio-injection=enabled", "export-29926200, completed in 6m0s"}, nil},
		{"linkerd annotation via gitops", mk(map[string]string{"linkerd.io/proxy-version": "stable-2.14.10"}, "linkerd-proxy"),
			[]evidence.Change{{Timestamp: day.Add(-3 * time.Hour), Service: "platform", Kind: "config", Description: "ledger: add linkerd.io/inject: enabled to the namespace"}},
			[]string{"linkerd.io/proxy-version=stable-2.14.10", `"ledger: add linkerd.io/inject: enabled to the namespace"`}, nil},
		{"vault agent, mesh onboarding of another namespace", mk(map[string]string{"vault.hashicorp.com/agent-inject-status": "injected"}, "vault-agent"),
			[]evidence.Change{{Timestamp: day.Add(-3 * time.Hour), Service: "payments", Kind: "infra", Description: "namespace payments: label istio-injection=enabled"},
				{Timestamp: day.Add(-2 * time.Hour), Service: "ledger", Kind: "deploy", Description: "ledger-api 3.1.0"}},
			[]string{"vault.hashicorp.com/agent-inject-status=injected"}, []string{"switched on", "payments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{c.pod}, Jobs: []batchv1.Job{prev}}, Earlier: c.changes, Window: win}
			fs := detectJobSidecars(g, nil)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			if len(fs[0].Evidence) < 2 || fs[0].fact("why") == "" {
				t.Errorf("evidence %q, why %q", fs[0].Evidence, fs[0].fact("why"))
			}
			d := jobSidecar.describe(&Hypothesis{Kind: KindJobSidecar, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
			for _, w := range c.not {
				if strings.Contains(d, w) {
					t.Errorf("description says %q: %s", w, d)
				}
			}
		})
	}
}
