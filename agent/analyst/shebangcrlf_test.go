package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// A script entrypoint with CRLF line endings behind runc's "exec ...: no
// such file or directory", its first bytes shown by od -c (GNU and
// busybox), xxd, hexdump -C and cat -A, or file(1)'s verdict on the
// checkout, with the commit that removed .gitattributes; a script whose
// shebang ends in LF, a CRLF script that is not the entrypoint, and an
// exec format error are none.
func TestDetectShebangCRLF(t *testing.T) {
	start := func(msg string) Finding {
		return Finding{Kind: KindStartFailure, Subject: "billing-worker", Object: "pod billing/billing-worker-8d6c4b9f7-rz5wk container worker", Namespace: "billing",
			Source: SrcKubernetes, Time: win.End, Severity: SevCritical, Weight: 0.95, Summary: "pod billing/billing-worker-8d6c4b9f7-rz5wk container worker cannot start its command/entrypoint (Error): " + msg,
			Facts: map[string]string{"start_message": msg}}
	}
	enoent := start("exec /app/entrypoint.sh: no such file or directory")
	legacy := start(`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/docker-entrypoint.sh": stat /docker-entrypoint.sh: no such file or directory`)
	cmd := func(command string, lines ...string) evidence.CommandOutput {
		return evidence.CommandOutput{Command: command, Run: command, Lines: lines}
	}
	gnuOD := cmd("docker run --rm --entrypoint /bin/sh registry.example.com/billing-worker:1.12.0 -c 'head -n 1 /app/entrypoint.sh | od -c'",
		"0000000   #   !   /   b   i   n   /   s   h  \\r  \\n", "0000013")
	busyboxOD := cmd("kubectl debug -it billing-worker-8d6c4b9f7-rz5wk --image=busybox --target=worker -- sh -c 'head -c 16 /proc/1/root/app/entrypoint.sh | od -c'",
		"0000000   #   !   /   u   s   r   /   b   i   n   /   e   n   v       b", "0000020")
	xxd := cmd("head -n 1 docker/entrypoint.sh | xxd", "00000000: 2321 2f62 696e 2f62 6173 680d 0a         #!/bin/bash..")
	hexdump := cmd("hexdump -C -n 16 docker-entrypoint.sh", "00000000  23 21 2f 62 69 6e 2f 73  68 0d 0a 73 65 74 20 2d  |#!/bin/sh..set -|")
	catA := cmd("cat -A ./docker/entrypoint.sh | head -3", "#!/bin/sh^M$", "set -eu^M$", "exec python -m billing_worker^M$")
	file := cmd("file ~/src/billing-worker/docker/entrypoint.sh", "/home/dev/src/billing-worker/docker/entrypoint.sh: POSIX shell script, ASCII text executable, with CRLF line terminators")
	gitLog := cmd("git -C ~/src/billing-worker log --oneline -4 -- docker/entrypoint.sh .gitattributes",
		"e41b7d2 entrypoint: wait for billing-db before starting the worker", "9c2a510 remove .gitattributes (unused)", "3f8d1c4 entrypoint: exec python -m billing_worker")
	lfOD := cmd("docker run --rm --entrypoint /bin/sh registry.example.com/billing-worker:1.11.3 -c 'head -n 1 /app/entrypoint.sh | od -c'",
		"0000000   #   !   /   b   i   n   /   s   h  \\n", "0000012")
	otherFile := cmd("file scripts/release.sh", "scripts/release.sh: Bourne-Again shell script, ASCII text executable, with CRLF line terminators")
	for _, tc := range []struct {
		name    string
		start   Finding
		cmds    []evidence.CommandOutput
		subject string
		want    []string
	}{
		{"GNU od -c with git log", enoent, []evidence.CommandOutput{gnuOD, lfOD, gitLog}, "billing-worker", []string{"/app/entrypoint.sh", "CRLF", `"/bin/sh"`, "/bin/sh\\r", "remove .gitattributes"}},
		{"busybox od -c, a shebang through env cut short", enoent, []evidence.CommandOutput{busyboxOD, file}, "billing-worker", []string{"CRLF", "carriage return"}},
		{"xxd of the checkout", enoent, []evidence.CommandOutput{xxd}, "billing-worker", []string{`"/bin/bash"`}},
		{"hexdump -C, runc's older message", legacy, []evidence.CommandOutput{hexdump}, "billing-worker", []string{"/docker-entrypoint.sh", `"/bin/sh"`}},
		{"cat -A", enoent, []evidence.CommandOutput{catA}, "billing-worker", []string{`"/bin/sh"`}},
		{"file(1) alone", enoent, []evidence.CommandOutput{file}, "billing-worker", []string{"ends in a carriage return"}},
		{"a shebang ending in LF", enoent, []evidence.CommandOutput{lfOD, gitLog}, "", nil},
		{"a CRLF script that is not the entrypoint", enoent, []evidence.CommandOutput{otherFile}, "", nil},
		{"an exec format error", start("exec /app/entrypoint.sh: exec format error"), []evidence.CommandOutput{gnuOD}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := detectShebangCRLF(&Gathered{Commands: tc.cmds, Window: win}, []Finding{tc.start})
			f := onlyFinding(t, fs, tc.subject)
			if f == nil {
				return
			}
			h := &Hypothesis{Kind: KindShebangCRLF, Subject: f.Subject, Onset: f.Time, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, tc.want...)
		})
	}
}

// The runtime's exec failure as a crashed container's only output is a
// start failure whatever its exit code; an application that logs the
// same words among its own lines is not.
func TestExecFailedLine(t *testing.T) {
	line := func(s ...string) []evidence.LogLine {
		var out []evidence.LogLine
		for _, t := range s {
			out = append(out, evidence.LogLine{Text: t})
		}
		return out
	}
	for _, tc := range []struct {
		lines []evidence.LogLine
		want  bool
	}{
		{line("exec /app/entrypoint.sh: no such file or directory"), true},
		{line("exec /usr/local/bin/docker-entrypoint.sh: exec format error"), true},
		{line("standard_init_linux.go:228: exec user process caused: no such file or directory"), true},
		{line("exec /app/run: permission denied", ""), true},
		{line("2026-11-21 14:22:41,904 INFO starting", "exec /app/entrypoint.sh: no such file or directory"), false},
		{line("open /etc/app/config.yaml: no such file or directory"), false},
	} {
		if got := execFailedLine(tc.lines) != ""; got != tc.want {
			t.Errorf("execFailedLine(%v) = %v, want %v", tc.lines, got, tc.want)
		}
	}
}
