package analyst

import "testing"

func TestGCPressureLines(t *testing.T) {
	testLines(t, gcPressure, []lineCase{
		{`[2027-01-08T10:02:00,000][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][old][82342][69] duration [5.8s], collections [1]/[6.2s], total [5.8s]/[67s], memory [7.8gb]->[7.4gb]/[8gb]`, KindGCPressure},
		{`[2027-01-08T10:02:00,000][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][82342] overhead, spent [5.8s] collecting in the last [6.3s]`, KindGCPressure},
		{`org.elasticsearch.common.breaker.CircuitBreakingException: [parent] Data too large, data for [<http_request>] would be [8165838336/7.6gb], which is larger than the limit of [8160437862/7.5gb]`, KindGCPressure},
		// Milliseconds of GC a second is a healthy JVM; an OutOfMemoryError is the heap exhausted.
		{`[2027-01-08T09:40:00,000][INFO ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][81022] overhead, spent [212ms] collecting in the last [1s]`, ""},
		{`java.lang.OutOfMemoryError: GC overhead limit exceeded`, KindHeapExhausted},
		// Unified JVM logging (-Xlog:gc): full collections G1 falls back to
		// with the heap exhausted; young pauses and an explicit System.gc()
		// are routine.
		{`2026-11-06T12:26:35.910023689Z [95.910s][info][gc] GC(58) Pause Full (G1 Compaction Pause) 1019M->947M(1024M) 1079.526ms`, KindGCPressure},
		{`[2026-11-06T12:40:01.120+0000][info][gc] GC(112) To-space exhausted`, KindGCPressure},
		{`[31.554s][info][gc] GC(7) Pause Full (Ergonomics) 1530M->1498M(1536M) 2840.113ms`, KindGCPressure},
		{`2026-11-06T12:26:14.834206343Z [74.834s][info][gc] GC(41) Pause Young (Mixed) (G1 Evacuation Pause) 996M->940M(1024M) 212.147ms`, ""},
		{`[12.001s][info][gc] GC(3) Pause Full (System.gc()) 210M->80M(1024M) 95.2ms`, ""},
	})
}

// TestGCPressureExplainsSlowCallers checks that a caller's slow calls
// naming the JVM's node are the GC pauses' consequence, and that the
// caller's log durations after "slow ...:" are read.
func TestGCPressureExplainsSlowCallers(t *testing.T) {
	line := `2027-01-08T10:02:05.000Z WARN  c.b.search.EsClient - slow search on index products-v7: 5225ms (node search-es-2)`
	if d, ok := lineDuration(line); !ok || d < 5 || d > 6 {
		t.Fatalf("lineDuration = %v, %v; want 5.225 s", d, ok)
	}
	h := &Hypothesis{Kind: KindGCPressure, Subject: "search-es"}
	slow := &Finding{Kind: KindSlowOperation, Subject: "catalog-search", Facts: map[string]string{"line": line}}
	other := &Finding{Kind: KindSlowOperation, Subject: "catalog-search", Facts: map[string]string{"line": `slow render: 900ms (template product.html)`}}
	if !gcPressure.related(h, slow) || gcPressure.related(h, other) {
		t.Errorf("related: naming the node %v, not naming it %v; want true, false", gcPressure.related(h, slow), gcPressure.related(h, other))
	}
}

// TestGCLogLevelless checks that unified JVM logging's info level, which
// every collection carries, is not read as a routine line.
func TestGCLogLevelless(t *testing.T) {
	cases := []struct {
		line string
		want bool
	}{
		{`2026-11-06T12:26:35.910023689Z [95.910s][info][gc] GC(58) Pause Full (G1 Compaction Pause) 1019M->947M(1024M) 1079.526ms`, true},
		{`[2026-11-06T12:40:01.120+0000][info][gc,heap] GC(112) Eden regions: 0->0(51)`, true},
		{`2026-11-06T12:25:09.500Z  INFO 1 --- [recommendations-service] [main] c.n.recs.cache.EmbeddingCache : warming embedding cache`, false},
		{`[2027-01-08T09:40:00,000][INFO ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][81022] overhead, spent [212ms] collecting in the last [1s]`, false},
	}
	for _, c := range cases {
		if got := levelless(c.line); got != c.want {
			t.Errorf("levelless(%.60q) = %v, want %v", c.line, got, c.want)
		}
	}
	h := &Hypothesis{Kind: KindGCPressure, Subject: "recommendations-service"}
	starved := &Finding{Kind: KindCPUThrottling, Subject: "recommendations-service", Source: SrcLogs}
	elsewhere := &Finding{Kind: KindCPUThrottling, Subject: "search-api", Source: SrcLogs}
	if !gcPressure.related(h, starved) || gcPressure.related(h, elsewhere) {
		t.Errorf("related: its own starvation warning %v, another's %v; want true, false", gcPressure.related(h, starved), gcPressure.related(h, elsewhere))
	}
}
