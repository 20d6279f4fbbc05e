package analyst

import (
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

// TestEventLoopBlocked: a runtime's own word that its event loop was
// blocked (blocked-at's warning as pino JSON and as text, Vert.x's
// blocked-thread checker, asyncio's slow callback in debug mode) is
// classified as such before the CPU's lag lines, with the longest block
// and the application frame the operation started in; a lag gauge of
// seconds alone finds it too, and a loop lagging milliseconds does not.
func TestEventLoopBlocked(t *testing.T) {
	w := testWindow()
	cases := []struct {
		name, line string
		blocked    string
		operation  string
	}{
		{"blocked-at through pino", `{"level":40,"time":1795611472164,"pid":1,"hostname":"bff-6b7d9c8f5-2fkq8","blockedMs":7009,"stack":["at new Timeout (node:internal/timers:186:17)","at setInterval (node:timers:211:20)","at PriceSnapshot.start (/app/dist/pricing/snapshot.js:24:22)","at bootstrap (/app/dist/server.js:61:19)"],"msg":"Blocked for 7009ms, operation started here:"}`,
			"7.01 s", "PriceSnapshot.start (/app/dist/pricing/snapshot.js)"},
		{"blocked-at as text", `2026-11-25T12:57:52.164Z WARN Blocked for 2314.55ms, operation started here: at Object.renderReport (/srv/app/lib/reports.js:88:11) at Layer.handle (/srv/app/node_modules/express/lib/router/layer.js:95:5)`,
			"2.31 s", "Object.renderReport (/srv/app/lib/reports.js)"},
		{"Vert.x blocked thread checker", `Nov 25, 2026 12:57:52 PM io.vertx.core.impl.BlockedThreadChecker WARNING: Thread Thread[vert.x-eventloop-thread-3,5,main] has been blocked for 2767 ms, time limit is 2000 ms`,
			"2.77 s", ""},
		{"asyncio debug slow callback", `2026-11-25 12:57:52,164 WARNING asyncio Executing <Task pending name='Task-812' coro=<PriceCache.refresh() running at /app/prices/cache.py:41> wait_for=<Future pending cb=[Task.task_wakeup()]>> took 3.412 seconds`,
			"3.41 s", ""},
	}
	for _, c := range cases {
		if k, _ := ClassifyLine(c.line); k != KindEventLoopBlocked {
			t.Errorf("%s: classified %q, want %s", c.name, k, KindEventLoopBlocked)
			continue
		}
		f := Finding{Kind: KindEventLoopBlocked, Subject: "bff", Facts: map[string]string{"line": c.line}}
		ev := &Gathered{Window: w, Logs: []LogSet{{Source: "bff-6b7d9c8f5-2fkq8", Subject: "bff", Origin: SrcLogs, Templates: []analysis.LogTemplate{tmpl(c.line, 3, w.Start, w.End)}}}}
		fs := []Finding{f}
		detectEventLoopBlocked(ev, fs)
		if got := fs[0].fact("blocked"); got != c.blocked {
			t.Errorf("%s: blocked %q, want %q", c.name, got, c.blocked)
		}
		if got := fs[0].fact("operation"); got != c.operation {
			t.Errorf("%s: operation %q, want %q", c.name, got, c.operation)
		}
		h := &Hypothesis{Kind: KindEventLoopBlocked, Subject: "bff", Primary: []*Finding{&fs[0]}}
		if d := eventLoopBlocked.describe(h, Scope{}); !strings.Contains(d, "event loop is blocked by synchronous work for up to "+c.blocked) {
			t.Errorf("%s: description %q", c.name, d)
		}
	}
	for _, l := range []string{
		`{"level":30,"msg":"event loop delay p99 3.2ms"}`,
		`INFO worker blocked for user 42: rate limit`,
	} {
		if k, _ := ClassifyLine(l); k == KindEventLoopBlocked {
			t.Errorf("%q classified as a blocked event loop", l)
		}
	}
	// prom-client's lag gauge alone.
	onset := w.Start.Add(20 * time.Minute)
	lag := func(peak float64) func(time.Time) float64 {
		return func(at time.Time) float64 {
			if at.After(onset) && at.Minute()%5 == 0 {
				return peak
			}
			return 0.012
		}
	}
	for _, c := range []struct {
		peak float64
		want bool
	}{{6.55, true}, {0.4, false}} {
		ms := []MetricSet{{Name: "nodejs_eventloop_lag_max_seconds", Series: []evidence.Series{wseries(w, evidence.Labels{"namespace": "web", "pod": "bff-6b7d9c8f5-2fkq8", "job": "bff"}, lag(c.peak))}}}
		fs := detectEventLoopBlocked(&Gathered{Window: w, Metrics: ms}, nil)
		if got := len(fs) == 1 && fs[0].Subject == "bff" && fs[0].fact("blocked") == formatValue(c.peak, "s"); got != c.want {
			t.Errorf("lag gauge at %.2f s: findings %+v, want %v", c.peak, fs, c.want)
		}
	}
}
