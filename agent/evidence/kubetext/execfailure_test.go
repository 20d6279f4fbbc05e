package kubetext_test

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// What kubectl, the API server and the container runtime answer when a
// command could not run in a container is the tool's failure; what the
// command itself printed is not, whatever it says.
func TestExecFailure(t *testing.T) {
	for _, tc := range []struct {
		line string
		exit int
		want bool
	}{
		// kubectl 1.2x: the container is gone or not started
		{`error: unable to upgrade connection: container not found ("app")`, -1, true},
		{`error: unable to upgrade connection: pod does not exist`, -1, true},
		// containerd through the API server (kubectl 1.2x)
		{`error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "0c9a7e": OCI runtime exec failed: exec failed: unable to start container process: exec: "ls": executable file not found in $PATH: unknown`, -1, true},
		// Docker/runc through older kubectl (stderr, no "error:")
		{`OCI runtime exec failed: exec failed: container_linux.go:380: starting container process caused: exec: "bash": executable file not found in $PATH: unknown`, 126, true},
		{`OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: no such file or directory: unknown`, -1, true},
		// the kubelet unreachable, a finished pod, a wrong container
		{`Error from server: error dialing backend: dial tcp 10.0.1.5:10250: i/o timeout`, -1, true},
		{`error: cannot exec into a container in a completed pod; current phase is Failed`, -1, true},
		{`Error from server (BadRequest): container app is not valid for pod web-5d9f8-x2x9k`, -1, true},
		{`error: Timeout occurred`, -1, true},
		// the API server refusing the exec call (the asker's RBAC, expired credentials)
		{`Error from server (Forbidden): pods "redis-0" is forbidden: User "jane@example.com" cannot create resource "pods/exec" in API group "" in the namespace "cache"`, -1, true},
		{`Error from server (Forbidden): pods "web-0" is forbidden: User "system:serviceaccount:ci:deployer" cannot get resource "pods/exec" in API group "" in the namespace "prod"`, -1, true},
		{`error: You must be logged in to the server (Unauthorized)`, -1, true},
		{`Error from server (Unauthorized): the server has asked for the client to provide credentials`, -1, true},
		// a shell that cannot find or run the command typed
		{`sh: curl: not found`, 127, true},
		{`/bin/sh: 1: /app/run.sh: Permission denied`, 126, true},
		// the command ran: its own output, errors included
		{`curl: (7) Failed to connect to cart-api port 80 after 3 ms: Couldn't connect to server`, 7, false},
		{`psql: error: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user "app"`, 2, false},
		{`{"status":"DOWN","components":{"db":{"status":"DOWN"}}}`, -1, false},
		{`error: failed to connect to redis at redis:6379`, 1, false},
		{`wget: download timed out`, 1, false},
		{`Error from server (Forbidden): secrets "db" is forbidden: User "system:serviceaccount:shop:api" cannot get resource "secrets"`, 1, false},
	} {
		if got := kubetext.ExecFailure(tc.line, tc.exit); got != tc.want {
			t.Errorf("ExecFailure(%q, %d) = %v, want %v", tc.line, tc.exit, got, tc.want)
		}
	}
}
