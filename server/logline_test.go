package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/logwriter"
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

// TestRFC3339MillisPerSecondText checks the time text of request lines,
// made once per second and location, against time's own formatting for
// runs of times in the same second, across seconds, and alternating
// locations (each switch formats the second afresh).
func TestRFC3339MillisPerSecondText(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+1800), time.FixedZone("W", -8*3600), time.Local}
	base := time.Date(2026, 11, 25, 23, 59, 58, 0, time.UTC)
	const layout = "2006-01-02T15:04:05.000Z07:00"
	for _, tc := range []struct {
		name string
		step time.Duration
		n    int
	}{
		{"same second", 997 * time.Microsecond, 900},
		{"across seconds and days", 333*time.Millisecond + 7, 40},
		{"sub-millisecond", 1, 50},
	} {
		for _, alternate := range []bool{false, true} {
			for i := range tc.n {
				tm := base.Add(time.Duration(i) * tc.step)
				loc := zones[0]
				if alternate {
					loc = zones[i%len(zones)]
				}
				tm = tm.In(loc)
				got := string(appendRFC3339Millis([]byte("x="), tm))
				if want := "x=" + tm.Format(layout); got != want {
					t.Fatalf("%s (alternate=%v) %d: got %q, want %q", tc.name, alternate, i, got, want)
				}
			}
		}
	}
	// Years of fewer than four digits and before 1970.
	for _, tm := range []time.Time{time.Date(999, 3, 4, 5, 6, 7, 8e6, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC)} {
		if got, want := string(appendRFC3339Millis(nil, tm)), tm.Format(layout); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestLogLinesWholeThroughLogwriter writes request lines and ordinary
// records from several goroutines through a LogHandler over a
// logwriter.Writer (serve's output, written to without lockedWriter) and
// checks that every line arrives whole.
func TestLogLinesWholeThroughLogwriter(t *testing.T) {
	var out bytes.Buffer // written only by the logwriter's goroutine, read after Close
	lw := logwriter.New(&out)
	h := NewLogHandler(lw, false, slog.LevelInfo)
	if _, ok := h.out.(*lockedWriter); ok {
		t.Fatal("a logwriter.Writer output is wrapped in lockedWriter")
	}
	s := &Server{log: slog.New(h)}
	const goroutines, lines = 4, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				s.logRequest(context.Background(), time.Now(), &requestLine{method: "GET", route: "/api/v1/auth/me",
					status: 200, latency: time.Duration(i), id: newRequestID(), principal: "tok_" + strconv.Itoa(g), bytes: int64(i)})
				s.log.Info("other", "goroutine", g, "seq", i)
			}
		}()
	}
	wg.Wait()
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	requests, others := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "time=") && strings.Contains(line, " msg=request method=GET route=/api/v1/auth/me status=200 ") && strings.Contains(line, " bytes="):
			requests++
		case strings.HasPrefix(line, "time=") && strings.Contains(line, " msg=other goroutine=") && strings.Contains(line, " seq="):
			others++
		default:
			t.Fatalf("broken line %q", line)
		}
	}
	if requests != goroutines*lines || others != goroutines*lines {
		t.Fatalf("%d request lines and %d others, want %d each", requests, others, goroutines*lines)
	}
}
