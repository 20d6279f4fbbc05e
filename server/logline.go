package server

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rootcause/rootcause/logwriter"
)

// The request log line is written for every request, and slog's generic
// handlers spend about as long formatting its nine fields as the rest of
// an authenticated request's own work. LogHandler is the server log's
// handler (cmd builds it): slog's TextHandler or JSONHandler over a
// writer, which also lets serve append a request line's fields itself,
// byte for byte as the wrapped handler would write them, into a pooled
// buffer. A line with a field the handler would quote or escape goes
// through the handler instead.

// LogHandler is slog's TextHandler (or JSONHandler) writing to w at the
// given level. It is an ordinary slog.Handler; its request lines are
// written by the server without slog's generic formatting, in the same
// bytes. Handlers derived with WithAttrs or WithGroup are slog's own.
type LogHandler struct {
	slog.Handler
	out  io.Writer // w, serialised by lockedWriter unless it serialises its own writes
	json bool
}

// NewLogHandler returns the LogHandler writing text (or JSON when json is
// true) to w for records at level and above.
func NewLogHandler(w io.Writer, json bool, level slog.Leveler) *LogHandler {
	var out io.Writer = w
	if _, ok := w.(*logwriter.Writer); !ok {
		out = &lockedWriter{w: w}
	}
	opts := &slog.HandlerOptions{Level: level}
	h := &LogHandler{out: out, json: json}
	if json {
		h.Handler = slog.NewJSONHandler(out, opts)
	} else {
		h.Handler = slog.NewTextHandler(out, opts)
	}
	return h
}

// lockedWriter serialises the writes of the wrapped handler and of the
// request lines, as slog's handler does its own. A logwriter.Writer (the
// output serve uses) takes each Write whole and in order by itself, and
// is written to without it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// requestLine is the request log line's fields, in their order.
type requestLine struct {
	method    string
	route     string
	status    int
	latency   time.Duration
	id        string
	principal string
	bytes     int64
	local     bool
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeRequest writes l with time t as the wrapped handler would write the
// record "request" at level INFO with l's fields as attributes, and
// reports whether it did: false when a field needs the handler's quoting or
// escaping (nothing is written then).
func (h *LogHandler) writeRequest(t time.Time, l *requestLine) bool {
	if y := t.Year(); y < 0 || y >= 10000 {
		return false
	}
	for _, s := range [...]string{l.method, l.route, l.id, l.principal} {
		if !plainLogValue(s, h.json) {
			return false
		}
	}
	bp := lineBufs.Get().(*[]byte)
	b := (*bp)[:0]
	t = t.Round(0) // as slog does: no monotonic reading
	if h.json {
		b = append(b, `{"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request","method":`...)
		b = appendLogString(b, l.method, true)
		b = append(b, `,"route":`...)
		b = appendLogString(b, l.route, true)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(l.status), 10)
		b = append(b, `,"latency":`...)
		b = strconv.AppendInt(b, int64(l.latency), 10)
		b = append(b, `,"request_id":`...)
		b = appendLogString(b, l.id, true)
		b = append(b, `,"principal":`...)
		b = appendLogString(b, l.principal, true)
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, l.bytes, 10)
		if l.local {
			b = append(b, `,"local":true`...)
		}
		b = append(b, "}\n"...)
	} else {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t)
		b = append(b, " level=INFO msg=request method="...)
		b = appendLogString(b, l.method, false)
		b = append(b, " route="...)
		b = appendLogString(b, l.route, false)
		b = append(b, " status="...)
		b = strconv.AppendInt(b, int64(l.status), 10)
		b = append(b, " latency="...)
		b = append(b, l.latency.String()...)
		b = append(b, " request_id="...)
		b = appendLogString(b, l.id, false)
		b = append(b, " principal="...)
		b = appendLogString(b, l.principal, false)
		b = append(b, " bytes="...)
		b = strconv.AppendInt(b, l.bytes, 10)
		if l.local {
			b = append(b, " local=true"...)
		}
		b = append(b, '\n')
	}
	_, _ = h.out.Write(b)
	if cap(b) <= 4096 {
		*bp = b
		lineBufs.Put(bp)
	}
	return true
}

// plainLogValue reports whether s is written as is by the handler: only
// printable ASCII that neither handler quotes or escapes (the empty
// string is written as "" by both).
func plainLogValue(s string, json bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || (!json && c == '=') {
			return false
		}
	}
	return true
}

// appendLogString appends a plainLogValue: quoted in JSON, and in text
// only when empty.
func appendLogString(b []byte, s string, json bool) []byte {
	if json || s == "" {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return append(b, s...)
}

// appendRFC3339Millis is slog's text time format: RFC 3339 with exactly
// three fractional digits. Lines come many to a second, so the text of the
// second (date, time and zone) is formatted once per second and location
// and only the milliseconds per line.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	st := lastSecond.Load()
	if st == nil || st.sec != sec || st.loc != loc {
		st = &secondText{sec: sec, loc: loc,
			text: time.Unix(sec, 0).In(loc).AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")}
		lastSecond.Store(st)
	}
	const dot = len("2006-01-02T15:04:05.")
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, st.text[:dot]...)
	b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, st.text[dot+3:]...)
}

// secondText is the text of one second in one location as
// appendRFC3339Millis writes it, with milliseconds 000.
type secondText struct {
	sec  int64
	loc  *time.Location
	text []byte
}

// lastSecond is the second most recently written by appendRFC3339Millis.
var lastSecond atomic.Pointer[secondText]

// logRequest writes the request line of l ending at t to the server log:
// through LogHandler's own path when the log's handler is one, else as a
// record through the handler.
func (s *Server) logRequest(ctx context.Context, t time.Time, l *requestLine) {
	h := s.log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	if lh, ok := h.(*LogHandler); ok && lh.writeRequest(t, l) {
		return
	}
	// The record is built here rather than through Logger.LogAttrs, which
	// walks the stack for a source position on every call (a request line
	// has no use for it).
	rec := slog.NewRecord(t, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("method", l.method),
		slog.String("route", l.route),
		slog.Int("status", l.status),
		slog.Duration("latency", l.latency),
		slog.String("request_id", l.id),
		slog.String("principal", l.principal),
		slog.Int64("bytes", l.bytes),
	)
	if l.local {
		rec.AddAttrs(slog.Bool("local", true))
	}
	_ = h.Handle(ctx, rec)
}
