package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestPrivilegedPortLines: the ways servers log a refused bind, which are
// not an authentication failure nor a file refused.
func TestPrivilegedPortLines(t *testing.T) {
	testLines(t, privilegedPort, []lineCase{
		{"2026/11/26 09:09:09 [emerg] 1#1: bind() to 0.0.0.0:80 failed (13: Permission denied)", KindPrivilegedPort},
		{"nginx: [emerg] bind() to [::]:443 failed (13: Permission denied)", KindPrivilegedPort},
		{`{"level":"fatal","ts":1732612149.1,"msg":"listen tcp :80: bind: permission denied"}`, KindPrivilegedPort},
		{"Error: listen EACCES: permission denied 0.0.0.0:80", KindPrivilegedPort},
		{"ERROR:    [Errno 13] error while attempting to bind on address ('0.0.0.0', 80): permission denied", KindPrivilegedPort},
		{"(13)Permission denied: AH00072: make_sock: could not bind to address [::]:80", KindPrivilegedPort},
		{"[ALERT]    (1) : Starting frontend http-in: cannot bind socket (Permission denied) [0.0.0.0:80]", KindPrivilegedPort},
		{"[2026-11-26 09:09:09.123][1][critical][main] [source/server/server.cc:131] error initializing configuration: cannot bind '0.0.0.0:443': Permission denied", KindPrivilegedPort},
		{"1:M 26 Nov 2026 09:09:09.123 # Warning: Could not create server TCP listening socket *:80: bind: Permission denied", KindPrivilegedPort},
		{`Permission denied - bind(2) for "0.0.0.0" port 80 (Errno::EACCES)`, KindPrivilegedPort},
		{"Caused by: java.net.BindException: Permission denied", KindPrivilegedPort},
		// Not a bind: a file, a database role, an API.
		{"open /var/cache/nginx/client_temp: permission denied", ""},
		{`ERROR: permission denied for table invoices`, ""},
	})
}

func TestBoundPort(t *testing.T) {
	for line, want := range map[string]string{
		"2026/11/26 09:09:09 [emerg] 1#1: bind() to 0.0.0.0:80 failed (13: Permission denied)":                               "80",
		"listen tcp :443: bind: permission denied":                                                                           "443",
		"ERROR:    [Errno 13] error while attempting to bind on address ('0.0.0.0', 80): permission denied":                  "80",
		"(13)Permission denied: AH00072: make_sock: could not bind to address [::]:80":                                       "80",
		"1:M 26 Nov 2026 09:09:09.123 # Warning: Could not create server TCP listening socket *:25: bind: Permission denied": "25",
		`Permission denied - bind(2) for "0.0.0.0" port 443 (Errno::EACCES)`:                                                 "443",
		"Caused by: java.net.BindException: Permission denied":                                                               "",
	} {
		if got := boundPort(line); got != want {
			t.Errorf("boundPort(%q) = %q, want %q", line, got, want)
		}
	}
}

// TestPrivilegedPortFromCrashLog: the crash loop's last lines name the
// refused port; the securityContext read with jsonpath and the change to
// a non-root image say who runs it; the cause outranks the crash loop it
// explains.
func TestPrivilegedPortFromCrashLog(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 9, 9, 0, 0, time.UTC)
	crash := Finding{Kind: KindCrashLoop, Subject: "edge", Object: "pod web/edge-5d8b6f9c74-9sfjc", Namespace: "web",
		Time: t0, Summary: "pod web/edge-5d8b6f9c74-9sfjc container proxy in CrashLoopBackOff (exit code 1)",
		Facts: map[string]string{"container": "proxy", "exit_code": "1", "restarts": "9"}}
	sec := evidence.CommandOutput{Command: `kubectl get pod edge-5d8b6f9c74-9sfjc -n web -o jsonpath='{.spec.securityContext}{"\n"}{.spec.containers[0].securityContext}'`,
		Lines: []string{`{"runAsNonRoot":true,"seccompProfile":{"type":"RuntimeDefault"}}`, `{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]}}`}}
	change := evidence.Change{Timestamp: t0.Add(-30 * time.Minute), Service: "edge", Kind: "deploy", Description: "edge 2.0.0: base image caddy rootless, USER 1000"}
	cases := []struct {
		name  string
		lines []string
		cmds  []evidence.CommandOutput
		want  []string
	}{
		{"nginx, securityContext read", []string{"/docker-entrypoint.sh: Configuration complete; ready for start up",
			"2026/11/26 09:09:09 [emerg] 1#1: bind() to 0.0.0.0:80 failed (13: Permission denied)",
			"nginx: [emerg] bind() to 0.0.0.0:80 failed (13: Permission denied)"}, []evidence.CommandOutput{sec},
			[]string{"listens on port 80, a privileged port", "runs as runAsNonRoot: true", "drops ALL capabilities", "CrashLoopBackOff"}},
		{"go server, change says the user", []string{`{"level":"info","msg":"serving"}`, `{"level":"fatal","msg":"listen tcp :443: bind: permission denied"}`}, nil,
			[]string{"port 443, a privileged port", `a non-root user since the deploy change "edge 2.0.0: base image caddy rootless, USER 1000"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ll []evidence.LogLine
			for _, l := range c.lines {
				ll = append(ll, evidence.LogLine{Text: l})
			}
			ev := &Gathered{K8s: K8sEvidence{PreviousLogs: map[string][]evidence.LogLine{"web/edge-5d8b6f9c74-9sfjc/proxy": ll}}, Commands: c.cmds,
				Changes: []evidence.Change{change}}
			fs := privilegedPort.detect(ev, []Finding{crash})
			if len(fs) != 1 || fs[0].fact("why") == "" {
				t.Fatalf("findings %+v", fs)
			}
			h := &Hypothesis{Kind: KindPrivilegedPort, Subject: "edge", Primary: []*Finding{&fs[0]}}
			wantDescribed(t, h, Scope{}, c.want...)
			recs := recommend(h, Scope{})
			var all []string
			for _, r := range recs {
				all = append(all, r.Action)
			}
			if !strings.Contains(strings.Join(all, "\n"), "unprivileged port") || !strings.Contains(strings.Join(all, "\n"), "NET_BIND_SERVICE") {
				t.Errorf("recommendations %q", all)
			}
			a := Reason(append(fs, crash), Scope{Service: "edge"})
			if a.Hypotheses[0].Kind != KindPrivilegedPort {
				t.Errorf("winner %s, want privileged_port", a.Hypotheses[0].Kind)
			}
		})
	}
}
