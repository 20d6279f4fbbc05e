package analyst

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
)

func TestCallTimes(t *testing.T) {
	cases := []struct {
		name, line string
		want       map[string]float64
	}{
		{"per-dependency milliseconds",
			`2026-11-23T12:56:15.407Z INFO  quote-service request_id=f341e07a method=POST path=/v1/quotes status=200 total_ms=2349 pricing_ms=15 db_ms=14 fx_rates_ms=43 tax_engine_ms=2272 lines=7`,
			map[string]float64{"": 2.349, "pricing": 0.015, "db": 0.014, "fx_rates": 0.043, "tax_engine": 2.272}},
		{"units in the values",
			`level=info msg="quote done" db=12ms pricing=2300ms total=2.4s`,
			map[string]float64{"db": 0.012, "pricing": 2.3, "": 2.4}},
		{"nginx request and upstream times",
			`2026-11-23T12:22:52.096Z 10.8.0.234 "POST /v1/quotes HTTP/1.1" 200 2478 rt=0.085 urt=0.083 upstream=quoting-quote-service-8080`,
			map[string]float64{"": 0.085, "upstream": 0.083}},
		{"upstream_response_time is the upstream's",
			`request_time=1.204 upstream_response_time=1.198 status=200`,
			map[string]float64{"": 1.204, "upstream": 1.198}},
		{"one system's took and round trip are one call",
			`time=2026-06-02T10:39:57.764Z level=info msg="search" version=4.12.0 q="coffee grinder" hits=1056 es_took_ms=4180 es_roundtrip_ms=4193 rank_ms=5 total_ms=4205`,
			map[string]float64{"es": 4.193, "rank": 0.005, "": 4.205}},
		{"JSON request log",
			`{"ts":"2026-03-01T10:00:00Z","level":"info","msg":"done","duration_ms":812,"db_ms":700,"cache_ms":3}`,
			map[string]float64{"": 0.812, "db": 0.7, "cache": 0.003}},
		{"the whole request under a dotted name",
			`severity=info http.resp.took_ms=6990 http.resp.status=200`,
			map[string]float64{"": 6.99}},
		{"a difference between clocks is no call",
			`2026-11-06T12:26:21.208Z  WARN 1 --- [recommendations-service] [l-1 housekeeper] com.zaxxer.hikari.pool.HikariPool        : HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta=31.7s).`,
			map[string]float64{}},
		{"the span a stats line sums over is no call",
			`time=2026-03-04T10:31:00.003Z level=INFO msg="cache stats" window=60s lookups=6817 hits=6569 misses=248 db_queries=248`,
			map[string]float64{}},
		{"nor a statistic over many requests",
			`time=2026-03-04T10:31:00.003Z level=INFO msg="cache stats" db_queries=2899 db_p99_ms=450 upstream_avg_ms=31 render.max_ms=90`,
			map[string]float64{}},
		{"nor a reporting period",
			`{"level":"info","msg":"pool stats","period":"30s","borrowed":412,"created":3}`,
			map[string]float64{}},
		{"dates, counts and statuses are no durations",
			`2023-01-29T13:30:51.005Z INFO TraceID: fc53 [queryForTravel] Travel(departureTime=2023-01-29 10:00:00, seats=150) lines=9 status=200 uptime=3600`,
			map[string]float64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := callTimes(c.line)
			if len(got) != len(c.want) {
				t.Fatalf("callTimes = %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-9 {
					t.Errorf("callTimes[%q] = %v, want %v (all: %v)", k, g, v, got)
				}
			}
		})
	}
}

// quoteLines is a request log with per-call times: every call steady until
// slowAt, then slowCall's time multiplied by factor.
func quoteLines(slowAt time.Time, slowCall string, factor float64) []evidence.LogLine {
	var out []evidence.LogLine
	calls := []struct {
		name string
		ms   float64
	}{{"pricing", 14}, {"db", 9}, {"fx_rates", 28}, {"tax_engine", 50}}
	for i := 0; i < 60; i++ {
		at := win.BaselineStart.Add(time.Duration(i) * 2 * time.Minute)
		total := 6.0
		var parts []string
		for _, c := range calls {
			v := c.ms + float64(i%5)
			if c.name == slowCall && !at.Before(slowAt) {
				v *= factor
			}
			total += v
			parts = append(parts, fmt.Sprintf("%s_ms=%.0f", c.name, v))
		}
		out = append(out, evidence.LogLine{Time: at, Text: fmt.Sprintf("%s INFO  quote-service request_id=%08x method=POST path=/v1/quotes status=200 total_ms=%.0f %s lines=%d",
			at.Format(time.RFC3339Nano), i*7919, total, strings.Join(parts, " "), i%9+1)})
	}
	return out
}

func TestDetectTimeBreakdown(t *testing.T) {
	ask := "Brokers say getting a quote got really slow after lunch. Nothing is erroring. Where is the time going in quote-service?"
	changes := []evidence.Change{{Service: "tax-engine", Kind: "deploy", Timestamp: win.BaselineStart.Add(70 * time.Minute)}}
	cases := []struct {
		name    string
		ask     string
		lines   []evidence.LogLine
		subject string // "" for no finding
		weight  float64
		want    []string
	}{
		{"one dependency's calls took the time, before the window", ask, quoteLines(win.BaselineStart.Add(80*time.Minute), "tax_engine", 40),
			"tax-engine", 0.9, []string{"goes to its calls to tax-engine", "tax_engine takes", "up from", "the other calls are unchanged (db", "fx_rates", "pricing"}},
		{"slow within the window", ask, quoteLines(win.Start.Add(20*time.Minute), "db", 120),
			"db", 0.9, []string{"goes to its calls to db", "up from"}},
		{"no call grew: where the time always went", ask, quoteLines(win.End.Add(time.Hour), "tax_engine", 40),
			"", 0, nil},
		{"not a latency question", "Is anything failing in quote-service?", quoteLines(win.BaselineStart.Add(80*time.Minute), "tax_engine", 40),
			"", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := LogSet{Source: "logs/quote-service.log", Subject: "quote-service", Origin: SrcLogs, Host: true, Lines: c.lines}
			fs := detectTimeBreakdown(&Gathered{Logs: []LogSet{set}, Changes: changes, Window: win, Scope: Scope{Message: c.ask, Service: "quote-service"}}, nil)
			f, ok := oneFinding(t, fs, c.subject != "")
			if !ok {
				return
			}
			if f.Subject != c.subject || f.Weight < c.weight || f.fact("caller") != "quote-service" {
				t.Errorf("subject %q weight %.2f caller %q; want %q %.2f", f.Subject, f.Weight, f.fact("caller"), c.subject, c.weight)
			}
			d := slowCall.describe(&Hypothesis{Kind: KindSlowCall, Subject: f.Subject, Primary: []*Finding{&f}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
}

func TestCallSubject(t *testing.T) {
	ev := &Gathered{Changes: []evidence.Change{{Service: "tax-engine"}}, Logs: []LogSet{{Subject: "elasticsearch"}, {Subject: "pricing-service"}}}
	set := &LogSet{}
	for field, want := range map[string]string{"tax_engine": "tax-engine", "es": "elasticsearch", "pricing": "pricing-service", "fx_rates": "fx-rates", "pg": "postgresql"} {
		if got := callSubject(ev, set, field); got != want {
			t.Errorf("callSubject(%q) = %q, want %q", field, got, want)
		}
	}
}
