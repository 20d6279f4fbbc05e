package analysis

import (
	"fmt"
	"testing"
)

// BenchmarkTokens tokenises and masks lines of a service's log (the
// shapes of the localization benchmark's logs): the cost per line that
// dominates template mining.
//
//	go test ./agent/analysis -run '^$' -bench Tokens -count 3
func BenchmarkTokens(b *testing.B) {
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
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, l := range lines {
			n += len(Tokens(l))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}
