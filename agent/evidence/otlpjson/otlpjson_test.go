package otlpjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rootcause/rootcause/agent/evidence"
)

var update = flag.Bool("update", false, "rewrite testdata goldens")

// TestVariants decodes the forms real producers write (the Collector's
// file exporter, numbers and enum names, the pre-1.0 key, Tempo's batches
// and base64 ids) and compares with a golden file.
func TestVariants(t *testing.T) {
	data, err := os.ReadFile("testdata/variants.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []evidence.Span
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if err := Decode(sc.Bytes(), func(s *evidence.Span) error { got = append(got, *s); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := json.MarshalIndent(got, "", "  ")
	out = append(out, '\n')
	if *update {
		if err := os.WriteFile("testdata/variants.golden.json", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/variants.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(out)); d != "" {
		t.Errorf("decoded spans differ from testdata/variants.golden.json (-want +got; -update rewrites):\n%s", d)
	}
}

func TestDecodeErrors(t *testing.T) {
	span := func(fields string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{` + fields + `}]}]}]}`
	}
	ok := `"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173","startTimeUnixNano":"1","endTimeUnixNano":"2"`
	for _, c := range []struct{ in, want string }{
		{`{"resourceSpans":[`, "unexpected end"},
		{span(strings.Replace(ok, `5b8efff798038103d269b633813fc60c`, `xyz`, 1)), "traceId"},
		{span(strings.Replace(ok, `eee19b7ec3c1b173`, `eee19b7ec3c1b17`, 1)), "spanId"},
		{span(ok + `,"parentSpanId":"zz"`), "parentSpanId"},
		{span(strings.Replace(ok, `"endTimeUnixNano":"2"`, `"endTimeUnixNano":"0"`, 1)), "ends before it starts"},
		{span(strings.Replace(ok, `"1"`, `"-1"`, 1)), "unsigned integer"},
		{span(ok + `,"kind":"SPAN_KIND_SIDEWAYS"`), "enum"},
	} {
		err := Decode([]byte(c.in), func(*evidence.Span) error { return nil })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	spans := []evidence.Span{
		{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b173", Name: "GET /", Service: "frontend",
			Pod: "frontend-1", Namespace: "shop", Node: "n1", Kind: evidence.SpanKindServer, Start: t0, End: t0.Add(time.Second),
			Error: true, StatusMessage: "boom", Attributes: map[string]string{"a": "1", "b": "x"}},
		{TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", ParentSpanID: "eee19b7ec3c1b173", Name: "Get",
			Service: "cart", Kind: evidence.SpanKindClient, Start: t0, End: t0.Add(time.Millisecond)},
		{TraceID: "5b8efff798038103d269b633813fc60d", SpanID: "eee19b7ec3c1b175", Name: "job", Service: "frontend",
			Pod: "frontend-1", Namespace: "shop", Node: "n1", Kind: evidence.SpanKindInternal, Start: t0, End: t0},
	}
	var buf bytes.Buffer
	if err := WriteLines(&buf, spans, 2); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if !strings.Contains(lines[0], `"startTimeUnixNano":"1772366400123456789"`) || !strings.Contains(lines[0], `"code":2`) {
		t.Errorf("not the collector's form: %s", lines[0])
	}
	var got []evidence.Span
	for _, l := range lines {
		if err := Decode([]byte(l), func(s *evidence.Span) error { got = append(got, *s); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(spans, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}

func TestUnwrap(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"result":{"resourceSpans":[]}}`, `{"resourceSpans":[]}`},
		{`{"resourceSpans":[]}`, `{"resourceSpans":[]}`},
	} {
		got, err := Unwrap([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Unwrap(%s) = %s, %v", c.in, got, err)
		}
	}
	if _, err := Unwrap([]byte("  ")); err == nil {
		t.Error("Unwrap of nothing: no error")
	}
}

// decodeStd is the reference decoder: encoding/json into Request.
func decodeStd(data []byte) ([]evidence.Span, error) {
	var req Request
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, err
	}
	var out []evidence.Span
	err := req.Spans(func(s *evidence.Span) error { out = append(out, *s); return nil })
	return out, err
}

// FuzzDecode checks the single-pass decoder against encoding/json: whatever
// the reference reads, Decode reads the same spans from.
func FuzzDecode(f *testing.F) {
	data, err := os.ReadFile("testdata/variants.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b173","name":"a\u00e9\"\\\/\ud83d\ude00","startTimeUnixNano":1,"endTimeUnixNano":"2","status":{"message":"m\n"}}]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]}}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"resourceSpans":null,"other":[1,2.5e3,{"x":[true,false,null]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []evidence.Span
		gerr := Decode(data, func(s *evidence.Span) error { got = append(got, *s); return nil })
		want, werr := decodeStd(data)
		if werr != nil {
			return // the fast reader may be more lenient; it must not panic
		}
		if gerr != nil {
			t.Fatalf("Decode failed where encoding/json did not: %v\n%s", gerr, data)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("Decode differs from encoding/json (-want +got):\n%s\n%s", d, data)
		}
	})
}
