package analyst

import (
	"testing"

	"github.com/rootcause/rootcause/agent/evidence"
)

// TestGoroutineLeak: a goroutine profile (net/http/pprof's debug=1
// through a port-forward, debug=2 counted with grep -c, or fetched inside
// the pod) with tens of thousands of goroutines, most in one application
// frame, is a leak named with its frame and state; a busy server whose
// goroutines spread over the runtime's frames is not.
func TestGoroutineLeak(t *testing.T) {
	w := testWindow()
	pf := evidence.CommandOutput{Command: "kubectl -n inventory port-forward pod/stock-api-7d5b9c6f84-2xkqp 6060:6060", Run: "kubectl -n inventory port-forward pod/stock-api-7d5b9c6f84-2xkqp 6060:6060"}
	debug1 := func(total, top int, frames ...string) evidence.CommandOutput {
		lines := []string{"goroutine profile: total " + itoa(int64(total)), itoa(int64(top)) + " @ 0x4417ce 0x40bd45 0x40b8f8 0x9c41e5 0x479061"}
		lines = append(lines, frames...)
		lines = append(lines, "", "188 @ 0x4417ce 0x43a357 0x473945", "#	0x473944	internal/poll.runtime_pollWait+0x84		/usr/local/go/src/runtime/netpoll.go:351")
		run := "curl -s 'http://localhost:6060/debug/pprof/goroutine?debug=1' | head -48"
		return evidence.CommandOutput{Command: run, Run: run, Lines: lines}
	}
	grepc := evidence.CommandOutput{Command: "curl -s 'http://localhost:6060/debug/pprof/goroutine?debug=2' | grep -c 'chan send'", Run: "curl -s 'http://localhost:6060/debug/pprof/goroutine?debug=2' | grep -c 'chan send'", Lines: []string{"141911"}}
	inPod := evidence.CommandOutput{Command: "kubectl exec feed-api-0 -- wget -qO- localhost:6060/debug/pprof/goroutine?debug=1", Exec: true, Pod: "feed-api-0", Run: "wget -qO- localhost:6060/debug/pprof/goroutine?debug=1", Lines: []string{
		"goroutine profile: total 48210",
		"47990 @ 0x43e8ce 0x40a6ed 0x40a2d8 0x8a1f25 0x46f201",
		"#	0x40a2d7	runtime.chanrecv1+0x17	/usr/local/go/src/runtime/chan.go:442",
		"#	0x8a1f24	example.com/feed/internal/watch.(*Hub).subscribe.func2+0x64	/app/internal/watch/hub.go:121",
	}}
	cases := []struct {
		name     string
		commands []evidence.CommandOutput
		subject  string
		in       []string
	}{
		{"debug=1 through a port-forward, debug=2 counted", []evidence.CommandOutput{pf, debug1(142318, 141893, "#	0x9c41e4	github.com/northwind/stock-api/internal/reserve.(*Service).queryWarehouses.func1+0xc4	/src/internal/reserve/fanout.go:64"), grepc},
			"stock-api", []string{"141893 of its 142318 goroutines", "[chan send]", "reserve.(*Service).queryWarehouses.func1 (/src/internal/reserve/fanout.go:64)"}},
		{"debug=1 inside the pod, the runtime's receive frame", []evidence.CommandOutput{inPod}, "feed-api", []string{"47990 of its 48210", "[chan receive]", "watch.(*Hub).subscribe.func2"}},
		{"a small profile is no leak", []evidence.CommandOutput{pf, debug1(812, 600, "#	0x9c41e4	github.com/northwind/stock-api/internal/reserve.(*Service).queryWarehouses.func1+0xc4	/src/internal/reserve/fanout.go:64")}, "", nil},
		{"goroutines spread over the runtime's frames", []evidence.CommandOutput{pf, debug1(52000, 9000, "#	0x473944	internal/poll.runtime_pollWait+0x84	/usr/local/go/src/runtime/netpoll.go:351")}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := detectGoroutineLeak(&Gathered{Commands: c.commands, Window: w}, nil)
			f := onlyFinding(t, fs, c.subject)
			if f == nil {
				return
			}
			wantDescribed(t, &Hypothesis{Kind: KindGoroutineLeak, Subject: f.Subject, Primary: []*Finding{f}, Onset: f.Time}, Scope{}, c.in...)
		})
	}
}
