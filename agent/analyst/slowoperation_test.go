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
		// A JVM thread dump's header: the thread's age, not a duration.
		{`"HikariPool-1 housekeeper" #40 [77] daemon prio=5 os_prio=0 cpu=88.12ms elapsed=2013.80s tid=0x00007f3c2d1b4000 nid=77 waiting on condition  [0x00007f3bf4fff000]`, 0, false},
		{`2026-08-19T15:03:31.664Z "http-nio-8080-exec-7" #52 daemon prio=5 os_prio=0 cpu=1842.11ms elapsed=2011.55s tid=0x00007f3c2c0a1000 nid=88 waiting for monitor entry`, 0, false},
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

// TestLoggedDurationsOfTimingOut: a service whose calls time out has the
// slow call its log reports read even when the question does not ask about
// latency; its own timeout lines are not that call.
func TestLoggedDurationsOfTimingOut(t *testing.T) {
	t0 := time.Date(2026, 4, 27, 21, 30, 0, 0, time.UTC)
	timedOut := analysis.LogTemplate{Example: "2026-04-27T21:32:51.931Z 97d9154a-4b3c-40de-959c-1f388beb0d89 Task timed out after 30.03 seconds", Incident: 23, FirstIncident: t0}
	slowCall := analysis.LogTemplate{Example: "2026-04-27T21:33:22.750Z\t1a7d13a7-41ca-4ec8-b434-6138a2670e0b\tWARN\tfulfillment API slow: 8158ms (p50 budget 500ms)", Incident: 6, FirstIncident: t0.Add(3 * time.Minute)}
	access := analysis.LogTemplate{Example: "2026-04-27T20:55:00.152Z\t2fdaccc3-c713-4eb0-8cc0-bb3a870e2a37\tINFO\tPOST https://fulfillment.internal.acme.io/v1/shipments order_id=27968184 status=201 took 152ms", Incident: 900, Baseline: 570}
	q := "Order events are backing up in SQS. Lambda order-events-consumer is erroring. Why?"
	for _, c := range []struct {
		name string
		ts   []analysis.LogTemplate
		want string // the line read, "" for none
	}{
		{"times out and logs a slow call", []analysis.LogTemplate{access, timedOut, slowCall}, slowCall.Example},
		{"times out, no slow call logged", []analysis.LogTemplate{access, timedOut}, ""},
		{"slow call, no timeouts", []analysis.LogTemplate{access, slowCall}, ""},
	} {
		set := LogSet{Source: "/aws/lambda/order-events-consumer", Subject: "order-events-consumer", Origin: SrcCloudWatch, HasBaseline: true, Templates: c.ts}
		fs := detectLoggedDurations(&Gathered{Logs: []LogSet{set}, Scope: Scope{Message: q}}, nil)
		got := ""
		if len(fs) == 1 {
			got = fs[0].fact("line")
		}
		if len(fs) > 1 || got != c.want {
			t.Errorf("%s: findings %+v, want line %q", c.name, fs, c.want)
		}
	}
	if d, ok := lineDuration(slowCall.Example); !ok || d != 8.158 {
		t.Errorf("lineDuration(slow call) = %v, %v", d, ok)
	}
}
