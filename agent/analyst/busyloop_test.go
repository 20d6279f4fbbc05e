package analyst

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Profiles as the profilers print them: a spinning loop in Go (a select
// with an empty default), in a native service under perf, in Python under
// py-spy and in a JVM under async-profiler; and profiles of real work,
// which are no busy loop.
func TestBusyLoop(t *testing.T) {
	goSpin := []string{
		"File: feed-publisher",
		"Type: cpu",
		"Duration: 10.13s, Total samples = 19.86s (196.05%)",
		"      flat  flat%   sum%        cum   cum%",
		"     7.92s 39.88% 39.88%     16.83s 84.74%  git.internal/content/feed-publisher/internal/outbox.(*Poller).run",
		"     5.11s 25.73% 65.61%      5.11s 25.73%  runtime.selectnbrecv",
		"     3.80s 19.13% 84.74%      3.80s 19.13%  runtime.chanrecv",
		"     0.61s  3.07% 93.91%      0.61s  3.07%  runtime.procyield",
		"     0.16s  0.81% 97.73%      0.21s  1.06%  github.com/twmb/franz-go/pkg/kgo.(*Client).Produce",
	}
	goWork := []string{
		"Type: cpu",
		"      flat  flat%   sum%        cum   cum%",
		"     4.10s 41.00% 41.00%      6.20s 62.00%  encoding/json.(*encodeState).string",
		"     2.00s 20.00% 61.00%      2.00s 20.00%  runtime.mallocgc",
		"     1.50s 15.00% 76.00%      9.50s 95.00%  example.com/api/render.(*Page).Write",
		"     0.40s  4.00% 80.00%      0.40s  4.00%  runtime.memmove",
	}
	perfSpin := []string{
		"# Samples: 48K of event 'cpu-clock:pppH'",
		"# Overhead  Command          Shared Object        Symbol",
		"# ........  ...............  ...................  ..............................",
		"    46.12%  ingest-worker    libc.so.6            [.] __sched_yield",
		"    31.40%  ingest-worker    ingest-worker        [.] RingBuffer::pop_wait",
		"     9.02%  ingest-worker    [kernel.kallsyms]    [k] do_sched_yield",
		"     2.11%  ingest-worker    ingest-worker        [.] Decoder::next",
	}
	pySpin := []string{
		"Collecting samples from 'python worker.py' (python v3.12.3)",
		"  %Own   %Total  OwnTime  TotalTime  Function (filename)",
		" 58.00%  58.00%   11.60s    11.60s   get_nowait (queue.py)",
		" 30.00%  92.00%    6.00s    18.40s   drain_forever (worker.py)",
		"  4.00%   4.00%    0.80s     0.80s   _qsize (queue.py)",
	}
	// A Python queue's non-blocking get reads as a try-receive.
	pySpin[2] = strings.Replace(pySpin[2], "get_nowait", "poll_nowait", 1)
	javaSpin := []string{
		"          ns  percent  samples  top",
		"  ----------  -------  -------  ---",
		"  8123456789   52.10%      812  java.lang.Thread.onSpinWait",
		"  4123456789   26.44%      412  com.example.relay.Dispatcher.awaitSlot",
		"   923456789    5.92%       92  java.util.concurrent.ConcurrentLinkedQueue.poll",
	}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "feed-publisher-7c9f5d8b6-gq2kt", Namespace: "content"}}
	cases := []struct {
		name     string
		cmds     []evidence.CommandOutput
		service  string
		subject  string // "" for none
		describe []string
	}{
		{"go tool pprof -top after a port-forward: select with an empty default", []evidence.CommandOutput{
			{Command: "kubectl port-forward -n content feed-publisher-7c9f5d8b6-gq2kt 6060:6060 &", Lines: []string{"Forwarding from 127.0.0.1:6060 -> 6060"}},
			{Command: "go tool pprof -top -seconds 10 http://127.0.0.1:6060/debug/pprof/profile", Lines: goSpin},
		}, "feed-publisher", "feed-publisher", []string{"busy loop", "runtime.selectnbrecv", "empty default", "outbox.(*Poller).run", "85% of the CPU"}},
		{"perf report in the pod: a yield loop", []evidence.CommandOutput{
			{Command: "kubectl exec -n ingest ingest-worker-5d8f7c6b9-x2k4q -- perf report --stdio", Exec: true, Pod: "ingest-worker-5d8f7c6b9-x2k4q", Lines: perfSpin},
		}, "ingest-worker", "ingest-worker", []string{"busy loop", "__sched_yield", "spin-wait", "RingBuffer::pop_wait"}},
		{"py-spy top: a non-blocking get polled", []evidence.CommandOutput{
			{Command: "kubectl exec -n jobs queue-drainer-6c5d4b3a2-pq9rs -- py-spy top --pid 1 --nonblocking", Exec: true, Pod: "queue-drainer-6c5d4b3a2-pq9rs", Lines: pySpin},
		}, "queue-drainer", "queue-drainer", []string{"busy loop", "poll_nowait", "try-receive", "drain_forever"}},
		{"async-profiler: onSpinWait", []evidence.CommandOutput{
			{Command: "kubectl exec -n relay relay-7f6e5d4c3-abcde -- /opt/async-profiler/profiler.sh -d 30 -o flat 1", Exec: true, Pod: "relay-7f6e5d4c3-abcde", Lines: javaSpin},
		}, "relay", "relay", []string{"Thread.onSpinWait", "Dispatcher.awaitSlot"}},
		{"a profile of real work is no busy loop", []evidence.CommandOutput{
			{Command: "go tool pprof -top http://127.0.0.1:6060/debug/pprof/profile", Lines: goWork},
		}, "feed-publisher", "", nil},
		{"a table that is not a profile", []evidence.CommandOutput{
			{Command: "kubectl top pod", Lines: []string{"NAME  CPU(cores)  MEMORY(bytes)", "feed-publisher-7c9f5d8b6-gq2kt  1998m  41Mi"}},
		}, "feed-publisher", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Commands: c.cmds, Window: win, Scope: Scope{Service: c.service}}
			ev.K8s.Pods = []corev1.Pod{pod}
			f := onlyFinding(t, detectBusyLoop(ev, nil), c.subject)
			if f == nil {
				return
			}
			if f.fact("why") == "" {
				t.Errorf("no why: %+v", f.Facts)
			}
			h := &Hypothesis{Kind: KindBusyLoop, Subject: f.Subject, Primary: []*Finding{f}}
			wantDescribed(t, h, Scope{}, c.describe...)
		})
	}
}

// The limit raised after the loop began only raised its usage: said, and
// the raise is never the loop's trigger.
func TestBusyLoopLimitRaised(t *testing.T) {
	changes := []evidence.Change{
		{Timestamp: win.Start.Add(-20 * win.Start.Sub(win.BaselineStart) / 60), Service: "feed-publisher", Kind: "deploy", Description: "feed-publisher 1.14.0: outbox poller refactor"},
		{Timestamp: win.Start.Add(10 * 60e9), Service: "feed-publisher", Kind: "config", Description: "feed-publisher values: resources.limits.cpu 1 -> 2 (CPUThrottlingHigh firing)"},
		{Timestamp: win.Start.Add(12 * 60e9), Service: "feed-publisher", Kind: "config", Description: "feed-publisher values: resources.requests.cpu 2 -> 1"},
	}
	r := limitRaised(changes, "feed-publisher", win.Start)
	if r == nil || r.from != "1" || r.to != "2" {
		t.Fatalf("limitRaised = %+v, want 1 -> 2", r)
	}
	if r := limitRaised(changes[2:], "feed-publisher", win.Start); r != nil {
		t.Errorf("a request cut read as a limit raised: %+v", r)
	}
	h := &Hypothesis{Kind: KindBusyLoop, Subject: "feed-publisher", Primary: []*Finding{{Kind: KindBusyLoop, Subject: "feed-publisher"}}}
	deploy := &Finding{Kind: KindDeploy, Subject: "feed-publisher"}
	raise := &Finding{Kind: KindConfigChange, Subject: "feed-publisher"}
	if !busyLoop.fitsChange(h, deploy) || busyLoop.fitsChange(h, raise) {
		t.Error("only a deploy of the service triggers a busy loop")
	}
}
