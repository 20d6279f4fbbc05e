// Package gcfloor keeps the Go garbage collector from collecting a small
// heap over and over: with a floor set, the heap may grow to the floor
// before a collection starts, whatever GOGC alone would allow; above it the
// collector paces as GOGC says.
//
// The runtime's goal for the next collection is the live heap times
// 1 + GOGC/100. A server whose live heap is a few megabytes therefore
// collects every few megabytes it allocates, and each collection marks the
// whole live heap again: on `rootcause serve` that was about 3 µs of CPU
// per API request, a tenth of an authenticated request's cost
// (docs/performance.md). After every collection the floor raises the
// collector's percent so that the goal is at least the floor:
//
//	percent = max(GOGC, 100 × (floor − live) / live)
//
// A live heap of half the floor or more gets GOGC unchanged, so the floor
// costs at most the floor in memory (a heap of up to floor bytes between
// collections) and nothing once the program holds that much. A memory limit
// (GOMEMLIMIT) still applies: the runtime collects before exceeding it
// whatever the percent. GOGC=off turns the floor off.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is the runtime's smallest collection goal at GOGC=100 (4
// MiB), which it scales with the percent: at 1600 % no collection starts
// below 64 MiB however small the live heap. The floor's percent is capped
// so that this minimum stays at or under the floor.
const heapMinimum = 4 << 20

// Percent returns the GC percent that makes the goal after a collection
// that left live bytes at least floor bytes: base (the GOGC setting) or
// more, and no more than keeps the runtime's scaled minimum goal at the
// floor.
func Percent(live, floor uint64, base int) int {
	if base < 0 || floor == 0 {
		return base
	}
	if live == 0 {
		live = 1
	}
	if live >= floor {
		return base
	}
	p := (floor - live) * 100 / live
	p = min(p, floor*100/heapMinimum)
	return max(base, int(p))
}

// Floor is a running floor; Stop ends it.
type Floor struct {
	floor uint64
	base  int

	mu      sync.Mutex
	stopped bool
	current int
	sample  []metrics.Sample
}

// Start sets a floor of floor bytes under the heap's collection goal and
// keeps it after every collection until Stop. It returns nil, and changes
// nothing, when floor is 0 or GOGC is off.
func Start(floor uint64) *Floor {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor == 0 || base < 0 {
		return nil
	}
	f := &Floor{floor: floor, base: base, current: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	f.adjust()
	f.arm()
	return f
}

// sentinel is garbage from birth: the cleanup attached to it runs after the
// collection that finds it unreachable, which is how Floor learns that a
// collection ended.
type sentinel struct {
	_ *int // a pointer field keeps it out of the tiny allocator, whose blocks are freed together
	_ [8]byte
}

func (f *Floor) arm() {
	runtime.AddCleanup(&sentinel{}, func(f *Floor) {
		if f.adjust() {
			f.arm()
		}
	}, f)
}

// adjust sets the percent for the live heap the last collection left and
// reports whether the floor is still running.
func (f *Floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.sample)
	var live uint64
	if f.sample[0].Value.Kind() == metrics.KindUint64 {
		live = f.sample[0].Value.Uint64()
	}
	p := Percent(live, f.floor, f.base)
	// Small moves are not worth a call: the goal shifts by under 5 %.
	if d := p - f.current; d*20 > f.current || -d*20 > f.current || (p == f.base) != (f.current == f.base) {
		debug.SetGCPercent(p)
		f.current = p
	}
	return true
}

// Stop ends the floor and restores the GOGC percent. It may be called on a
// nil Floor.
func (f *Floor) Stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(f.base)
	}
}

// Percent returns the GC percent the floor last set.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current
}
