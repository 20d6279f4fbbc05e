package analyst

import (
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
