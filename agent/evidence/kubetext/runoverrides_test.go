package kubetext

import (
	"strings"
	"testing"
	"time"
)

// A one-shot pod started with kubectl run -i whose command is in its
// --overrides JSON (to mount a volume and list it) is a command with an
// output, not an interactive shell whose lines are lost.
func TestRunOverridesCommand(t *testing.T) {
	cases := []struct {
		name, session, run, line string
	}{
		{"command in overrides, -i --rm",
			`$ kubectl run -n finance dbg --rm -i --restart=Never --image=busybox:1.36 --overrides='{"spec":{"volumes":[{"name":"e","persistentVolumeClaim":{"claimName":"exports"}}],"containers":[{"name":"dbg","image":"busybox:1.36","command":["sh","-c","ls -ln /export"],"volumeMounts":[{"name":"e","mountPath":"/export"}]}]}}'
total 4
drwxr-xr-x    2 0        0             4096 Nov 22 01:31 tax
pod "dbg" deleted
`, "sh -c 'ls -ln /export'", "drwxr-xr-x    2 0        0             4096 Nov 22 01:31 tax"},
		{"command and args in overrides, -it",
			`$ kubectl run -it dbg --image=alpine --restart=Never --rm --overrides='{"apiVersion":"v1","spec":{"containers":[{"name":"dbg","image":"alpine","command":["stat"],"args":["-c","%u %a","/data"]}]}}'
0 755
pod "dbg" deleted
`, "stat -c '%u %a' /data", "0 755"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Parse([]byte(c.session), time.Now())
			for _, o := range r.Outputs {
				if strings.HasPrefix(o.Command, "kubectl run") {
					if strings.Join(o.Lines, "\n") != c.line && !strings.Contains(strings.Join(o.Lines, "\n"), c.line) {
						t.Errorf("output lines %q lack %q", o.Lines, c.line)
					}
					return
				}
			}
			t.Fatalf("no output for the kubectl run: %+v", r.Outputs)
		})
	}
	if got := overridesRun(`'{"spec":{"containers":[{"name":"d","command":["sh","-c","ls -ln /export"]}]}}'`); got != "sh -c 'ls -ln /export'" {
		t.Errorf("overridesRun = %q", got)
	}
	if got := overridesRun(`'{"spec":{}}'`); got != "" {
		t.Errorf("overridesRun without containers = %q", got)
	}
}
