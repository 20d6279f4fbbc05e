package analyst

import (
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
		wantDescribed(t, h, Scope{}, c.want...)
		if recs := recommend(h, Scope{}); len(recs) != 3 || recs[0].Action != "Mitigate CrashLoopBackOff: restart or roll back api" {
			t.Errorf("recommendations %v", recs)
		}
	}
}

// TestLastLineOfExit keeps a JSON last line's short fields after a normal
// exit only: they say why the process stopped.
func TestLastLineOfExit(t *testing.T) {
	cases := []struct{ line, code, want string }{
		{`{"level":"info","ts":"2026-11-25T13:49:09.103Z","caller":"cmd/main.go:97","msg":"single pass finished, exiting","mode":"once"}`, "0",
			`2026-11-25T13:49:09.103Z info single pass finished, exiting mode=once`},
		{`{"time":"2026-11-25T13:49:09Z","level":"info","msg":"queue drained, shutting down","run_once":true,"processed":412}`, "0",
			`2026-11-25T13:49:09Z info queue drained, shutting down processed=412 run_once=true`},
		{`{"level":"error","ts":"2026-11-25T13:49:09.103Z","msg":"cannot connect","mode":"once"}`, "1",
			`2026-11-25T13:49:09.103Z error cannot connect`},
		{`2026-11-25 13:49:09 INFO done, exiting`, "0", `2026-11-25 13:49:09 INFO done, exiting`},
	}
	for _, c := range cases {
		if got := lastLineOfExit(c.line, c.code); got != c.want {
			t.Errorf("lastLineOfExit(%q, %s) = %q, want %q", c.line, c.code, got, c.want)
		}
	}
}
