package analyst

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
