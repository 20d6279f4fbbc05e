package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestRolledBackNote checks that a root cause triggered by a release is
// followed by the release's timeout and rollback, in the words Helm's
// history, a pipeline's change record and Flux print them, and that
// nothing is added without a rollback of the same workload after the
// trigger.
func TestRolledBackNote(t *testing.T) {
	t0 := win.Start.Add(10 * time.Minute)
	deploy := func(subject, text string, at time.Duration) Finding {
		f := Finding{Kind: KindDeploy, Subject: subject, Time: t0.Add(at), Summary: "deploy of " + subject + ": " + text}
		f.setFact("description", text)
		return f
	}
	cases := []struct {
		name  string
		later []Finding
		want  []string // "" : no note
	}{
		{"helm --atomic: failed revision and rollback",
			[]Finding{deploy("rates", `helm release shop/rates revision 23 (chart rates-3.8.0, app version 3.8.0) failed: Upgrade "rates" failed: context deadline exceeded (helm printed the time without its zone: read as UTC)`, 0),
				deploy("rates", "helm release shop/rates revision 24 (chart rates-3.7.0, app version 3.7.0) deployed: Rollback to 22", 5*time.Minute)},
			[]string{`gave up waiting for it ("failed: Upgrade \"rates\" failed: context deadline exceeded")`, "rolled back at", "Rollback to 22", "previous version keeps running"}},
		{"pipeline record of the rollback only",
			[]Finding{deploy("rates", "helm rollback to revision 22 (atomic)", 5*time.Minute)},
			[]string{"never became ready and was rolled back", "(atomic)"}},
		{"Flux remediation",
			[]Finding{deploy("rates", "HelmRelease shop/rates: Helm upgrade failed: timed out waiting for the condition", 5*time.Minute),
				deploy("rates", "HelmRelease shop/rates: Helm rollback to previous release shop/rates.v7 with chart rates@3.7.0 succeeded", 6*time.Minute)},
			[]string{"timed out waiting for the condition", "rollback to previous release"}},
		{"a rollback of another workload", []Finding{deploy("labels", "helm rollback to revision 3", 5*time.Minute)}, nil},
		{"no rollback: a second upgrade", []Finding{deploy("rates", "rates 3.8.1: smaller rate tables", 5*time.Minute)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trigger := deploy("rates", "rates 3.8.0: preload all rate tables (memory 12Gi)", -time.Minute)
			a := &Analysis{Findings: append([]Finding{trigger}, c.later...)}
			w := &Hypothesis{Kind: KindUnschedulable, Subject: "rates", Trigger: &a.Findings[0]}
			note, ev := rolledBackNote(a, w, "rates pods are unschedulable")
			if c.want == nil {
				if note != "" {
					t.Errorf("note %q, want none", note)
				}
				return
			}
			for _, s := range c.want {
				if !strings.Contains(note, s) {
					t.Errorf("note %q lacks %q", note, s)
				}
			}
			if !strings.Contains(ev, "rolled back at") {
				t.Errorf("evidence %q", ev)
			}
		})
	}
}
