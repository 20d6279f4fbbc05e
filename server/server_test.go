package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/rootcause/rootcause/db"
)

func TestErrorWriter(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		message    string
		field      string
		retryAfter string
	}{
		{"NotFound", db.Errorf(db.ENOTFOUND, "node %q not found", "x"), 404, "not_found", `node "x" not found`, "", ""},
		{"Invalid", &db.Error{Code: db.EINVALID, Message: "field name: required", Field: "name"}, 400, "invalid_request", "field name: required", "name", ""},
		{"InvalidField", &db.Error{Code: db.EINVALIDFIELD, Message: "team_name is immutable", Field: "team_name"}, 400, "invalid_field", "team_name is immutable", "team_name", ""},
		{"Validation", db.Validationf("agents.planner.timeout", "must be a positive integer"), 400, "validation_error", "agents.planner.timeout: must be a positive integer", "agents.planner.timeout", ""},
		{"Unauthorized", db.Errorf(db.EUNAUTHORIZED, "invalid or expired token"), 401, "unauthorized", "invalid or expired token", "", ""},
		{"TokenExpired", db.Errorf(db.ETOKENEXPIRED, "token expired"), 401, "token_expired", "token expired", "", ""},
		{"Forbidden", db.Errorf(db.EFORBIDDEN, "no"), 403, "forbidden", "no", "", ""},
		{"Conflict", db.Errorf(db.ECONFLICT, "exists"), 409, "conflict", "exists", "", ""},
		{"InvalidState", db.Errorf(db.EINVALIDSTATE, "final"), 409, "invalid_state", "final", "", ""},
		{"Cancelled", db.Errorf(db.ECANCELLED, "cancelled"), 409, "cancelled", "cancelled", "", ""},
		{"TooLarge", db.Errorf(db.ETOOLARGE, "big"), 413, "payload_too_large", "big", "", ""},
		{"RateLimited", WithRetryAfter(db.Errorf(db.ERATELIMITED, "slow down"), 1500*time.Millisecond), 429, "rate_limited", "slow down", "", "2"},
		{"Unavailable", WithRetryAfter(db.Errorf(db.EUNAVAILABLE, "queue full"), 10*time.Millisecond), 503, "unavailable", "queue full", "", "1"},
		{"DataSource", db.Errorf(db.EDATASOURCE, "prometheus down"), 502, "data_source_unavailable", "prometheus down", "", ""},
		{"WrappedDBError", fmt.Errorf("creating node: %w", db.Errorf(db.ECONFLICT, "exists")), 409, "conflict", "exists", "", ""},
		{"InternalDBError", &db.Error{Code: db.EINTERNAL, Message: "bolt page 17 corrupt", Err: errors.New("x")}, 500, "internal", "internal error", "", ""},
		{"PlainError", errors.New("open /var/lib/secret: permission denied"), 500, "internal", "internal error", "", ""},
		{"Deadline", fmt.Errorf("querying: %w", context.DeadlineExceeded), 408, "timeout", "request timed out", "", ""},
		{"ClientGone", context.Canceled, 499, "cancelled", "request cancelled by the client", "", ""},
		{"MaxBytes", &http.MaxBytesError{Limit: 10}, 413, "payload_too_large", "request body exceeds 10 bytes", "", ""},
		{"MethodNotAllowed", &db.Error{Code: EMETHODNOTALLOWED, Message: "nope"}, 405, "method_not_allowed", "nope", "", ""},
		{"UnknownCode", db.Errorf("weird", "odd"), 500, "weird", "odd", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			info := &requestInfo{id: "req-1", log: slog.New(slog.NewTextHandler(&logs, nil))}
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
			w := httptest.NewRecorder()
			Error(w, r, tt.err)
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			var body ErrorBody
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body: %v: %s", err, w.Body)
			}
			d := body.Error
			if d.Code != tt.code || d.Message != tt.message || d.Field != tt.field || d.RequestID != "req-1" {
				t.Errorf("error = %+v, want code %q message %q field %q request_id req-1", d, tt.code, tt.message, tt.field)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if tt.retryAfter != "" && (d.RetryAfter == nil || fmt.Sprint(*d.RetryAfter) != tt.retryAfter) {
				t.Errorf("error.retry_after = %v, want %s", d.RetryAfter, tt.retryAfter)
			}
			if tt.retryAfter == "" && strings.Contains(w.Body.String(), "retry_after") {
				t.Errorf("unexpected retry_after in %s", w.Body)
			}
			if tt.code == db.EINTERNAL {
				if !strings.Contains(logs.String(), "req-1") {
					t.Errorf("internal error not logged with its request id: %s", logs.String())
				}
				if strings.Contains(w.Body.String(), "permission denied") || strings.Contains(w.Body.String(), "corrupt") {
					t.Errorf("internal details leaked: %s", w.Body)
				}
			}
			if tt.status == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestErrorWriterDetails(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	w := httptest.NewRecorder()
	Error(w, r, db.Validationf("agents.planner.timeout", "must be a positive integer"))
	golden(t, w.Body.Bytes())
}

func TestUnknownRoute(t *testing.T) {
	h := newHarness(t)
	for _, tok := range []string{"", "admin"} {
		r := h.do(req{path: "/api/v1/nope", token: tok})
		expectError(t, r, 404, "not_found")
		if tok == "admin" {
			golden(t, r.body)
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	h := newHarness(t)
	r := h.do(req{method: http.MethodDelete, path: "/api/v1/admin/nodes", token: "admin"})
	expectError(t, r, 405, "method_not_allowed")
	if allow := r.header.Get("Allow"); allow != "GET, POST" {
		t.Errorf("Allow = %q, want GET, POST", allow)
	}
	golden(t, r.body)
	// OPTIONS is not special: no CORS preflight answers.
	expectError(t, h.do(req{method: http.MethodOptions, path: "/api/v1/auth/me"}), 405, "method_not_allowed")
}

func TestPanicRecovery(t *testing.T) {
	h := newHarness(t)
	h.contract = nil // ad-hoc test route, not part of the API
	h.srv.handle(http.MethodGet, "/api/v1/test/panic", "", rateRead, func(http.ResponseWriter, *http.Request, httprouter.Params) error {
		panic("secret internal state 0xdeadbeef")
	})
	r := h.do(req{path: "/api/v1/test/panic", token: "admin"})
	e := expectError(t, r, 500, "internal")
	if e["message"] != "internal error" || strings.Contains(string(r.body), "deadbeef") {
		t.Errorf("panic body leaks or has the wrong message: %s", r.body)
	}
	golden(t, r.body)
	if logs := h.logs.String(); !strings.Contains(logs, "deadbeef") || !strings.Contains(logs, "panic serving request") {
		t.Errorf("panic not logged: %s", logs)
	}
	// The server keeps serving.
	if r := h.do(req{path: "/healthz"}); r.status != 200 {
		t.Errorf("after panic: /healthz = %d", r.status)
	}
}

func TestHandlerErrorAfterWrite(t *testing.T) {
	h := newHarness(t)
	h.contract = nil // ad-hoc test route, not part of the API
	h.srv.handle(http.MethodGet, "/api/v1/test/late", "", rateRead, func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
		_ = writeJSON(w, http.StatusOK, map[string]string{"ok": "yes"})
		return errors.New("too late")
	})
	r := h.do(req{path: "/api/v1/test/late", token: "admin"})
	if r.status != 200 || string(r.body) != "{\"ok\":\"yes\"}\n" {
		t.Errorf("got %d %s, want the handler's answer untouched", r.status, r.body)
	}
	if !strings.Contains(h.logs.String(), "error after response started") {
		t.Error("late error not logged")
	}
}

func TestDecodeJSON(t *testing.T) {
	h := newHarness(t)
	big := `{"name": "` + strings.Repeat("a", 70<<10) + `", "kind": "team"}`
	tests := []struct {
		name        string
		body        string
		contentType string
		status      int
		code        string
		msg         string // substring of error.message
		field       string
	}{
		{"Malformed", `{"name": "x",`, "", 400, "invalid_request", "malformed JSON: unexpected end of body", ""},
		{"SyntaxError", `{"name" "x"}`, "", 400, "invalid_request", "malformed JSON at byte offset 9", ""},
		{"WrongType", `{"name": 42, "kind": "team"}`, "", 400, "invalid_request", "field name: expected string, got number", "name"},
		{"WrongTopLevel", `["a"]`, "", 400, "invalid_request", "request body: expected object, got array", ""},
		{"UnknownField", `{"name": "x", "kind": "team", "parnet": "acme"}`, "", 400, "invalid_request", `unknown field "parnet"`, "parnet"},
		{"TrailingData", `{"name": "x", "kind": "team"} {}`, "", 400, "invalid_request", "unexpected data after the JSON value", ""},
		{"TrailingGarbage", `{"name": "x", "kind": "team"}garbage`, "", 400, "invalid_request", "unexpected data after the JSON value", ""},
		{"Empty", ``, "", 400, "invalid_request", "request body is empty", ""},
		{"OnlySpace", `   `, "", 400, "invalid_request", "request body is empty", ""},
		{"Null", `null`, "", 400, "invalid_request", "field name: required", "name"},
		{"MissingName", `{"kind": "team"}`, "", 400, "invalid_request", "field name: required", "name"},
		{"MissingKind", `{"name": "billing"}`, "", 400, "invalid_request", "field kind: required", "kind"},
		{"BadKind", `{"name": "billing", "kind": "org"}`, "", 400, "invalid_request", `field kind: must be "group" or "team", not "org"`, "kind"},
		{"WrongContentType", `{"name": "x", "kind": "team"}`, "text/plain", 415, "unsupported_media_type", "Content-Type must be application/json", ""},
		{"NoContentType", `{"name": "x", "kind": "team"}`, "-", 415, "unsupported_media_type", "Content-Type must be application/json", ""},
		{"TooLarge", big, "", 413, "payload_too_large", "request body exceeds 65536 bytes", ""},
		{"CharsetOK", `{"name": "billing", "kind": "team", "parent": "platform"}`, "application/json; charset=utf-8", 201, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			switch tt.contentType {
			case "":
			case "-":
				hdr["Content-Type"] = ""
			default:
				hdr["Content-Type"] = tt.contentType
			}
			r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/nodes", token: "admin", body: tt.body, header: hdr})
			if tt.code == "" {
				if r.status != tt.status {
					t.Fatalf("status = %d, want %d: %s", r.status, tt.status, r.body)
				}
				return
			}
			e := expectError(t, r, tt.status, tt.code)
			if msg, _ := e["message"].(string); !strings.Contains(msg, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", msg, tt.msg)
			}
			if f, _ := e["field"].(string); f != tt.field {
				t.Errorf("field = %q, want %q", f, tt.field)
			}
		})
	}
	t.Run("Golden", func(t *testing.T) {
		r := h.do(req{method: http.MethodPost, path: "/api/v1/admin/tokens", token: "admin", body: `{"kind": "team", "team": "payments", "write": "yes"}`})
		expectError(t, r, 400, "invalid_request")
		golden(t, r.body)
	})
}

func TestDecodeJSONOptional(t *testing.T) {
	tests := []struct {
		name string
		body string
		opts []decodeOption
		want error
	}{
		{"EmptyOptional", "", []decodeOption{optionalBody}, nil},
		{"EmptyRequired", "", nil, db.Errorf(db.EINVALID, "request body is empty; expected a JSON object")},
		{"UnknownAllowed", `{"a": 1, "b": 2}`, nil, nil},
		{"UnknownStrict", `{"a": 1, "b": 2}`, []decodeOption{strictFields}, db.Errorf(db.EINVALID, `unknown field "b"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			r.Header.Set("Content-Type", "application/json")
			var v struct {
				A int `json:"a"`
			}
			err := decodeJSON(httptest.NewRecorder(), r, &v, tt.opts...)
			if db.ErrorCode(err) != db.ErrorCode(tt.want) || db.ErrorMessage(err) != db.ErrorMessage(tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil && tt.body != "" && v.A != 1 {
				t.Errorf("decoded a = %d, want 1", v.A)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	h := newHarness(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		r := h.do(req{path: path})
		if r.status != 200 {
			t.Fatalf("%s = %d: %s", path, r.status, r.body)
		}
		if r.header.Get("X-RateLimit-Limit") != "" {
			t.Errorf("%s: public probes are not rate limited", path)
		}
	}
	failing := newHarness(t, func(c *Config) {
		c.Ready = func(context.Context) error { return errors.New("bolt: database not open") }
	})
	r := failing.do(req{path: "/readyz"})
	e := expectError(t, r, 503, "unavailable")
	if strings.Contains(fmt.Sprint(e["message"]), "bolt") {
		t.Errorf("readiness leaks the cause: %s", r.body)
	}
	if r := failing.do(req{path: "/healthz"}); r.status != 200 {
		t.Errorf("liveness depends on the store: %d", r.status)
	}
}

var requestIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestResponseHeaders(t *testing.T) {
	h := newHarness(t)
	seen := map[string]bool{}
	for _, r := range []req{
		{path: "/healthz"},
		{path: "/api/v1/auth/me", token: "admin"},
		{path: "/api/v1/auth/me"},
		{path: "/nope"},
		{method: http.MethodPut, path: "/healthz"},
		{path: "/api/v1/auth/me", token: "admin", header: map[string]string{"X-Request-Id": "0123456789abcdef0123456789abcdef"}},
	} {
		resp := h.do(r)
		id := resp.header.Get(HeaderRequestID)
		if !requestIDPattern.MatchString(id) || seen[id] {
			t.Errorf("%s %s: X-Request-Id %q is not a fresh 32-hex id", r.method, r.path, id)
		}
		seen[id] = true
		if v := resp.header.Get(HeaderVersion); v != "1.2.3-test" {
			t.Errorf("%s %s: %s = %q", r.method, r.path, HeaderVersion, v)
		}
	}
	local := h.doLocal(req{path: "/healthz"})
	if !requestIDPattern.MatchString(local.header.Get(HeaderRequestID)) || local.header.Get(HeaderVersion) == "" {
		t.Errorf("socket answer lacks headers: %v", local.header)
	}
}

func TestRequestLog(t *testing.T) {
	h := newHarness(t)
	h.do(req{path: "/api/v1/auth/me", token: "payments-read"})
	h.do(req{path: "/api/v1/auth/me", token: "raw:Bearer admin.notthesecret"})
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec["msg"] != "request" {
			continue
		}
		for _, k := range []string{"method", "route", "status", "latency", "request_id", "principal"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line lacks %s: %s", k, line)
			}
		}
		if rec["principal"] == h.ids["payments-read"] && rec["route"] == "/api/v1/auth/me" && rec["status"] == float64(200) {
			found = true
		}
	}
	if !found {
		t.Errorf("no request line for the team token: %s", h.logs.String())
	}
	logs := h.logs.String()
	for _, s := range []string{h.tokens["payments-read"], secretPart(h.tokens["payments-read"]), "notthesecret", "Authorization", "Bearer"} {
		if strings.Contains(logs, s) {
			t.Errorf("log contains %q", s)
		}
	}
}

func secretPart(tok string) string {
	_, s, _ := strings.Cut(tok, ".")
	return s
}

func TestRoutes(t *testing.T) {
	h := newHarness(t)
	want := map[string]string{
		"GET /healthz":                     "",
		"GET /readyz":                      "",
		"GET /api/v1/auth/me":              "",
		"POST /api/v1/admin/nodes":         db.PermAdminWrite,
		"GET /api/v1/admin/nodes":          db.PermAdminRead,
		"GET /api/v1/admin/teams":          db.PermAdminRead,
		"POST /api/v1/admin/tokens":        db.PermAdminWrite,
		"GET /api/v1/admin/tokens":         db.PermAdminRead,
		"POST /api/v1/admin/tokens/revoke": db.PermAdminWrite,
		"GET /api/v1/admin/backup":         db.PermAdminRead,
	}
	got := map[string]string{}
	for _, r := range h.srv.Routes() {
		got[r.Method+" "+r.Path] = r.Permission
		// Public routes are a short, reviewed list: probes and the A2A agent
		// card (public by the A2A protocol).
		if r.Public != (r.Path == "/healthz" || r.Path == "/readyz" || r.Path == "/.well-known/agent-card.json") {
			t.Errorf("%s %s: Public = %v", r.Method, r.Path, r.Public)
		}
	}
	// Other areas add routes; these must be there with these permissions.
	for route, perm := range want {
		if p, ok := got[route]; !ok || p != perm {
			t.Errorf("route %s: registered %v with permission %q, want %q", route, ok, p, perm)
		}
	}
}

func TestHandleRequiresClass(t *testing.T) {
	h := newHarness(t)
	defer func() {
		if recover() == nil {
			t.Error("registering an authenticated route without a rate class did not panic")
		}
	}()
	h.srv.handle(http.MethodGet, "/api/v1/x", "", rateNone, nil)
}

func TestNewRequiresServices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New without services did not panic")
		}
	}()
	New(Config{})
}
