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

// TestFailedCreateCronJobRun checks that a pod refused for a CronJob's run
// is the CronJob's failure, as its pods' are, and a Job of its own keeps
// its name.
func TestFailedCreateCronJobRun(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 5, 0, 0, time.UTC)
	w := Window{BaselineStart: t0.Add(-time.Hour), Start: t0, End: t0.Add(time.Hour)}
	for _, c := range []struct{ job, subject string }{
		{"billing-rollup-29927705", "billing-rollup"},
		{"db-migrate", "db-migrate"},
	} {
		e := corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "data", Name: c.job}, Reason: "FailedCreate", Type: "Warning",
			Message:        `Error creating: pods "` + c.job + `-" is forbidden: maximum memory usage per Container is 4Gi, but limit is 6Gi`,
			FirstTimestamp: metav1.NewTime(t0), LastTimestamp: metav1.NewTime(t0.Add(30 * time.Minute))}
		fs := DetectEvents([]corev1.Event{e}, nil, w)
		if len(fs) != 1 || fs[0].Subject != c.subject || fs[0].Kind != KindCreateRefused {
			t.Errorf("%s: findings %+v, want one create_refused of %s", c.job, fs, c.subject)
		}
	}
}
