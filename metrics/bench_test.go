package metrics

import (
	"testing"
	"time"
)

// BenchmarkObserveHTTP is the metrics work of one answered API request
// (the request counter and the latency histogram).
//
//	go test ./metrics -run '^$' -bench ObserveHTTP -count 3
func BenchmarkObserveHTTP(b *testing.B) {
	m := New("dev")
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveHTTP("/api/v1/auth/me", "GET", 200, 123*time.Microsecond)
	}
}
