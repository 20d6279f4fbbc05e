package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRequestLineSameAsSlog checks that a request line written through
// LogHandler is byte for byte what slog's own handler writes for the same
// record, for text and JSON, across times, zones, durations and field
// values, including values the handler must quote or escape (those take
// the handler's path).
func TestRequestLineSameAsSlog(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+1800), time.FixedZone("W", -8*3600)}
	times := []time.Time{
		time.Date(2026, 11, 25, 16, 30, 15, 0, time.UTC),
		time.Date(2026, 11, 25, 16, 30, 15, 123456789, time.UTC),
		time.Date(2026, 11, 25, 16, 30, 15, 999999999, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100000, time.UTC),
		time.Now(), // with a monotonic reading
	}
	lines := []requestLine{
		{method: "GET", route: "/api/v1/auth/me", status: 200, latency: 12345 * time.Nanosecond, id: newRequestID(), principal: "tok_0123abcd", bytes: 150},
		{method: "POST", route: "/api/v1/agents/run", status: 502, latency: 2*time.Hour + 3*time.Millisecond, id: newRequestID(), principal: "admin", bytes: 0},
		{method: "GET", route: "unmatched", status: 404, latency: 0, id: newRequestID(), principal: "", bytes: 97},
		{method: "DELETE", route: "/api/v1/admin/nodes/:name", status: 204, latency: 999, id: newRequestID(), principal: "oidc:alice@example.com", bytes: 1 << 40, local: true},
		{method: "GET", route: "/healthz", status: 200, latency: -5, id: "x", principal: "p<a>&b", bytes: -1},
		// Values one of the handlers quotes or escapes.
		{method: "GET", route: "/a b", status: 200, id: "1", principal: "p"},
		{method: "GET", route: "/a=b", status: 200, id: "1", principal: "p"},
		{method: "GET", route: "/x", status: 200, id: "1", principal: `say "hi"`},
		{method: "GET", route: "/x", status: 200, id: "1", principal: `back\slash`},
		{method: "GET", route: "/x", status: 200, id: "1", principal: "tab\there"},
		{method: "GET", route: "/x", status: 200, id: "1", principal: "émile"},
		{method: "GET", route: "/x", status: 200, id: "1", principal: "nl\n"},
		{method: "", route: "/x", status: 200, id: "", principal: ""},
	}
	for _, json := range []bool{false, true} {
		for i := range 5 { // the ordinary lines take the handler's own path
			if !NewLogHandler(io.Discard, json, slog.LevelInfo).writeRequest(times[1], &lines[i]) {
				t.Errorf("json=%v: line %d went through slog", json, i)
			}
		}
		for _, loc := range zones {
			for _, tm := range times {
				tm = tm.In(loc)
				for i, l := range lines {
					var fast, ref bytes.Buffer
					s := &Server{log: slog.New(NewLogHandler(&fast, json, slog.LevelInfo))}
					s.logRequest(context.Background(), tm, &l)
					opts := &slog.HandlerOptions{}
					var h slog.Handler = slog.NewTextHandler(&ref, opts)
					if json {
						h = slog.NewJSONHandler(&ref, opts)
					}
					(&Server{log: slog.New(h)}).logRequest(context.Background(), tm, &l)
					if fast.String() != ref.String() {
						t.Errorf("json=%v %s line %d:\n got %q\nwant %q", json, tm, i, fast.String(), ref.String())
					}
				}
			}
		}
	}
}

// TestLogHandlerLevelAndRecords checks that LogHandler is slog's handler
// for every other record, and that request lines follow its level.
func TestLogHandlerLevelAndRecords(t *testing.T) {
	var buf bytes.Buffer
	h := NewLogHandler(&buf, false, slog.LevelWarn)
	log := slog.New(h)
	log.Info("hidden")
	log.Warn("shown", "k", "v w")
	s := &Server{log: log}
	s.logRequest(context.Background(), time.Now(), &requestLine{method: "GET", route: "/x", id: "1"})
	out := buf.String()
	if strings.Contains(out, "hidden") || strings.Contains(out, "msg=request") {
		t.Errorf("a record under the level was written: %q", out)
	}
	if !strings.Contains(out, `level=WARN msg=shown k="v w"`) {
		t.Errorf("the warning is missing or formatted otherwise: %q", out)
	}
	buf.Reset()
	slog.New(NewLogHandler(&buf, true, slog.LevelInfo)).With("a", 1).Info("m")
	if !strings.Contains(buf.String(), `"msg":"m","a":1}`) {
		t.Errorf("derived handler output %q", buf.String())
	}
}

// BenchmarkRequestLine is one request line written to a discarding output
// by slog's TextHandler (the record path) and by LogHandler.
//
//	go test ./server -run '^$' -bench RequestLine
func BenchmarkRequestLine(b *testing.B) {
	l := requestLine{method: "GET", route: "/api/v1/auth/me", status: 200, latency: 12345 * time.Nanosecond,
		id: newRequestID(), principal: "tok_0123abcd", bytes: 150}
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{
		{"slog_text", slog.NewTextHandler(io.Discard, nil)},
		{"log_handler_text", NewLogHandler(io.Discard, false, slog.LevelInfo)},
		{"slog_json", slog.NewJSONHandler(io.Discard, nil)},
		{"log_handler_json", NewLogHandler(io.Discard, true, slog.LevelInfo)},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &Server{log: slog.New(c.h)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				s.logRequest(ctx, time.Now(), &l)
			}
		})
	}
}
