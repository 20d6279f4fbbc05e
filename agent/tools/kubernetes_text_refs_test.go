package tools_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/tools"
)

// References from a transcript: a secret kubectl answered NotFound for is
// missing (as against a live API), and a secret known only from a get
// table row is found without claiming its keys are missing (the row does
// not name them).
func TestDescribeResourceTranscriptRefs(t *testing.T) {
	const session = `$ kubectl describe pod rates-6f7b8d9c45-k9wtx -n logistics
Name:             rates-6f7b8d9c45-k9wtx
Namespace:        logistics
Node:             node-1/10.0.0.11
Status:           Running
Containers:
  app:
    Image:          ghcr.io/example/rates:1.0.0
    State:          Running
      Started:      Wed, 20 Jan 2027 17:00:00 +0000
    Ready:          True
    Restart Count:  0
    Environment:
      API_KEY:  <set to the key 'fedex' in secret 'carrier-api-keys'>  Optional: false
      TZ:       <set to the key 'tz' of config map 'rates-config'>     Optional: false
    Mounts:         <none>
Conditions:
  Type              Status
  Ready             True
Volumes:            <none>
QoS Class:          BestEffort
Events:             <none>
$ kubectl describe secret ghcr-creds -n logistics
Error from server (NotFound): secrets "ghcr-creds" not found
$ kubectl get secrets -n logistics
NAME               TYPE     DATA   AGE
carrier-api-keys   Opaque   3      3d
$ kubectl get cm -n logistics
NAME           DATA   AGE
other-config   1      3d
`
	b, err := bundle.Open(fstest.MapFS{
		"bundle.json": {Data: []byte(`{"captured_at": "2027-01-20T17:25:00Z"}`)},
		"session.txt": {Data: []byte(session)},
	}, "transcript")
	if err != nil {
		t.Fatal(err)
	}
	c := tools.Builtin()
	s := &tools.Session{Catalog: c, Toolkit: c.Names(), Env: &tools.Env{Sources: b.Sources(b.CapturedAt)}}
	out, err := s.Call(context.Background(), "describe_resource", json.RawMessage(`{"kind": "pod", "namespace": "logistics", "name": "rates-6f7b8d9c45-k9wtx"}`))
	if err != nil {
		t.Fatal(err)
	}
	got := rel(out.(*tools.ResourceDescription))
	for _, w := range []string{
		"secret Secret logistics/carrier-api-keys found: env API_KEY of container app; keys not shown (a kubectl get row: 3 keys)",
		"config_map ConfigMap logistics/rates-config missing: env TZ of container app",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	// the NotFound answer alone makes the kind held
	only, _ := bundle.Open(fstest.MapFS{"s.txt": {Data: []byte(strings.SplitN(session, "$ kubectl get secrets", 2)[0])}}, "t")
	s.Env = &tools.Env{Sources: only.Sources(only.CapturedAt)}
	out, err = s.Call(context.Background(), "describe_resource", json.RawMessage(`{"kind": "pod", "namespace": "logistics", "name": "rates-6f7b8d9c45-k9wtx"}`))
	if err != nil {
		t.Fatal(err)
	}
	got = rel(out.(*tools.ResourceDescription))
	if w := "secret Secret logistics/carrier-api-keys missing: env API_KEY of container app"; !slices.Contains(got, w) {
		t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
	}
}
