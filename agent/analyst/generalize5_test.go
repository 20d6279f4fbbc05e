package analyst

import "testing"

// TestClassifyLineGeneralize5 covers the log rules for file-descriptor
// exhaustion, clock skew, worker-pool saturation and slow queries.
func TestClassifyLineGeneralize5(t *testing.T) {
	cases := []struct {
		line string
		want Kind
	}{
		{"2026/04/18 02:31:06 http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 1s", KindFDExhaustion},
		{`{"level":"error","err":"dial tcp 52.1.2.3:443: socket: too many open files"}`, KindFDExhaustion},
		{"Error: EMFILE, open '/data/x'", KindFDExhaustion},
		{`{"level":"warn","msg":"token validation failed","err":"Token used before issued"}`, KindClockSkew},
		{"jwt not yet valid", KindClockSkew},
		{"chronyd[812]: System clock wrong by 96.214 seconds", KindClockSkew},
		{"chronyd[812]: Can't synchronise: no selectable sources (2 unreachable)", KindClockSkew},
		{"[2026-04-20 18:51:02 +0000] [1] [CRITICAL] WORKER TIMEOUT (pid:42)", KindWorkerPool},
		{"WARNING: [pool www] server reached pm.max_children setting (16), consider raising it", KindWorkerPool},
		{"LOG:  duration: 4800.123 ms  statement: SELECT * FROM order_items WHERE sku_id = 7", KindSlowQuery},
		{`{"level":"error","err":"canceling statement due to statement timeout"}`, KindSlowQuery},
		{`{"level":"warn","msg":"slow query: SELECT products by category took 1.21s (threshold 1s)"}`, ""},
		{"LOG:  duration: 12.5 ms  statement: SELECT 1", ""},
	}
	for _, c := range cases {
		got, _ := ClassifyLine(c.line)
		if c.want == "" {
			if got == KindSlowQuery || got == KindFDExhaustion || got == KindClockSkew || got == KindWorkerPool {
				t.Errorf("ClassifyLine(%q) = %s, want none of the new kinds", c.line, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("ClassifyLine(%q) = %q, want %q", c.line, got, c.want)
		}
	}
}
