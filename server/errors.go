package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/rootcause/rootcause/db"
)

// Error codes the HTTP layer adds to the db codes.
const (
	EMETHODNOTALLOWED = "method_not_allowed"
	EUNSUPPORTEDMEDIA = "unsupported_media_type"
)

// StatusClientClosedRequest is the non-standard status (nginx's 499) logged
// when the client went away before the answer; nobody reads the body.
const StatusClientClosedRequest = 499

// codes maps error codes to HTTP statuses. Codes not listed are 500.
var codes = map[string]int{
	db.ENOTFOUND:      http.StatusNotFound,
	db.EINVALID:       http.StatusBadRequest,
	db.EINVALIDFIELD:  http.StatusBadRequest,
	db.EVALIDATION:    http.StatusBadRequest,
	db.EUNAUTHORIZED:  http.StatusUnauthorized,
	db.ETOKENEXPIRED:  http.StatusUnauthorized,
	db.EFORBIDDEN:     http.StatusForbidden,
	db.ECONFLICT:      http.StatusConflict,
	db.EINVALIDSTATE:  http.StatusConflict,
	db.ECANCELLED:     http.StatusConflict,
	db.ETOOLARGE:      http.StatusRequestEntityTooLarge,
	db.ERATELIMITED:   http.StatusTooManyRequests,
	db.EUNAVAILABLE:   http.StatusServiceUnavailable,
	db.EDATASOURCE:    http.StatusBadGateway,
	db.EINTERRUPTED:   http.StatusBadGateway, // a failed investigation, as data_source_unavailable
	db.ETIMEOUT:       http.StatusRequestTimeout,
	db.EINTERNAL:      http.StatusInternalServerError,
	EMETHODNOTALLOWED: http.StatusMethodNotAllowed,
	EUNSUPPORTEDMEDIA: http.StatusUnsupportedMediaType,
}

// StatusFor returns the HTTP status of an error code (500 when unknown).
func StatusFor(code string) int {
	if s, ok := codes[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the JSON error answer: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an error answer (spec section 7).
type ErrorDetail struct {
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	RequestID  string         `json:"request_id"`
	Field      string         `json:"field,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
	RetryAfter *int           `json:"retry_after,omitempty"`
}

// retryError carries a Retry-After hint alongside a *db.Error.
type retryError struct {
	err   *db.Error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// WithRetryAfter returns err (a *db.Error, typically rate_limited or
// unavailable) with a hint that the caller may retry after d: Error then
// sets the Retry-After header and error.retry_after (whole seconds, at
// least 1).
func WithRetryAfter(err *db.Error, d time.Duration) error {
	return &retryError{err: err, after: d}
}

// Error writes err as the JSON error body with the status of its code. A
// *db.Error keeps its code, message, field and details; context
// cancellation becomes 499 and a deadline 408; http.MaxBytesError becomes
// 413; anything else is logged with the request id and answered as 500
// "internal error" without its text. If the handler already wrote the
// status, Error only logs.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	info := infoFrom(r.Context())
	log := slog.Default()
	reqID := ""
	if info != nil {
		log = info.log
		reqID = info.id
	}

	d := ErrorDetail{RequestID: reqID}
	var de *db.Error
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &de):
		d.Code, d.Message, d.Field, d.Details = de.Code, de.Message, de.Field, de.Details
	case errors.As(err, &mbe):
		d.Code, d.Message = db.ETOOLARGE, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		d.Code, d.Message = db.ETIMEOUT, "request timed out"
	case errors.Is(err, context.Canceled):
		d.Code, d.Message = db.ECANCELLED, "request cancelled by the client"
	default:
		d.Code = db.EINTERNAL
	}
	status := StatusFor(d.Code)
	if d.Code == db.ECANCELLED && de == nil {
		status = StatusClientClosedRequest
	}
	if d.Code == db.EINTERNAL {
		log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", reqID), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		d.Message = "internal error"
		d.Field, d.Details = "", nil
	}
	if d.Message == "" {
		d.Message = http.StatusText(status)
	}

	if headerWritten(w) {
		log.LogAttrs(r.Context(), slog.LevelWarn, "error after response started",
			slog.String("request_id", reqID), slog.String("code", d.Code), slog.String("error", err.Error()))
		return
	}
	h := w.Header()
	var re *retryError
	if errors.As(err, &re) {
		secs := max(int((re.after+time.Second-1)/time.Second), 1)
		d.RetryAfter = &secs
		h.Set("Retry-After", strconv.Itoa(secs))
	}
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="rootcause"`)
	}
	// Error bodies never depend on earlier headers of a half-built answer.
	h.Del("Content-Length")
	h.Del("Content-Disposition")
	_ = writeJSON(w, status, ErrorBody{Error: d})
}

// recoverPanic is httprouter's PanicHandler: it logs the panic with its
// stack and answers 500 through Error. http.ErrAbortHandler is re-raised so
// net/http aborts the connection (a stream that failed mid-way).
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	log := s.log
	reqID := RequestID(r.Context())
	log.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
		slog.String("request_id", reqID), slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
	Error(w, r, errors.New("panic")) // internal: the details stay in the log
}

// newRequestID returns a fresh request id: 32 hex digits. Incoming
// X-Request-Id headers are ignored, so ids are always well-formed and unique
// and a client cannot inject text into the logs through them.
func newRequestID() string {
	var b [requestIDLen]byte
	fillRequestID(&b)
	return string(b[:])
}

// requestIDLen is the length of a request id.
const requestIDLen = 32

// fillRequestID writes a fresh request id (newRequestID) into b.
func fillRequestID(b *[requestIDLen]byte) {
	const hexd = "0123456789abcdef"
	a, c := rand.Uint64(), rand.Uint64()
	for i := range 16 {
		b[i] = hexd[a>>(60-4*i)&0xf]
		b[16+i] = hexd[c>>(60-4*i)&0xf]
	}
}

// writeJSON writes v as JSON with status. The body ends with a newline.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding response: %w", err)
	}
	b = append(b, '\n')
	setHeader(w, "Content-Length", strconv.Itoa(len(b)))
	writeJSONBody(w, status, b)
	return nil
}

// writeJSONBytes writes b, encoded JSON ending with its newline, as
// writeJSON would; length is its Content-Length value made once with the
// body (fixedValue of len(b) in decimal), as a cached answer keeps it.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte, length []string) {
	setFixedHeader(w, "Content-Length", length)
	writeJSONBody(w, status, b)
}

// writeJSONBody writes the JSON headers, status and b in one Write; the
// caller has set Content-Length.
//
// A body larger than corkMin goes out with the headers in one write system
// call when the connection allows it (cork.go).
func writeJSONBody(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h["Content-Type"] = valueJSON
	h["X-Content-Type-Options"] = valueNosniff
	if len(b) >= corkMin {
		if cc := corkOf(w); cc != nil {
			cc.cork()
			defer cc.uncork()
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
