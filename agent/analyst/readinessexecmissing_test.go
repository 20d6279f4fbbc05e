package analyst

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestReadinessExecMissing: a readiness probe whose command the image does
// not have, as containerd+runc, CRI-O, Docker and a probe's shell report
// it, is the cause (the pods never become ready); a readiness probe that
// ran and failed, and a liveness probe with a missing command, are not
// this mechanism's.
func TestReadinessExecMissing(t *testing.T) {
	testEvents(t, readinessExecMissing, []eventCase{
		{"Pod", "geo-7d9f8c6b5-x2kq9", "Unhealthy", corev1.EventTypeWarning,
			`Readiness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "8a1f": OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/grpc_health_probe": stat /bin/grpc_health_probe: no such file or directory: unknown`,
			KindReadinessExecMissing, []string{"geo never become ready", "command /bin/grpc_health_probe is not in the container's image", "stat /bin/grpc_health_probe: no such file or directory", "progress deadline"}},
		{"Pod", "web-7f9c8d6b4-abcde", "Unhealthy", corev1.EventTypeWarning,
			`Readiness probe errored: rpc error: code = Unknown desc = command error: time="2026-11-25T15:33:45Z" level=error msg="exec failed: unable to start container process: exec: \"curl\": executable file not found in $PATH", stdout: , stderr: , exit code -1`,
			KindReadinessExecMissing, []string{"command curl is not in the container's image"}},
		{"Pod", "web-7f9c8d6b4-abcde", "Unhealthy", corev1.EventTypeWarning,
			`Readiness probe failed: OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: "wget": executable file not found in $PATH: unknown`,
			KindReadinessExecMissing, []string{"command wget is not in the container's image"}},
		{"Pod", "db-0", "Unhealthy", corev1.EventTypeWarning, `Readiness probe failed: /bin/sh: 1: pg_isready: not found`,
			KindReadinessExecMissing, []string{"command pg_isready is not in the container's image"}},
		{"Pod", "web-7f9c8d6b4-abcde", "Unhealthy", corev1.EventTypeWarning, "Readiness probe failed: HTTP probe failed with statuscode: 503", "", nil},
		{"Pod", "cache-0", "Unhealthy", corev1.EventTypeWarning, `Readiness probe failed: key health:ping not found`, "", nil},
		{"Pod", "geo-7d9f8c6b5-x2kq9", "Unhealthy", corev1.EventTypeWarning,
			`Liveness probe errored: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "8a1f": OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/grpc_health_probe": stat /bin/grpc_health_probe: no such file or directory: unknown`,
			"", nil},
	})
}

// TestReadinessExecMissingHistory: an image's build history (crane config,
// docker history) that copies the command in is named; a base-image change
// fits as the trigger, a feature release does not.
func TestReadinessExecMissingHistory(t *testing.T) {
	crane := evidence.CommandOutput{Command: "crane config registry.example.com/geo:1.4.2 | jq -r '.history[].created_by'", Lines: []string{
		"COPY /go/bin/grpc_health_probe /bin/grpc_health_probe # buildkit", "ENTRYPOINT [\"/usr/local/bin/geo\"]"}}
	docker := evidence.CommandOutput{Command: "docker history --no-trunc registry.example.com/geo:1.4.2", Lines: []string{
		"<missing>   3 weeks ago   COPY /go/bin/grpc_health_probe /bin/grpc_health_probe # buildkit   11.2MB    buildkit.dockerfile.v0"}}
	unrelated := evidence.CommandOutput{Command: "kubectl exec geo-0 -- ls /bin", Lines: []string{"sh", "ls"}}
	for _, c := range []struct {
		name string
		cmd  evidence.CommandOutput
		want bool
	}{{"crane config", crane, true}, {"docker history", docker, true}, {"a listing", unrelated, false}} {
		t.Run(c.name, func(t *testing.T) {
			f := Finding{Kind: KindReadinessExecMissing, Subject: "geo"}
			f.setFact("missing_command", "/bin/grpc_health_probe")
			found := []Finding{f}
			detectReadinessHistory(&Gathered{Commands: []evidence.CommandOutput{c.cmd}}, found)
			if got := found[0].fact("history_line") != ""; got != c.want {
				t.Fatalf("history line %q, want %v", found[0].fact("history_line"), c.want)
			}
			if !c.want {
				return
			}
			found[0].setFact("image", "registry.example.com/geo:1.5.0")
			h := &Hypothesis{Kind: KindReadinessExecMissing, Subject: "geo", Primary: []*Finding{&found[0]}}
			wantDescribed(t, h, Scope{}, "an earlier build copied it in", "COPY /go/bin/grpc_health_probe")
		})
	}
	h := &Hypothesis{Kind: KindReadinessExecMissing, Subject: "geo"}
	base := &Finding{Kind: KindDeploy}
	base.setFact("description", "geo 1.5.0: build on gcr.io/distroless/static-debian12 instead of alpine")
	feature := &Finding{Kind: KindDeploy}
	feature.setFact("description", "geo 1.5.0: faster reverse lookups")
	if !readinessExecMissing.fitsChange(h, base) || readinessExecMissing.fitsChange(h, feature) {
		t.Error("a base-image change must fit, a feature release must not")
	}
}
