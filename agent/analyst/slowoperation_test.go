package analyst

import (
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
)

func TestLineDuration(t *testing.T) {
	cases := []struct {
		line string
		want float64
		ok   bool
	}{
		{"2026-04-02 10:01:02 INFO Database call completed in 10.01 seconds", 10.01, true},
		{`{"level":"info","msg":"request served","duration=2300ms"}`, 2.3, true},
		{"GET /api/orders took 812 ms", 0.812, true},
		{"batch export finished, elapsed: 2.5 min", 150, true},
		{"retrying in 5 attempts", 0, false},
	}
	for _, c := range cases {
		got, ok := lineDuration(c.line)
		if ok != c.ok || ok && (got < c.want-1e-9 || got > c.want+1e-9) {
			t.Errorf("lineDuration(%q) = %v, %v; want %v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// TestLoggedDurations answers a latency question from the durations its
// log lines report, ignoring the usual pace of a steady template.
func TestLoggedDurations(t *testing.T) {
	t0 := time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC)
	slow := analysis.LogTemplate{Template: "<TS> INFO Database call completed in <NUM> seconds", Example: "2026-04-02 09:41:00 INFO Database call completed in 0.21 seconds",
		Last: "2026-04-02 09:58:00 INFO Database call completed in 10.01 seconds", Incident: 40, FirstIncident: t0.Add(-19 * time.Minute)}
	steady := slow
	steady.Example, steady.Last, steady.Baseline = "2026-04-02 09:41:00 INFO Database call completed in 1.31 seconds", "2026-04-02 09:58:00 INFO Database call completed in 1.42 seconds", 40
	for _, c := range []struct {
		name string
		t    analysis.LogTemplate
		q    string
		want int
	}{
		{"slow calls asked about", slow, "Why are orders slow?", 1},
		{"not a latency question", slow, "Why do orders fail?", 0},
		{"the usual pace", steady, "Why are orders slow?", 0},
	} {
		set := LogSet{Source: "orders-api-1", Subject: "orders-api", Origin: SrcLogs, HasBaseline: true, Templates: []analysis.LogTemplate{c.t}}
		fs := detectLoggedDurations(&Gathered{Logs: []LogSet{set}, Scope: Scope{Message: c.q}}, nil)
		if len(fs) != c.want {
			t.Errorf("%s: %d findings, want %d", c.name, len(fs), c.want)
		}
		if c.want == 1 && (fs[0].fact("max") != "10.01 s" || fs[0].fact("operation") != "Database call") {
			t.Errorf("%s: max %q operation %q", c.name, fs[0].fact("max"), fs[0].fact("operation"))
		}
	}
}
