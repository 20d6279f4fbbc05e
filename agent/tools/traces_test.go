package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analysis/tracegraph"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// traceEnv is a bundle holding the conformance fixture, its clock an hour
// after the first trace.
func traceEnv(t *testing.T) *Env {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := otlpjson.WriteLines(&buf, evidencetest.TraceFixture(), 4); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "traces", "otlp.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Sources: b.Sources(evidencetest.TraceT0.Add(10 * time.Minute))}
}

func traceCall(t *testing.T, env *Env, name, args string) (any, error) {
	t.Helper()
	tool, ok := NewCatalog(traceTools()).Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool.Run(context.Background(), env, json.RawMessage(args))
}

func TestFindTracesTool(t *testing.T) {
	env := traceEnv(t)
	for _, c := range []struct {
		args string
		want []string
	}{
		{`{}`, []string{evidencetest.TraceCheckoutOK, evidencetest.TraceCart, evidencetest.TraceCheckoutFailed}},
		{`{"service": "checkout", "min_duration": "200ms"}`, []string{evidencetest.TraceCheckoutFailed}},
		{`{"error": true, "start": "15m"}`, []string{evidencetest.TraceCheckoutFailed}},
		{`{"start": "8m30s", "end": "now"}`, []string{evidencetest.TraceCheckoutOK}},
		{`{"operation": "Get", "limit": 5}`, []string{evidencetest.TraceCart}},
	} {
		got, err := traceCall(t, env, "find_traces", c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		var ids []string
		for _, s := range got.([]evidence.TraceSummary) {
			ids = append(ids, s.TraceID)
		}
		if strings.Join(ids, ",") != strings.Join(c.want, ",") {
			t.Errorf("find_traces %s = %v, want %v", c.args, ids, c.want)
		}
	}
}

func TestGetTraceTool(t *testing.T) {
	got, err := traceCall(t, traceEnv(t), "get_trace", `{"trace_id": " `+strings.ToUpper(evidencetest.TraceCheckoutFailed)+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	v := got.(*TraceView)
	if v.Summary.Root != "frontend: GET /checkout" || len(v.Spans) != 5 || v.Omitted != 0 {
		t.Fatalf("%+v", v.Summary)
	}
	// frontend 0-300 calls 10-290: self 20ms; payment 40-240 has no child.
	for i, want := range []struct {
		depth    int
		dur, slf float64
	}{{0, 300, 20}, {1, 280, 20}, {2, 260, 40}, {3, 220, 20}, {4, 200, 200}} {
		s := v.Spans[i]
		if s.Depth != want.depth || s.DurationMs != want.dur || s.SelfMs != want.slf {
			t.Errorf("span %d %s: depth %d duration %v self %v, want %+v", i, s.Name, s.Depth, s.DurationMs, s.SelfMs, want)
		}
	}
	if !v.Spans[4].Error || v.Spans[4].StatusMessage != "card declined" {
		t.Errorf("payment span: %+v", v.Spans[4])
	}
}

func TestServiceGraphTool(t *testing.T) {
	env := traceEnv(t)
	got, err := traceCall(t, env, "service_graph", `{"start": "11m"}`)
	if err != nil {
		t.Fatal(err)
	}
	g := got.(*ServiceGraph).Graph
	if g == nil || len(g.Edges) != 3 || g.Traces != 3 {
		t.Fatalf("graph %+v", got)
	}
	// Baseline: the first 90 s (the failed checkout and the cart trace);
	// current: the rest (the good checkout).
	t0 := evidencetest.TraceT0
	got, err = traceCall(t, env, "service_graph", `{"baseline_start": "`+t0.Format(time.RFC3339)+`", "start": "`+
		t0.Add(90*time.Second).Format(time.RFC3339)+`", "end": "now"}`)
	if err != nil {
		t.Fatal(err)
	}
	d := got.(*ServiceGraph).Delta
	if d == nil {
		t.Fatalf("no delta: %+v", got)
	}
	var pay tracegraph.ServiceDelta
	for _, s := range d.Services {
		if s.Service == "payment" {
			pay = s
		}
	}
	if pay.BaseErrorRate != 1 || pay.ErrorRate != 0 || pay.SelfP50Ratio < 0.34 || pay.SelfP50Ratio > 0.36 {
		t.Errorf("payment delta %+v (self 70ms against 200ms)", pay)
	}
	b, err := json.Marshal(got)
	if err != nil || !strings.Contains(string(b), `"p50_ms":`) {
		t.Errorf("JSON %s %v", b, err)
	}
}

func TestTraceToolErrors(t *testing.T) {
	env := traceEnv(t)
	for _, c := range []struct{ tool, args, code string }{
		{"find_traces", `{"min_duration": "soon"}`, evidence.CodeInvalid},
		{"find_traces", `{"nope": 1}`, evidence.CodeInvalid},
		{"find_traces", `{"start": "1m", "end": "2h"}`, evidence.CodeInvalid},
		{"get_trace", `{}`, evidence.CodeInvalid},
		{"get_trace", `{"trace_id": "xyz"}`, evidence.CodeInvalid},
		{"get_trace", `{"trace_id": "00000000000000000000000000000001"}`, evidence.CodeNotFound},
		{"service_graph", `{"baseline_end": "1h"}`, evidence.CodeInvalid},
		{"service_graph", `{"baseline_start": "10m", "baseline_end": "20m"}`, evidence.CodeInvalid},
	} {
		_, err := traceCall(t, env, c.tool, c.args)
		if evidence.CodeOf(err) != c.code {
			t.Errorf("%s %s: %v, want %s", c.tool, c.args, err, c.code)
		}
	}
	for name, args := range map[string]string{"find_traces": `{}`, "get_trace": `{"trace_id": "x"}`, "service_graph": `{}`} {
		_, err := traceCall(t, &Env{Sources: &evidence.Sources{}}, name, args)
		if evidence.CodeOf(err) != evidence.CodeNotConfigured || !strings.Contains(err.Error(), "tools.jaeger") {
			t.Errorf("%s without traces: %v", name, err)
		}
	}
}

func TestViewTraceBounds(t *testing.T) {
	t0 := evidencetest.TraceT0
	var spans []evidence.Span
	for i := range MaxTraceSpans + 7 {
		spans = append(spans, evidence.Span{TraceID: "t", SpanID: string(rune('a' + i%26)), Start: t0.Add(time.Duration(i)), End: t0.Add(time.Duration(i + 1))})
	}
	if v := viewTrace(spans); len(v.Spans) != MaxTraceSpans || v.Omitted != 7 || v.Summary.Spans != MaxTraceSpans+7 {
		t.Errorf("%d spans, %d omitted", len(v.Spans), v.Omitted)
	}
}
