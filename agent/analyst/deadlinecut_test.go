package analyst

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis"
	"github.com/rootcause/rootcause/agent/evidence"
)

func TestDeadlineCut(t *testing.T) {
	at := time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC)
	tmpl := func(example, last string, baseline int) analysis.LogTemplate {
		return analysis.LogTemplate{Example: example, Last: last, Incident: 20, Baseline: baseline, FirstIncident: at}
	}
	goCaller := tmpl(`{"level":"error","ts":"2026-06-01T14:00:00.503Z","msg":"report failed","error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded","elapsed":"503ms"}`,
		`{"level":"error","ts":"2026-06-01T14:20:00.502Z","msg":"report failed","error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded","elapsed":"502ms"}`, 0)
	varied := tmpl(`level=error msg="call failed" err="context deadline exceeded" took=2.1s`, `level=error msg="call failed" err="context deadline exceeded" took=9.7s`, 0)
	javaCallee := tmpl(`2026-06-01T14:00:00.600Z WARN [grpc-default-executor-3] c.e.r.ReportGrpcService : ListReportRows cancelled by client after 500ms (io.grpc.StatusRuntimeException: CANCELLED: io.grpc.Context was cancelled without error)`, "", 0)
	timeoutChange := evidence.Change{Service: "report-api", Kind: "config", Description: "report-api: upstream call timeout 500ms (was 10s)", Timestamp: at.Add(-3 * time.Minute)}
	cases := []struct {
		name    string
		caller  analysis.LogTemplate
		callee  []analysis.LogTemplate
		changes []evidence.Change
		want    []string // nil: no finding
	}{
		{"one elapsed time and a callee cancelled", goCaller, []analysis.LogTemplate{javaCallee}, nil, []string{"report-api's deadline for its calls to report-store is 500ms", "(ListReportRows)"}},
		{"varied elapsed, but the caller's timeout change", varied, []analysis.LogTemplate{javaCallee}, []evidence.Change{timeoutChange}, []string{"is 500ms", "upstream call timeout 500ms"}},
		{"varied elapsed and no change: a slow callee", varied, []analysis.LogTemplate{javaCallee}, nil, nil},
		{"no callee cancelling", goCaller, nil, nil, nil},
		{"deadlines already in the baseline", tmpl(goCaller.Example, goCaller.Last, 12), []analysis.LogTemplate{javaCallee}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := &Gathered{Changes: c.changes, Logs: []LogSet{{Subject: "report-api", Templates: []analysis.LogTemplate{c.caller}}, {Subject: "report-store", Templates: c.callee}}}
			fs := detectDeadlineCut(ev, nil)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("want none, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "report-api" {
				t.Fatalf("want one finding on report-api, got %+v", fs)
			}
			d := deadlineCut.describe(&Hypothesis{Kind: KindDeadlineCut, Subject: "report-api", Primary: []*Finding{&fs[0]}}, Scope{})
			for _, w := range c.want {
				if !strings.Contains(d, w) {
					t.Errorf("description lacks %q: %s", w, d)
				}
			}
		})
	}
	if v, ok := lineElapsed(`took=1.5s`); !ok || v != 1.5 {
		t.Errorf("lineElapsed(took=1.5s) = %v %v", v, ok)
	}
}

// bucketSeries is a request-duration histogram of a callee as Prometheus
// serves it: one cumulative counter per "le", sampled every five minutes
// from the baseline's start, with the given share of each interval's
// calls at or below each bound.
func bucketSeries(labels evidence.Labels, start time.Time, steps int, perStep float64, le []string, share []float64) []evidence.Series {
	var out []evidence.Series
	for i, b := range le {
		l := evidence.Labels{"le": b}
		for k, v := range labels {
			l[k] = v
		}
		s := evidence.Series{Labels: l}
		for k := 0; k <= steps; k++ {
			s.Points = append(s.Points, evidence.Point{T: start.Add(time.Duration(k) * 5 * time.Minute), V: float64(k) * perStep * share[i]})
		}
		out = append(out, s)
	}
	return out
}

// TestDeadlineBelowP99: a caller's calls time out at a deadline set below
// its callee's p99, read from the callee's request-duration buckets and
// unchanged from the baseline: the deadline is the root, in several
// clients' words (Go's Client.Timeout, Python's read timeout, axios). A
// callee whose p99 grew, one whose p99 is below the deadline, a callee the
// histogram does not name, and no baseline nor timeout change are not.
func TestDeadlineBelowP99(t *testing.T) {
	at := time.Date(2026, 11, 17, 11, 31, 0, 0, time.UTC)
	w := Window{BaselineStart: at.Add(-90 * time.Minute), Start: at.Add(-45 * time.Minute), End: at.Add(20 * time.Minute)}
	le := []string{"0.1", "0.25", "0.5", "0.8", "1", "1.5", "2.5", "+Inf"}
	steady := []float64{0.2, 0.5, 0.85, 0.968, 0.991, 0.998, 1, 1}
	fast := []float64{0.3, 0.7, 0.95, 0.999, 1, 1, 1, 1}
	pricing := evidence.Labels{"namespace": "pricing", "service": "pricing", "route": "/v1/quote"}
	hist := func(base, win []float64, lab evidence.Labels) []MetricSet {
		b := bucketSeries(lab, w.BaselineStart, 9, 1000, le, base)
		i := bucketSeries(lab, w.Start, 13, 1000, le, win)
		// One counter across both spans: the window's continue the baseline's.
		for k := range b {
			last := b[k].Points[len(b[k].Points)-1].V
			for _, p := range i[k].Points[1:] {
				b[k].Points = append(b[k].Points, evidence.Point{T: p.T, V: last + p.V})
			}
		}
		return []MetricSet{{Name: "http_server_request_duration_seconds_bucket", Class: MetricBuckets, Unit: "s", Series: b}}
	}
	goLine := `{"time":"2026-11-17T11:31:15.653Z","level":"ERROR","msg":"upstream call failed","upstream":"pricing","method":"POST","url":"http://pricing.pricing.svc:8080/v1/quote","err":"context deadline exceeded (Client.Timeout exceeded while awaiting headers)","timeout":"800ms","elapsed_ms":803,"status":504}`
	pyLine := `2026-11-17 11:31:15,653 ERROR quote_api.client: pricing call failed: HTTPConnectionPool(host='pricing', port=8080): Read timed out. (read timeout=0.8)`
	axiosLine := `{"level":50,"time":1794915075653,"msg":"quote failed","err":{"message":"timeout of 800ms exceeded","code":"ECONNABORTED","config":{"url":"http://pricing.pricing.svc:8080/v1/quote"}}}`
	cut := evidence.Change{Service: "mobile-bff", Kind: "config", Timestamp: at.Add(-27 * time.Minute), Description: "mobile-bff-env: PRICING_TIMEOUT 2s -> 800ms (align with app screen budget)"}
	cases := []struct {
		name    string
		line    string
		metrics []MetricSet
		changes []evidence.Change
		want    []string // nil: no finding
	}{
		{"go client, p99 unchanged", goLine, hist(steady, steady, pricing), []evidence.Change{cut},
			[]string{"deadline for its calls to pricing is 800ms", "p99 is 991 ms, above the deadline and unchanged (991 ms before)", "3.2% of its calls", "PRICING_TIMEOUT 2s -> 800ms"}},
		{"python read timeout, no change", pyLine, hist(steady, steady, pricing), nil, []string{"calls to pricing is 0.8", "given up at the deadline", "unchanged"}},
		{"axios timeout", axiosLine, hist(steady, steady, pricing), []evidence.Change{cut}, []string{"is 800ms", "p99 is 991 ms"}},
		{"the callee got slower", goLine, hist(fast, steady, pricing), []evidence.Change{cut}, nil},
		{"p99 below the deadline", goLine, hist(fast, fast, pricing), []evidence.Change{cut}, nil},
		{"histogram of another service", goLine, hist(steady, steady, evidence.Labels{"service": "catalog"}), []evidence.Change{cut}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := analysis.LogTemplate{Example: c.line, Incident: 12, FirstIncident: at}
			ev := &Gathered{Changes: c.changes, Metrics: c.metrics, Window: w, Logs: []LogSet{{Subject: "mobile-bff", Templates: []analysis.LogTemplate{tmpl}}}}
			fs := detectDeadlineCut(ev, nil)
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("want none, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Subject != "mobile-bff" || fs[0].fact("why") == "" {
				t.Fatalf("want one finding on mobile-bff, got %+v", fs)
			}
			d := deadlineCut.describe(&Hypothesis{Kind: KindDeadlineCut, Subject: "mobile-bff", Primary: []*Finding{&fs[0]}}, Scope{})
			for _, s := range c.want {
				if !strings.Contains(d, s) {
					t.Errorf("description lacks %q: %s", s, d)
				}
			}
		})
	}
	b := bucketCounts{le: []float64{0.5, 1, math.Inf(1)}, count: []float64{50, 90, 100}}
	if q, _ := b.quantile(0.5); q != 0.5 {
		t.Errorf("median %v, want 0.5", q)
	}
	if o := b.over(0.75); math.Abs(o-0.3) > 1e-9 {
		t.Errorf("over 0.75: %v, want 0.3", o)
	}
}
