package analyst

import (
	"strings"
	"testing"
)

// TestJobFailedFirstAction: the first action of a failed Job names what
// was read: the line its log gives, else, for a run stopped at its
// deadline with no log read, what it waited on and where its log is kept;
// never an empty pod name.
func TestJobFailedFirstAction(t *testing.T) {
	cases := []struct {
		facts     map[string]string
		want, not string
	}{
		{map[string]string{"job": "settlement-reconcile-29884380", "cronjob": "settlement-reconcile", "reason": "DeadlineExceeded"},
			"waited on until its activeDeadlineSeconds", "the log of  "},
		{map[string]string{"job": "backup-29884380", "cronjob": "backup", "reason": "BackoffLimitExceeded", "pod": "backup-29884380-x2k4p", "line": "ERROR: disk quota exceeded"},
			"the log of backup-29884380-x2k4p names (ERROR: disk quota exceeded)", "activeDeadlineSeconds"},
		{map[string]string{"job": "migrate-1", "reason": "BackoffLimitExceeded"},
			"Read the log of the pod of migrate-1", "cronjob/"},
	}
	for _, c := range cases {
		f := Finding{Kind: KindJobFailed, Subject: orWord(c.facts["cronjob"], c.facts["job"]), Facts: c.facts}
		h := &Hypothesis{Kind: KindJobFailed, Subject: f.Subject, Primary: []*Finding{&f}}
		r := &recommender{h: h}
		jobFailed.recommend(h, Scope{}, r)
		first := r.recs[0].Action
		if !strings.Contains(first, c.want) || strings.Contains(first, c.not) {
			t.Errorf("%v: first action %q", c.facts, first)
		}
	}
}
