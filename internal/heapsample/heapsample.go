// Package heapsample measures the largest heap in use while code runs, for
// the benchmarks that report memory next to time.
package heapsample

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Peak runs f and returns the largest heap in use (runtime.MemStats
// HeapInuse, in bytes) read every interval while f ran, from its start to
// its end.
func Peak(every time.Duration, f func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}
