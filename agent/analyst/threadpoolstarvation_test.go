package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestThreadPoolStarvationLines reads the runtime's word for a starved
// pool as Kestrel and .NET print it.
func TestThreadPoolStarvationLines(t *testing.T) {
	testLines(t, threadPoolStarvation, []lineCase{
		{`As of "03/06/2026 11:02:14 +00:00", the heartbeat has been running for "00:00:01.8123344" which is longer than "00:00:01". This could be caused by thread pool starvation.`, KindThreadPoolStarvation},
		{`warn: Microsoft.AspNetCore.Server.Kestrel[22] Heartbeat took longer than "00:00:01" at "03/06/2026 11:02:14 +00:00". This could be caused by thread pool starvation.`, KindThreadPoolStarvation},
		{`dotnet.thread_pool.thread.count ({thread})  42`, ""},
	})
}

// TestThreadPoolStarvationExplained reads the pool's counters, the
// blocking frame and who blocks from a stack dump, and the threads a grep
// counted in one frame.
func TestThreadPoolStarvationExplained(t *testing.T) {
	at := time.Date(2026, 3, 6, 11, 2, 0, 0, time.UTC)
	cmds := []evidence.CommandOutput{
		{Exec: true, Pod: "quotes-api-7d9c-abcde", Run: "dotnet-counters monitor --process-id 1 --counters System.Runtime", Lines: []string{
			"    dotnet.thread_pool.queue.length ({work_item})     1,512",
			"    dotnet.thread_pool.thread.count ({thread})          140"}},
		{Exec: true, Pod: "quotes-api-7d9c-abcde", Run: "dotnet-stack report --process-id 1 | grep -c '^Thread ('", Lines: []string{"150"}},
		{Exec: true, Pod: "quotes-api-7d9c-abcde", Run: "dotnet-stack report --process-id 1 | grep -c 'RateCardClient.Get'", Lines: []string{"131"}},
		{Exec: true, Pod: "quotes-api-7d9c-abcde", Run: "dotnet-stack report --process-id 1", Lines: []string{
			"Thread (0x1A2):",
			"  System.Private.CoreLib.il!System.Threading.Tasks.Task.SpinThenBlockingWait(int32,value class System.Threading.CancellationToken)",
			"  System.Private.CoreLib.il!System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification(class System.Threading.Tasks.Task)",
			"  Quotes.Api!Quotes.Api.Rates.RateCardClient.Get(class System.String)",
			"  Quotes.Api!Quotes.Api.Rates.RateMiddleware.Invoke(class Microsoft.AspNetCore.Http.HttpContext)"}},
	}
	ev := &Gathered{Commands: cmds}
	found := []Finding{{Kind: KindThreadPoolStarvation, Subject: "quotes-api", Time: at, Weight: 0.7, Facts: map[string]string{"line": "This could be caused by thread pool starvation."}}}
	threadPoolStarvation.detect(ev, found)
	f := found[0]
	h := &Hypothesis{Kind: KindThreadPoolStarvation, Subject: "quotes-api", Onset: at, Primary: []*Finding{&f}}
	wantDescribed(t, h, Scope{}, "thread pool is starved", "Quotes.Api.Rates.RateCardClient.Get", "SpinThenBlockingWait", "1,512 work items", "131 of 150 threads")
	if f.Weight < 0.9 {
		t.Errorf("weight %.2f with the pool's queue and the blocking frame seen", f.Weight)
	}
	// A metric of the queue alone.
	ms := []MetricSet{{Name: "dotnet_thread_pool_queue_length", Series: []evidence.Series{{Labels: evidence.Labels{"pod": "quotes-api-7d9c-abcde", "job": "quotes-api"}, Points: []evidence.Point{{T: at, V: 3}, {T: at.Add(time.Minute), V: 2400}}}}}}
	if q := poolQueueMax(ms, "quotes-api"); !strings.Contains(q, "2400") {
		t.Errorf("poolQueueMax = %q", q)
	}
}
