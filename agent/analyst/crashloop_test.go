package analyst

import (
	"strings"
	"testing"
)

func TestCrashLoop(t *testing.T) {
	for _, c := range []struct {
		facts map[string]string
		want  []string
	}{
		{map[string]string{"exit_code": "1", "last_log": `Error: Cannot find module '/app/server.js'`},
			[]string{"api containers are in CrashLoopBackOff, exiting with code 1", "last log line", "Cannot find module"}},
		{map[string]string{"exit_code": "139"}, []string{"exiting with code 139"}},
		{nil, []string{"api containers are in CrashLoopBackOff"}},
	} {
		h := &Hypothesis{Kind: KindCrashLoop, Subject: "api", Primary: []*Finding{{Kind: KindCrashLoop, Subject: "api", Facts: c.facts}}}
		d := describe(h, Scope{})
		for _, s := range c.want {
			if !strings.Contains(d, s) {
				t.Errorf("description %q lacks %q", d, s)
			}
		}
		if recs := recommend(h, Scope{}); len(recs) != 3 || recs[0].Action != "Mitigate CrashLoopBackOff: restart or roll back api" {
			t.Errorf("recommendations %v", recs)
		}
	}
}
