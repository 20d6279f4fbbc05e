package capture

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence/bundle"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// TestCaptureTraces captures the traces of a source (here a bundle holding
// the conformance fixture) and checks that the captured bundle answers the
// trace conformance suite like the source.
func TestCaptureTraces(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := otlpjson.WriteLines(&buf, evidencetest.TraceFixture(), 4); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "traces", "otlp.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.OpenDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if OpenTraces == nil || DefaultTraceWriter == nil {
		t.Fatal("the trace hooks are not set")
	}
	out := filepath.Join(t.TempDir(), "bundle")
	m, err := Run(context.Background(), Options{
		Out: out, Now: evidencetest.TraceT0.Add(10 * time.Minute), Since: time.Hour,
		Traces: b.Sources(time.Time{}).Traces, TraceWriter: DefaultTraceWriter,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Capture.Sources) != 1 || m.Capture.Sources[0] != "traces" || len(m.Capture.Errors) != 0 {
		t.Errorf("manifest %+v", m.Capture)
	}
	cb, err := bundle.OpenDir(out)
	if err != nil {
		t.Fatal(err)
	}
	tr := cb.Sources(time.Time{}).Traces
	if tr == nil {
		t.Fatal("the captured bundle has no traces/")
	}
	evidencetest.RunTraces(t, tr)
}
