package analyst

import (
	"strings"
	"testing"
)

// TestStartMechanism explains runtime start errors as runc and containerd
// print them.
func TestStartMechanism(t *testing.T) {
	cases := []struct{ msg, want string }{
		{`failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/app/server": stat /app/server: no such file or directory: unknown`, "does not exist in the image"},
		{`OCI runtime create failed: runc create failed: unable to start container process: exec: "gunicorn": executable file not found in $PATH: unknown`, "executable file not found"},
		{`exec /usr/local/bin/entrypoint.sh: exec format error`, "another CPU architecture"},
		{`OCI runtime create failed: unable to start container process: exec: "/entrypoint.sh": permission denied: unknown`, "not executable"},
	}
	for _, c := range cases {
		if got := startMechanism(c.msg); !strings.Contains(got, c.want) {
			t.Errorf("startMechanism(%q) = %q, want it to say %q", c.msg, got, c.want)
		}
	}
	if !IsStartFailure("StartError", "exec: \"x\": executable file not found in $PATH", 128) || IsStartFailure("Error", "", 1) {
		t.Error("IsStartFailure misjudges a start error or an application exit")
	}
}
