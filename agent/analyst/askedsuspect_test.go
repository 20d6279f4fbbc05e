package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestAskedSuspects answers the suspect a question names when the root
// cause is another: its change and when, and whether anything of it
// failed; a suspect that is the root, a generic word and a suspect the
// evidence does not show are left alone.
func TestAskedSuspects(t *testing.T) {
	onset := win.Start.Add(20 * time.Minute)
	root := Finding{Kind: KindReadOnlyDB, Subject: "payments-aurora", Time: onset, Weight: 0.95, Severity: SevCritical, Summary: "writes fail"}
	cron := Finding{Kind: KindDeploy, Subject: "ledger-nightly-close", Time: onset.Add(-3*time.Hour - 42*time.Minute), Weight: 0.4,
		Summary: "deploy of ledger-nightly-close: ledger-close 2.0.3: carry over unmatched settlement lines"}
	sidecarCrash := Finding{Kind: KindCrashLoop, Subject: "envoy-sidecar", Time: onset.Add(5 * time.Minute), Severity: SevCritical, Summary: "envoy-sidecar crash-loops"}
	cases := []struct {
		name     string
		msg      string
		findings []Finding
		want     []string // "" entries: no answer
	}{
		{"a cron's deploy hours before, nothing of it failing",
			"do the logs show what happened to payments-api around 03:12? was it the ledger-close cron?",
			[]Finding{root, cron}, []string{"ledger-nightly-close (ledger-close, asked about)", "4 h before the onset", "nothing of it failing"}},
		{"a suspect that failed too, after the onset",
			"errors since 10:02 — could it be envoy-sidecar?",
			[]Finding{root, sidecarCrash}, []string{"envoy-sidecar crash-loops"}},
		{"the suspect is the root", "was it payments-aurora?", []Finding{root, cron}, nil},
		{"a generic word is no suspect", "was it the database?", []Finding{root, cron}, nil},
		{"a suspect the evidence does not show", "was it the fx-sync job?", []Finding{root, cron}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &Analysis{Findings: c.findings}
			w := &Hypothesis{Kind: root.Kind, Subject: root.Subject, Onset: onset, Primary: []*Finding{&a.Findings[0]}}
			got := askedSuspects(a, w, Scope{Message: c.msg})
			if len(c.want) == 0 {
				if len(got) != 0 {
					t.Fatalf("want no answer, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("answers: %+v", got)
			}
			s := got[0].Hypothesis + " " + got[0].Reason
			for _, w := range append(c.want, "explains the symptoms without it") {
				if !strings.Contains(s, w) {
					t.Errorf("answer lacks %q: %s", w, s)
				}
			}
		})
	}
}
