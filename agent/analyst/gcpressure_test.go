package analyst

import "testing"

func TestGCPressureLines(t *testing.T) {
	testLines(t, gcPressure, []lineCase{
		{`[2027-01-08T10:02:00,000][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][old][82342][69] duration [5.8s], collections [1]/[6.2s], total [5.8s]/[67s], memory [7.8gb]->[7.4gb]/[8gb]`, KindGCPressure},
		{`[2027-01-08T10:02:00,000][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][82342] overhead, spent [5.8s] collecting in the last [6.3s]`, KindGCPressure},
		{`org.elasticsearch.common.breaker.CircuitBreakingException: [parent] Data too large, data for [<http_request>] would be [8165838336/7.6gb], which is larger than the limit of [8160437862/7.5gb]`, KindGCPressure},
		// Milliseconds of GC a second is a healthy JVM; an OutOfMemoryError is a kill.
		{`[2027-01-08T09:40:00,000][INFO ][o.e.m.j.JvmGcMonitorService] [search-es-2] [gc][81022] overhead, spent [212ms] collecting in the last [1s]`, ""},
		{`java.lang.OutOfMemoryError: GC overhead limit exceeded`, KindOOMKilled},
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
