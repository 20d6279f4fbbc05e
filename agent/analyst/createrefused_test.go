package analyst

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFailedCreateMessages classifies FailedCreate messages as the
// controllers print them.
func TestFailedCreateMessages(t *testing.T) {
	cases := []struct {
		msg     string
		kind    Kind
		missing string
	}{
		{`Error creating: pods "etl-runner-6d9c8b7f54-" is forbidden: error looking up service account data/etl-runner: serviceaccount "etl-runner" not found`, KindCreateRefused, "serviceaccount etl-runner"},
		{`Error creating: pods "web-7f9c-" is forbidden: exceeded quota: web-quota, requested: limits.cpu=2, used: limits.cpu=8, limited: limits.cpu=8`, KindQuota, ""},
		{`Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: policy require-labels: label 'team' is required`, KindCreateRefused, ""},
		{`Error creating: pods "api-5d8-" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`, KindCreateRefused, ""},
		{`Error creating: pods "api-5d8-" is forbidden: maximum cpu usage per Container is 2, but limit is 4`, KindCreateRefused, ""},
		{`Created pod: api-5d8-x2k9p`, "", ""},
	}
	for _, c := range cases {
		e := corev1.Event{Reason: "FailedCreate", Message: c.msg}
		if c.kind == "" {
			e.Reason = "SuccessfulCreate"
		}
		kind, _ := eventKind(&e)
		if kind != c.kind {
			t.Errorf("%q: kind %q, want %q", c.msg, kind, c.kind)
		}
		if _, m := classifyCreateRefusal(c.msg); c.missing != "" && m != c.missing {
			t.Errorf("%q: missing %q, want %q", c.msg, m, c.missing)
		}
	}
}

// TestFailedCreateSuperseded checks that a FailedCreate followed by a
// SuccessfulCreate of the same controller is history, not the cause.
func TestFailedCreateSuperseded(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rs := corev1.ObjectReference{Kind: "ReplicaSet", Namespace: "web", Name: "web-frontend-7f9c8d6b5"}
	ev := func(reason, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: rs, Reason: reason, Message: msg, Type: "Warning", FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at)}
	}
	failed := ev("FailedCreate", `Error creating: pods "web-frontend-7f9c8d6b5-" is forbidden: exceeded quota: web-quota`, t0)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	for _, c := range []struct {
		events   []corev1.Event
		resolved bool
	}{
		{[]corev1.Event{failed}, false},
		{[]corev1.Event{failed, ev("SuccessfulCreate", "Created pod: web-frontend-7f9c8d6b5-x2k9p", t0.Add(10*time.Minute))}, true},
	} {
		fs := DetectEvents(c.events, nil, w)
		if len(fs) != 1 || (fs[0].fact("resolved") != "") != c.resolved {
			t.Errorf("%d events: findings %+v, want one resolved=%v", len(c.events), fs, c.resolved)
		}
	}
}
