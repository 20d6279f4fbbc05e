package bundle

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/otlpjson"
)

// writeTraceBundle writes spans as a bundle's traces/ in two files, with
// lines of a few spans so that traces are spread over lines and files, as
// the Collector's file exporter leaves them.
func writeTraceBundle(t *testing.T, spans []evidence.Span) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Interleave: odd spans in one file, even in the other, newest first.
	var a, b []evidence.Span
	for i := len(spans) - 1; i >= 0; i-- {
		if i%2 == 0 {
			a = append(a, spans[i])
		} else {
			b = append(b, spans[i])
		}
	}
	for name, part := range map[string][]evidence.Span{"a.jsonl": a, "b.jsonl": b} {
		var buf bytes.Buffer
		buf.WriteString("\n") // blank lines are skipped
		if err := otlpjson.WriteLines(&buf, part, 3); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "traces", name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTracesConformance(t *testing.T) {
	b, err := OpenDir(writeTraceBundle(t, evidencetest.TraceFixture()))
	if err != nil {
		t.Fatal(err)
	}
	src := b.Sources(time.Time{})
	if src.Traces == nil {
		t.Fatal("bundle with traces/: Sources.Traces is nil")
	}
	evidencetest.RunTraces(t, src.Traces)
}

func TestTracesAbsent(t *testing.T) {
	b, err := Open(fstest.MapFS{"traces/README.txt": {Data: []byte("no spans")}}, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if tr := b.Sources(time.Time{}).Traces; tr != nil {
		t.Errorf("bundle without traces/*.jsonl has a Traces source: %T", tr)
	}
}

func TestTracesMalformed(t *testing.T) {
	good := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173","name":"x","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`
	ctx := context.Background()
	for _, c := range []struct {
		name, data string
		line       int
		want       string
	}{
		{"bad JSON", good + "\n{\"resourceSpans\": [\n", 2, "unexpected end"},
		{"bad id", good + "\n\n" + strings.Replace(good, "eee19b7ec3c1b173", "nothex", 1) + "\n", 3, "spanId"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, _ := Open(fstest.MapFS{"traces/x.jsonl": {Data: []byte(c.data)}}, "mem")
			tr := b.Sources(time.Time{}).Traces
			check := func(what string, err error) {
				t.Helper()
				var ee *evidence.Error
				if !errors.As(err, &ee) || ee.Code != evidence.CodeMalformed || ee.File != "traces/x.jsonl" || ee.Line != c.line || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: %v, want malformed at traces/x.jsonl:%d (%s)", what, err, c.line, c.want)
				}
			}
			check("ScanSpans", tr.ScanSpans(ctx, time.Time{}, time.Time{}, func(*evidence.Span) error { return nil }))
			_, err := tr.FindTraces(ctx, evidence.TraceQuery{})
			check("FindTraces", err)
			_, err = tr.Services(ctx, time.Time{}, time.Time{})
			check("Services", err)
		})
	}
}

func TestTracesLongLineAndCancel(t *testing.T) {
	// One line of 5,000 spans (longer than the reader's buffer).
	var spans []evidence.Span
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		spans = append(spans, evidence.Span{
			TraceID: "5b8efff798038103d269b633813fc60c", SpanID: strings.Repeat("0", 12) + hex4(i),
			Name: "op", Service: "svc", Kind: 1, Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(time.Duration(i+1) * time.Millisecond),
		})
	}
	var buf bytes.Buffer
	if err := otlpjson.WriteLines(&buf, spans, 5000); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 512<<10 {
		t.Fatalf("line of %d bytes is not long enough for this test", buf.Len())
	}
	b, _ := Open(fstest.MapFS{"traces/x.jsonl": {Data: buf.Bytes()}}, "mem")
	tr := b.Sources(time.Time{}).Traces
	got, err := tr.Trace(context.Background(), "5B8EFFF798038103D269B633813FC60C")
	if err != nil || len(got) != 5000 || got[4999].SpanID != spans[4999].SpanID {
		t.Fatalf("Trace: %d spans, %v", len(got), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.ScanSpans(ctx, time.Time{}, time.Time{}, func(*evidence.Span) error { return nil }); err == nil {
		t.Error("ScanSpans with a cancelled context: no error")
	}
}

func hex4(i int) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[i>>12&15], digits[i>>8&15], digits[i>>4&15], digits[i&15]})
}

// TestTracesExport writes a bundle's traces out again (as a capture does)
// and reads them back: the copy answers like the original.
func TestTracesExport(t *testing.T) {
	b, err := OpenDir(writeTraceBundle(t, evidencetest.TraceFixture()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := otlpjson.Export(context.Background(), b.Sources(time.Time{}).Traces, time.Time{}, time.Time{}, &buf)
	if err != nil || n != int64(buf.Len()) || n == 0 {
		t.Fatalf("Export: %d bytes (%d written), %v", n, buf.Len(), err)
	}
	cp, _ := Open(fstest.MapFS{"traces/capture.jsonl": {Data: buf.Bytes()}}, "copy")
	evidencetest.RunTraces(t, cp.Sources(time.Time{}).Traces)
}
