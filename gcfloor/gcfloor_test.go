package gcfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		live, floor uint64
		base, want  int
	}{
		{"small heap is raised to the floor", 4 * mib, 64 * mib, 100, 1500},
		{"half the floor keeps GOGC", 32 * mib, 64 * mib, 100, 100},
		{"above the floor keeps GOGC", 200 * mib, 64 * mib, 100, 100},
		{"a higher GOGC is kept", 16 * mib, 64 * mib, 400, 400},
		{"a lower GOGC is raised", 16 * mib, 64 * mib, 50, 300},
		{"tiny heap: the runtime's minimum goal is the floor", 1024, 64 * mib, 100, 1600},
		{"nothing live yet", 0, 64 * mib, 100, 1600},
		{"a floor under the runtime's minimum", 1024, 2 * mib, 100, 100},
		{"no floor", 4 * mib, 0, 100, 100},
		{"GOGC off stays off", 4 * mib, 64 * mib, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live, tc.floor, tc.base); got != tc.want {
				t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
			}
		})
	}
}

var sink []byte

// churn allocates n bytes of garbage in 4 KiB pieces and returns the
// number of collections that ran meanwhile.
func churn(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i += 4096 {
		sink = make([]byte, 4096)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// With a 64 MiB floor, allocating 512 MiB of garbage over the test's
// small live heap takes about one collection per 64 MiB instead of one
// every few megabytes, and Stop restores the GOGC percent.
func TestFloorCollectsLessOften(t *testing.T) {
	if base := debug.SetGCPercent(100); base != 100 {
		debug.SetGCPercent(base)
		t.Skipf("GOGC=%d in the environment", base)
	}
	runtime.GC()
	without := churn(512 << 20)

	f := Start(64 << 20)
	if f == nil {
		t.Fatal("Start returned nil with GOGC=100")
	}
	runtime.GC() // the floor adjusts after each collection
	waitFor(t, func() bool { return f.Percent() > 100 })
	with := churn(512 << 20)
	f.Stop()
	t.Logf("collections for 512 MiB of garbage: %d without the floor, %d with it (percent %d)", without, with, f.Percent())
	if with*4 > without || with < 4 {
		t.Errorf("with the floor %d collections, without %d: want at most a quarter, and at least one per 128 MiB (the floor is a floor, not GOGC=off)", with, without)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after Stop the percent is %d, want GOGC's 100", p)
	}
}

// A live heap above half the floor keeps GOGC's percent.
func TestFloorLeavesLargeHeapsAlone(t *testing.T) {
	if base := debug.SetGCPercent(100); base != 100 {
		debug.SetGCPercent(base)
		t.Skipf("GOGC=%d in the environment", base)
	}
	live := make([][]byte, 48)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	f := Start(64 << 20)
	defer f.Stop()
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // the cleanup goroutine runs after the collection
	if p := f.Percent(); p != 100 {
		t.Errorf("percent %d with %d MiB live and a 64 MiB floor, want 100", p, len(live))
	}
	runtime.KeepAlive(live)
}

func TestStartOff(t *testing.T) {
	if f := Start(0); f != nil {
		t.Error("Start(0) started a floor")
	}
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	if f := Start(64 << 20); f != nil {
		f.Stop()
		t.Error("Start with GOGC off started a floor")
	}
	var f *Floor
	f.Stop() // a nil Floor may be stopped
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}
