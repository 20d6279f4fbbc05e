package kubetext_test

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// TestLogCounts: a kubectl logs output piped into a count (grep -c, grep
// -ic, grep --count, grep | wc -l) is no log line: it is kept as text
// with the command and the pod it counted; a pipe that keeps lines (grep,
// tail, head) stays a log, and so does a lone number a grep kept.
func TestLogCounts(t *testing.T) {
	now := time.Date(2026, 11, 25, 14, 45, 0, 0, time.UTC)
	cases := []struct {
		cmd, out string
		count    bool
	}{
		{"kubectl logs -n ingress-nginx ingress-nginx-controller-7d9c6b5f8-lq2xt --since=3h | grep -c 'CompareIt-Feedbot'", "771402", true},
		{"kubectl logs -n edge envoy-5f6d8c9b7-6wq2m --since=1h | grep -ic \"python-requests\"", "48211", true},
		{"kubectl logs -n edge envoy-5f6d8c9b7-6wq2m --since=1h | grep --count 10.4.7.19", "912", true},
		{"kubectl logs -n edge envoy-5f6d8c9b7-6wq2m --since=1h | grep ' 429 ' | wc -l", "3310", true},
		{"kubectl logs -n edge envoy-5f6d8c9b7-6wq2m --since=1h | grep --color=never ' 429 '", "3310", false},
		{"kubectl logs -n edge envoy-5f6d8c9b7-6wq2m --since=1h | tail -1", `10.4.7.19 - - [25/Nov/2026:14:44:41 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8.5.0"`, false},
	}
	for _, c := range cases {
		res := kubetext.Parse([]byte("$ "+c.cmd+"\n"+c.out+"\n"), now)
		if c.count {
			if len(res.Logs) != 0 || len(res.Outputs) != 1 {
				t.Errorf("%s: %d logs, %d outputs", c.cmd, len(res.Logs), len(res.Outputs))
				continue
			}
			o := res.Outputs[0]
			if o.Command != c.cmd || len(o.Lines) != 1 || o.Lines[0] != c.out || o.Target == "" || o.Namespace == "" || o.Exec {
				t.Errorf("%s: output %+v", c.cmd, o)
			}
			continue
		}
		if len(res.Logs) != 1 || len(res.Outputs) != 0 {
			t.Errorf("%s: %d logs, %d outputs", c.cmd, len(res.Logs), len(res.Outputs))
		}
	}
}
