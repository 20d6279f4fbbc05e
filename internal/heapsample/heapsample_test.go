package heapsample

import (
	"testing"
	"time"
)

var sink [][]byte

// TestPeak: a heap grown by 64 MiB while f runs is read as a peak of at
// least that much, and a heap freed before f returns still counts.
func TestPeak(t *testing.T) {
	p := Peak(time.Millisecond, func() {
		for range 64 {
			sink = append(sink, make([]byte, 1<<20))
		}
		time.Sleep(20 * time.Millisecond)
		sink = nil
	})
	if p < 64<<20 {
		t.Errorf("peak %d MiB, want at least 64", p>>20)
	}
}
