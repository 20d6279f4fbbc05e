package analyst

import "testing"

// TestAskedUsageQuestion: the questions that ask for a reading of resource
// use, in several wordings, and those that ask about a failure instead.
func TestAskedUsageQuestion(t *testing.T) {
	cases := []struct {
		msg, resource, form, container string
		ok                             bool
	}{
		{"which node in prod is the busiest cpu-wise right now, and what's eating it?", "cpu", "node", "", true},
		{"what are the top 5 pods by memory in the payments namespace?", "memory", "pod", "", true},
		{"which pods use the most memory in prod?", "memory", "pod", "", true},
		{"Which nodes have the highest memory usage?", "memory", "node", "", true},
		{"what's the memory usage of the api container compared to its limit?", "memory", "container", "api", true},
		{"how much cpu is the worker container using vs its request?", "cpu", "container", "worker", true},
		{"which pods are using the most memory on that node? is it opensearch again?", "memory", "pod", "", true},
		{"search-proxy pods keep restarting since about 10, are they running out of memory?", "", "", "", false},
		{"ContainerMemoryNearLimit fired: 'Container gateway is using 94% of its memory limit (1Gi)'. Are we about to get OOM killed?", "", "", "", false},
		{"checkout is slow since the deploy, is the database using too much cpu?", "", "", "", false},
	}
	for _, c := range cases {
		q, ok := askedUsageQuestion(c.msg)
		if ok != c.ok || ok && (q.resource != c.resource || q.form != c.form || q.container != c.container) {
			t.Errorf("%q: got %+v %v, want %s %s %q %v", c.msg, q, ok, c.resource, c.form, c.container, c.ok)
		}
	}
}
