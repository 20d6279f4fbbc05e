package analyst

import (
	"strings"
	"testing"
	"time"
)

// TestMultiAttachRolling follows a Multi-Attach error to the pod holding
// the volume: the previous ReplicaSet's pod on another node is the rolling
// update's doing; a Recreate Deployment or a holder on the same node is
// not claimed.
func TestMultiAttachRolling(t *testing.T) {
	now := time.Date(2026, 11, 25, 15, 10, 0, 0, time.UTC)
	pods := `$ kubectl -n tools get pods -o wide
NAME                      READY   STATUS              RESTARTS   AGE   IP           NODE      NOMINATED NODE   READINESS GATES
docs-5d9c7b8f6-h2xlt      1/1     Running             0          6d    10.2.1.14    node-a    <none>           <none>
docs-6b8f7d9c5-q7kzn      0/1     ContainerCreating   0          21m   <none>       node-b    <none>           <none>
`
	named := `$ kubectl -n tools get events
LAST SEEN   TYPE      REASON               OBJECT                     MESSAGE
21m         Warning   FailedAttachVolume   pod/docs-6b8f7d9c5-q7kzn   Multi-Attach error for volume "pvc-3f2a9c1e" Volume is already used by pod(s) docs-5d9c7b8f6-h2xlt
2m          Warning   FailedMount          pod/docs-6b8f7d9c5-q7kzn   Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition
`
	exclusive := `$ kubectl -n tools describe pod docs-6b8f7d9c5-q7kzn
Name:             docs-6b8f7d9c5-q7kzn
Namespace:        tools
Node:             node-b/10.2.2.9
Status:           Pending
Events:
  Type     Reason              Age   From                     Message
  ----     ------              ----  ----                     -------
  Warning  FailedAttachVolume  20m   attachdetach-controller  Multi-Attach error for volume "pvc-3f2a9c1e" Volume is already exclusively attached to one node and can't be attached to another
`
	recreate := `$ kubectl -n tools describe deploy docs
Name:               docs
Namespace:          tools
Replicas:           1 desired | 1 updated | 2 total | 1 available | 1 unavailable
StrategyType:       Recreate
`
	for _, c := range []struct {
		name, session string
		want          string
	}{
		{"events table naming the holder", pods + named, "where pod docs-5d9c7b8f6-h2xlt of the previous ReplicaSet still runs, and the rolling update"},
		{"describe pod, exclusively attached", pods + exclusive, "where pod docs-5d9c7b8f6-h2xlt of the previous ReplicaSet still runs, and the rolling update"},
		{"Recreate strategy", pods + named + recreate, ""},
		{"holder on the same node", strings.ReplaceAll(pods, "node-b ", "node-a ") + named, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := investigateSession(t, now, c.session, "why is the docs deployment stuck", "docs", "tools")
			d := res.RootCause.Description
			if !strings.Contains(d, "Multi-Attach") {
				t.Fatalf("not the mount failure: %s", d)
			}
			checkClaim(t, d, c.want, "rolling update")
		})
	}
}
