package analyst

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestLoopbackBind(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 15, 42, 0, 0, time.UTC)
	probeEvent := func(msg string) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "quotes-6d8f7c9b5-x2k4p"}, Reason: "Unhealthy", Type: corev1.EventTypeWarning,
			Message: msg, FirstTimestamp: metav1.NewTime(t0.Add(30 * time.Second)), Count: 40}
	}
	refused := probeEvent(`Readiness probe failed: Get "http://10.24.3.18:8000/healthz": dial tcp 10.24.3.18:8000: connect: connection refused`)
	liveRefused := probeEvent(`Liveness probe failed: Get "http://10.24.3.18:3000/": dial tcp 10.24.3.18:3000: connect: connection refused`)
	notReady := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quotes-6d8f7c9b5-x2k4p", Namespace: "shop", Labels: map[string]string{"app": "quotes"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Command: []string{"flask", "run", "--port", "5000"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	logs := func(lines ...string) []LogSet {
		var ts []analysis.LogTemplate
		for _, l := range lines {
			ts = append(ts, analysis.LogTemplate{Example: l, FirstSeen: t0.Add(20 * time.Second), Source: "quotes-6d8f7c9b5-x2k4p"})
		}
		return []LogSet{{Source: "quotes-6d8f7c9b5-x2k4p", Subject: "quotes", Namespace: "shop", Templates: ts}}
	}
	cases := []struct {
		name string
		ev   Gathered
		want []string
	}{
		{"uvicorn's default host, readiness refused",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{refused}}, Logs: logs("INFO:     Started server process [8]", "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)")},
			[]string{"quotes listens on 127.0.0.1:8000 only", "readiness probe to the pod's IP (10.24.3.18:8000) is refused"}},
		{"node on localhost, liveness refused",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{liveRefused}}, Logs: logs("Server listening on http://localhost:3000")},
			[]string{"quotes listens on localhost:3000 only", "liveness probe"}},
		{"flask without probes, its pods not ready, its command names no host",
			Gathered{K8s: K8sEvidence{Pods: []corev1.Pod{notReady}}, Logs: logs(" * Running on http://127.0.0.1:5000")},
			[]string{"quotes listens on 127.0.0.1:5000 only", "its command (flask run --port 5000) sets no listen address"}},
		{"Go's net/http on the IPv6 loopback",
			Gathered{K8s: K8sEvidence{Events: []corev1.Event{refused}}, Logs: logs(`{"level":"info","msg":"listening","addr":"[::1]:8000"}`, "2026/11/25 15:42:20 http: listening on [::1]:8000")},
			[]string{"quotes listens on [::1]:8000 only"}},
		{"ECS task behind an ALB: the service's events say its targets are unhealthy",
			Gathered{Logs: logs(`{"level":30,"time":1732549340000,"pid":1,"msg":"Server listening at http://127.0.0.1:3000"}`),
				Commands: []evidence.CommandOutput{{Command: "aws ecs describe-services --cluster prod --services quotes", Lines: []string{
					`            "events": [`,
					`                    "message": "(service quotes, taskSet ecs-svc/55312) (task fe2abd39) (port 3000) is unhealthy in (target-group arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/quotes-tg/9f3c2b1a) due to (reason Health checks failed)."`}}}},
			[]string{"quotes listens on 127.0.0.1:3000 only", "load balancer's health checks", "is unhealthy in (target-group"}},
		{"elbv2 describe-target-health, text output",
			Gathered{Logs: logs("Listening on 127.0.0.1:8080"),
				Commands: []evidence.CommandOutput{{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/quotes-tg/9f3c --output text", Lines: []string{
					"TARGETHEALTHDESCRIPTIONS\t8080",
					"TARGET\teu-west-1a\t10.20.1.186\t8080",
					"TARGETHEALTH\tHealth checks failed\tTarget.FailedHealthChecks\tunhealthy"}}}},
			[]string{"quotes listens on 127.0.0.1:8080 only", "Target.FailedHealthChecks"}},
		{"a target group of another service failing", Gathered{Logs: logs("Listening on 127.0.0.1:8080"),
			Commands: []evidence.CommandOutput{{Command: "aws elbv2 describe-target-health --target-group-arn arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/search-tg/9f3c", Lines: []string{`"Reason": "Target.FailedHealthChecks",`}}}}, nil},
		{"listening on every interface", Gathered{K8s: K8sEvidence{Events: []corev1.Event{refused}}, Logs: logs("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)")}, nil},
		{"a loopback admin port, the probed port elsewhere", Gathered{K8s: K8sEvidence{Events: []corev1.Event{refused}}, Logs: logs("admin server listening on 127.0.0.1:9901")}, nil},
		{"a client connecting to localhost", Gathered{K8s: K8sEvidence{Events: []corev1.Event{refused}}, Logs: logs("connecting to redis at 127.0.0.1:8000")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectLoopbackBind(&c.ev, nil)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("found %+v", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("%d findings", len(fs))
			}
			h := &Hypothesis{Kind: KindLoopbackBind, Subject: fs[0].Subject, Primary: []*Finding{&fs[0]}}
			d := loopbackBind.describe(h, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q:\n%s", w, d)
				}
			}
		})
	}
}
