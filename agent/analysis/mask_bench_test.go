package analysis

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTokens tokenises and masks lines of a service's log (the
// shapes of the localization benchmark's logs): the cost per line that
// dominates template mining.
//
//	go test ./agent/analysis -run '^$' -bench Tokens -count 3
func BenchmarkTokens(b *testing.B) {
	lines := benchLines()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range lines {
			n += len(Tokens(l))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// BenchmarkMinerAdd counts the same lines, timestamped over a 40-minute
// window, with a Miner: the per-line cost of template mining (tokens,
// form lookup, counts).
//
//	go test ./agent/analysis -run '^$' -bench MinerAdd -count 3
func BenchmarkMinerAdd(b *testing.B) {
	lines := benchLines()
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(40*time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		for i, l := range lines {
			m.Add(t0.Add(time.Duration(i)*400*time.Millisecond), "svc", l)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// benchLines are lines of a service's log in the shapes of the
// localization benchmark's logs, with the timestamp they begin with.
func benchLines() []string {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	lines := make([]string, 6000)
	for i := range lines {
		switch i % 6 {
		case 0:
			lines[i] = fmt.Sprintf("INFO handled request GET /api/v1/items/%d status=200 duration=%dms user=%x", i%9973, i%250, i*7919)
		case 1:
			lines[i] = fmt.Sprintf("INFO cache hit key=item:%d ratio=0.%02d", i%5003, i%100)
		case 2:
			lines[i] = fmt.Sprintf("DEBUG db query took %d ms rows=%d table=items_%d", i%40, i%17, i%50)
		case 3:
			lines[i] = fmt.Sprintf("INFO published event order-%d to topic orders partition %d offset %d", i, i%12, i*3)
		case 4:
			lines[i] = fmt.Sprintf("WARN slow call to downstream svc-%02d took %d ms (budget 200 ms)", i%50, 200+i%300)
		default:
			lines[i] = fmt.Sprintf("INFO session %x refreshed for client 10.0.%d.%d:%d", i*31337, i%250, i%200, 1024+i%5000)
		}
		if i%6 == 0 || i%6 == 2 || i%6 == 4 {
			lines[i] += fmt.Sprintf(" trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=%016x", i*7)
		}
		lines[i] = t0.Add(time.Duration(i)*400*time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00") + " " + lines[i]
	}
	return lines
}

// TestMinerAddRepeatedFormAllocatesNothing: a line whose masked form was
// seen before is counted without copying its tokens or building a key
// string (the mechanism behind the localization benchmark's figures).
// Tokens that masking rebuilds ("12 ms" as "<NUM> ms", "took=12ms" as
// "took=<NUM>") still cost one string each.
func TestMinerAddRepeatedFormAllocatesNothing(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	m := NewMiner(t0, t0.Add(30*time.Minute), t0.Add(40*time.Minute))
	lines := []string{"GET /health 200 from 10.0.0.7", "GET /health 404 from 10.0.0.9", "cache hit ratio 0.93 for 10.0.0.7 in 4ms"}
	for _, l := range lines {
		m.Add(t0.Add(time.Minute), "p", l)
	}
	for _, l := range lines {
		if n := testing.AllocsPerRun(100, func() { m.Add(t0.Add(time.Minute), "p", l) }); n != 0 {
			t.Errorf("Add(%q) of a known form: %.1f allocations, want 0", l, n)
		}
	}
}
