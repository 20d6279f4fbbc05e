package analyst_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAskedUsage: a question asking for resource use is answered with the
// readings handed over (kubectl top node, pod, pod --containers, of
// several kubectl versions), ranked or compared with the limits, ahead of
// a failure elsewhere that does not bear on what was asked.
func TestAskedUsage(t *testing.T) {
	const failing = `
$ kubectl get pods -n prod
NAME                            READY   STATUS      RESTARTS   AGE
nightly-export-29388060-5dqwx   0/1     OOMKilled   0          8h
`
	cases := []struct {
		name, msg, ns, service, session string
		want                            []string // words of the root; nil: not a usage answer
	}{
		{"busiest node, kubectl 1.31 CPU(%) headers", "which node is the busiest cpu-wise, and what's eating it?", "", "", `
$ kubectl top nodes
NAME                                       CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)
ip-10-1-1-52.eu-west-1.compute.internal    1248m        31%      9874Mi          68%
ip-10-1-3-117.eu-west-1.compute.internal   3761m        94%      5480Mi          37%
$ kubectl top pods -A --sort-by=cpu
NAMESPACE   NAME                            CPU(cores)   MEMORY(bytes)
media       thumbnailer-6f7c9d8b5-m4q2x     2987m        1211Mi
shop        cart-7d4b8c6f59-2kvxp           341m         512Mi
$ kubectl get pods -A -o wide
NAMESPACE   NAME                          READY   STATUS    RESTARTS   AGE   IP           NODE
media       thumbnailer-6f7c9d8b5-m4q2x   1/1     Running   0          2d    10.1.3.66    ip-10-1-3-117.eu-west-1.compute.internal
shop        cart-7d4b8c6f59-2kvxp         1/1     Running   0          2d    10.1.1.9     ip-10-1-1-52.eu-west-1.compute.internal
`, []string{"ip-10-1-3-117", "3761m", "94%", "thumbnailer", "2987m"}},
		{"most memory-hungry node, kubectl 1.2x CPU% headers", "which nodes have the highest memory usage?", "", "", `
$ kubectl top node
NAME      CPU(cores)   CPU%   MEMORY(bytes)   MEMORY%
node-a    900m         22%    3100Mi          40%
node-b    400m         10%    7100Mi          91%
`, []string{"node-b", "7100Mi", "91%"}},
		{"pods by memory in a namespace, a failure beside", "which pods use the most memory in prod?", "prod", "", `
$ kubectl top pods -n prod --sort-by=memory
NAME                             CPU(cores)   MEMORY(bytes)
indexer-5c7d9f8b6-x2lqp          842m         5970Mi
orders-api-7f9b8c6d5-hq2lm       611m         2187Mi
` + failing, []string{"indexer-5c7d9f8b6-x2lqp", "5970Mi", "orders-api-7f9b8c6d5-hq2lm"}},
		{"a container against its limit, from a jsonpath print", "what's the memory usage of the api container compared to its limit?", "accounts", "accounts-api", `
$ kubectl top pod -n accounts --containers
POD                                NAME          CPU(cores)   MEMORY(bytes)
accounts-api-6f9d8c7b5-4fz7k       api           412m         1713Mi
accounts-api-6f9d8c7b5-4fz7k       istio-proxy   38m          71Mi
accounts-api-6f9d8c7b5-9qw2d       api           397m         1402Mi
$ kubectl get deploy accounts-api -n accounts -o jsonpath='{range .spec.template.spec.containers[*]}{.name}{"\t"}{.resources}{"\n"}{end}'
api	{"limits":{"cpu":"2","memory":"2Gi"},"requests":{"cpu":"500m","memory":"1536Mi"}}
`, []string{"1713Mi", "84%", "2Gi", "1402Mi"}},
		{"a question about a failure is not a reading", "are the orders-api pods running out of memory?", "prod", "", `
$ kubectl top pods -n prod
NAME                             CPU(cores)   MEMORY(bytes)
orders-api-7f9b8c6d5-hq2lm       611m         2187Mi
`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, data string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := `"namespace":"` + c.ns + `"`
			if c.service != "" {
				ctx += `,"service":"` + c.service + `"`
			}
			write("bundle.json", `{"captured_at":"2026-11-27T14:00:00Z"}`)
			write("session.txt", c.session)
			write("scenario.json", `{"title":"t","now":"2026-11-27T14:00:00Z","request":{"agent_name":"planner","message":"`+c.msg+`","context":{`+ctx+`}}}`)
			res := runScenarioDir(t, dir)
			d := res.RootCause.Description
			t.Logf("%v%%: %s", res.RootCause.Confidence, d)
			got := strings.Contains(d, "kubectl top")
			if got != (c.want != nil) {
				t.Fatalf("usage answer %v, want %v: %s", got, c.want != nil, d)
			}
			if got && res.RootCause.Confidence > 70 {
				t.Errorf("a reading answered at %v%%, want at most 70", res.RootCause.Confidence)
			}
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q", w)
				}
			}
		})
	}
}
