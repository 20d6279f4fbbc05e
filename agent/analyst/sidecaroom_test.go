package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSidecarOOM: an OOM kill of a pod's sidecar while the application
// container keeps running names the sidecar, not the application, and
// reads why it grows from its last lines: a destination refusing its
// writes and the retries it keeps in memory, as Fluent Bit, Fluentd,
// Vector, the OpenTelemetry Collector and Promtail log them. The
// application's own OOM kill stays the application's.
func TestSidecarOOM(t *testing.T) {
	now := time.Date(2026, 11, 22, 19, 45, 0, 0, time.UTC)
	cases := []struct {
		name, killed string
		lines        []string
		wantSidecar  bool
		wantGrows    []string
	}{
		{"fluent-bit, OpenSearch 429", "log-shipper", []string{
			`[2026/11/22 19:40:50] [error] [output:opensearch:opensearch.0] HTTP status=429 URI=/_bulk, response:`,
			`[2026/11/22 19:40:50] [ warn] [engine] failed to flush chunk '1-1795376449.512038117.flb', retry in 8 seconds: task_id=0, input=tail.0 > output=opensearch.0 (out_id=0)`,
		}, true, []string{"opensearch", "429", "retry"}},
		{"fluentd, Elasticsearch rejected", "log-shipper", []string{
			`2026-11-22 19:40:50 +0000 [warn]: #0 failed to flush the buffer. retry_times=3 next_retry_time=2026-11-22 19:41:06 +0000 chunk="5f1c" error_class=Fluent::Plugin::ElasticsearchOutput::RecoverableRequestFailure error="could not push logs to Elasticsearch cluster ({:host=>\"es-logs.observability.svc\", :port=>9200}): [429] {\"error\":{\"type\":\"es_rejected_execution_exception\"}}"`,
		}, true, []string{"es_rejected_execution_exception", "retry"}},
		{"otel collector, exporter 503", "otel-agent", []string{
			`2026-11-22T19:40:50.112Z	info	exporterhelper/retry_sender.go:118	Exporting failed. Will retry the request after interval.	{"kind": "exporter", "data_type": "traces", "name": "otlp", "error": "rpc error: code = Unavailable desc = status: 503", "interval": "5.2s"}`,
		}, true, []string{"retry"}},
		{"sidecar without a word of why", "log-shipper", []string{`Fluent Bit v3.1.9`}, true, nil},
		{"the application itself", "api", []string{`FATAL: JavaScript heap out of memory`}, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "api-5d6c8b7f9-2hxlw", Labels: map[string]string{"app": "api"}}}
			lim := corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
			p.Spec.Containers = []corev1.Container{{Name: "api", Resources: lim}, {Name: c.killed, Resources: lim}}
			if c.killed == "api" {
				p.Spec.Containers[1].Name = "log-shipper"
			}
			oom := corev1.ContainerStatus{Name: c.killed, RestartCount: 14,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(now.Add(-3 * time.Minute))}}}
			other := corev1.ContainerStatus{Name: p.Spec.Containers[1].Name, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
			if c.killed != "api" {
				other.Name = "api"
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{other, oom}
			var last []evidence.LogLine
			for _, l := range c.lines {
				last = append(last, evidence.LogLine{Text: l})
			}
			w := Window{BaselineStart: now.Add(-2 * time.Hour), Start: now.Add(-time.Hour), End: now}
			base := Finding{Subject: "api", Namespace: "web", Object: "pod web/" + p.Name, Source: SrcKubernetes}
			cs := newContainerState(p, oom, base, map[string][]evidence.LogLine{"web/" + p.Name + "/" + c.killed: last}, w)
			fs := oomContainer(cs)
			if len(fs) != 1 {
				t.Fatalf("findings %+v", fs)
			}
			f := fs[0]
			if got := f.fact("sidecar") != ""; got != c.wantSidecar {
				t.Fatalf("sidecar = %v (facts %v), want %v", got, f.Facts, c.wantSidecar)
			}
			h := &Hypothesis{Kind: KindOOMKilled, Subject: "api", Primary: []*Finding{&f}}
			d := oomKilled.describe(h, Scope{})
			if !c.wantSidecar {
				if strings.Contains(d, "sidecar") {
					t.Errorf("the application's OOM described as a sidecar's: %q", d)
				}
				return
			}
			if !strings.Contains(d, "sidecar container "+c.killed) || !strings.Contains(d, "not the application container api") || !strings.Contains(d, "READY 1/2") {
				t.Errorf("description %q", d)
			}
			for _, w := range c.wantGrows {
				if !strings.Contains(f.fact("grows")+" "+f.fact("refusal"), w) {
					t.Errorf("why it grows %q (refusal %q) does not say %q", f.fact("grows"), f.fact("refusal"), w)
				}
			}
			if c.wantGrows == nil && f.fact("grows") != "" {
				t.Errorf("why it grows read from nothing: %q", f.fact("grows"))
			}
			r := &recommender{h: h}
			oomKilled.recommend(h, Scope{}, r)
			if !strings.Contains(r.recs[0].Action, "sidecar "+c.killed) || strings.Contains(r.recs[0].Action, "Profile") {
				t.Errorf("first recommendation %q", r.recs[0].Action)
			}
		})
	}
}
