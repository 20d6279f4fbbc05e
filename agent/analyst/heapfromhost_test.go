package analyst_test

import (
	"strings"
	"testing"
)

// heapSession is a workload OOMKilled after its pods moved to other nodes,
// with what the operator ran in two of its pods.
func heapSession(app, execs string) string {
	return `$ kubectl -n shop get pods -o wide
NAME                        READY   STATUS      RESTARTS      AGE   IP           NODE
` + app + `-7f9c8b6d47-x4q2n   0/1     OOMKilled   4 (2m ago)    70m   10.8.1.14    pool-b-7k2m
` + app + `-7f9c8b6d47-p9r3s   1/1     Running     0             3d    10.8.0.22    pool-a-2x9c

$ kubectl -n shop describe pod ` + app + `-7f9c8b6d47-x4q2n
Name:         ` + app + `-7f9c8b6d47-x4q2n
Namespace:    shop
Node:         pool-b-7k2m/10.0.1.7
Containers:
  ` + app + `:
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Restart Count:  4
    Limits:
      memory:  1Gi
    Requests:
      memory:  1Gi
` + execs
}

func TestHeapFromHost(t *testing.T) {
	cases := []struct {
		name, app, session string
		want               []string // words of the root; nil: not this cause
	}{
		{"Node.js 16 on a cgroup v2 node, the v1 pod sized from its limit", "cart-bff", heapSession("cart-bff", `
$ kubectl -n shop exec cart-bff-7f9c8b6d47-x4q2n -- sh -c 'node --version; stat -fc %T /sys/fs/cgroup/; cat /sys/fs/cgroup/memory.max; node -p "require(\"v8\").getHeapStatistics().heap_size_limit/1048576"'
v16.20.2
cgroup2fs
1073741824
4144

$ kubectl -n shop exec cart-bff-7f9c8b6d47-p9r3s -- sh -c 'node --version; stat -fc %T /sys/fs/cgroup/; cat /sys/fs/cgroup/memory/memory.limit_in_bytes; node -p "require(\"v8\").getHeapStatistics().heap_size_limit/1048576"'
v16.20.2
tmpfs
1073741824
528
`), []string{"cgroup v2", "4144 MiB", "528 MiB"}},
		{"JDK 8 before cgroup v2 support, MaxHeapSize from PrintFlagsFinal", "ledger-jvm", heapSession("ledger-jvm", `
$ kubectl -n shop exec ledger-jvm-7f9c8b6d47-x4q2n -- sh -c 'java -version 2>&1 | head -1; stat -fc %T /sys/fs/cgroup; cat /sys/fs/cgroup/memory.max; java -XX:+PrintFlagsFinal -version 2>/dev/null | grep " MaxHeapSize"'
openjdk version "1.8.0_302"
cgroup2fs
1073741824
    uintx MaxHeapSize                              := 8392802304                          {product}
`), []string{"cgroup v2", "1Gi"}},
		{"a runtime on cgroup v2 that reads its limit (heap under it)", "cart-bff", heapSession("cart-bff", `
$ kubectl -n shop exec cart-bff-7f9c8b6d47-x4q2n -- sh -c 'node --version; stat -fc %T /sys/fs/cgroup/; cat /sys/fs/cgroup/memory.max; node -p "require(\"v8\").getHeapStatistics().heap_size_limit/1048576"'
v20.18.0
cgroup2fs
1073741824
528
`), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runScenarioFiles(t, map[string]string{
				"bundle.json":   `{"captured_at":"2026-11-27T08:10:00Z"}`,
				"session.txt":   c.session,
				"changes.json":  `[{"timestamp":"2026-11-27T07:00:00Z","service":"gke-shop","kind":"infra","description":"node pool migration: pool-a (COS 97, cgroup v1) to pool-b (COS 109, cgroup v2)"}]`,
				"scenario.json": `{"title":"t","now":"2026-11-27T08:10:00Z","request":{"agent_name":"planner","message":"` + c.app + ` keeps getting OOMKilled since this morning, is it leaking?","context":{"namespace":"shop","service":"` + c.app + `"}}}`,
			})
			d := res.RootCause.Description
			t.Logf("%v%%: %s", res.RootCause.Confidence, d)
			got := strings.Contains(d, "sizes its heap from the host's memory")
			if got != (c.want != nil) {
				t.Fatalf("heap from host %v, want %v: %s", got, c.want != nil, d)
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q", w)
				}
			}
		})
	}
}
