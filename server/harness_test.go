package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/server/openapitest"
)

// fakeClock is a settable clock shared by the server and the store.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is a Server over a real bbolt database, served on 127.0.0.1 and
// on a unix socket, with an org tree and a few tokens.
type harness struct {
	t      *testing.T
	db     *db.DB
	srv    *Server
	clock  *fakeClock
	logs   *syncBuffer
	url    string
	local  *http.Client // talks to LocalHandler over a unix socket
	tokens map[string]string
	ids    map[string]string
	// contract validates every answer against openapi.json (see
	// openapi_test.go); a test that registers ad-hoc handlers sets it nil.
	contract *openapitest.Checker
}

type harnessOption func(*Config)

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	clock := newClock()
	store, err := db.Open(filepath.Join(t.TempDir(), db.FileName), db.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("opening db: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	if _, err := store.EnsureOrg(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []db.Node{
		{Name: "platform", Parent: "acme", Kind: db.KindGroup},
		{Name: "payments", Parent: "platform", Kind: db.KindTeam},
		{Name: "search", Parent: "acme", Kind: db.KindTeam},
	} {
		if _, err := store.CreateNode(ctx, n); err != nil {
			t.Fatalf("creating node %s: %v", n.Name, err)
		}
	}
	h := &harness{t: t, db: store, clock: clock, logs: &syncBuffer{}, tokens: map[string]string{}, ids: map[string]string{},
		contract: openapitest.New(t, OpenAPIDocument())}
	for name, req := range map[string]db.IssueTokenRequest{
		"admin":          {Kind: db.TokenAdmin, Name: "ops"},
		"payments-read":  {Kind: db.TokenTeam, Team: "payments", Name: "payments ci"},
		"payments-write": {Kind: db.TokenTeam, Team: "payments", Write: true},
		"search-write":   {Kind: db.TokenTeam, Team: "search", Write: true},
	} {
		h.issue(name, req)
	}

	cfg := Config{
		Nodes:   store,
		Tokens:  store,
		Backup:  store.WriteBackup,
		Logger:  slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Version: "1.2.3-test",
		Now:     clock.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	h.srv = New(cfg)
	// Served as `rootcause serve` serves it: through CorkListener.
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.Listener = CorkListener(ts.Listener)
	ts.Config.ConnContext = CorkContext
	ts.Start()
	t.Cleanup(ts.Close)
	h.url = ts.URL

	sock := filepath.Join(t.TempDir(), "rootcause.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listening on socket: %v", err)
	}
	ls := &http.Server{Handler: h.srv.LocalHandler()}
	go ls.Serve(ln)
	t.Cleanup(func() { ls.Close() })
	h.local = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	return h
}

// issue creates a token directly in the store and remembers it by name.
func (h *harness) issue(name string, req db.IssueTokenRequest) string {
	h.t.Helper()
	secret, tok, err := h.db.IssueToken(context.Background(), req)
	if err != nil {
		h.t.Fatalf("issuing %s: %v", name, err)
	}
	h.tokens[name], h.ids[name] = secret, tok.ID
	return secret
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// errorCode returns error.code of an error answer.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	if e == nil {
		t.Fatalf("no error object in %s", r.body)
	}
	code, _ := e["code"].(string)
	return code
}

// req describes one request; token is a harness token name or, prefixed
// with "raw:", a literal Authorization header value.
type req struct {
	method, path, token, body string
	header                    map[string]string
}

func (h *harness) do(r req) response {
	h.t.Helper()
	return h.send(http.DefaultClient, h.url, r)
}

func (h *harness) doLocal(r req) response {
	h.t.Helper()
	if r.header == nil {
		r.header = map[string]string{}
	}
	if _, ok := r.header["Host"]; !ok {
		r.header["Host"] = LocalHost
	}
	return h.send(h.local, "http://"+LocalHost, r)
}

func (h *harness) send(c *http.Client, base string, r req) response {
	h.t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.HasPrefix(r.token, "raw:"):
		hr.Header.Set("Authorization", strings.TrimPrefix(r.token, "raw:"))
	case r.token != "":
		tok, ok := h.tokens[r.token]
		if !ok {
			h.t.Fatalf("no token named %q", r.token)
		}
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range r.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		if v == "" {
			hr.Header.Del(k)
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := c.Do(hr)
	if err != nil {
		h.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading answer: %v", err)
	}
	if h.contract != nil {
		if err := h.contract.Check(hr, []byte(r.body), resp.StatusCode, resp.Header, b); err != nil {
			h.t.Errorf("OpenAPI contract: %v", err)
		}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// expectError asserts an error answer's status, code and shape.
func expectError(t *testing.T, r response, status int, code string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("body is not {\"error\": {...}}: %s", r.body)
	}
	if e["code"] != code {
		t.Errorf("error.code = %v, want %s; body %s", e["code"], code, r.body)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("error.message is empty: %s", r.body)
	}
	if id := r.header.Get(HeaderRequestID); id == "" || e["request_id"] != id {
		t.Errorf("error.request_id = %v, X-Request-Id = %q; want equal and non-empty", e["request_id"], id)
	}
	return e
}

// golden compares v (a JSON body) with testdata/<test name>.json after
// normalising volatile fields; UPDATE_GOLDEN=1 rewrites the file.
func golden(t *testing.T, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("golden: body is not JSON: %v: %s", err, body)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(normalise(v)); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	path := filepath.Join("testdata", name+".json")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with UPDATE_GOLDEN=1 to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("body differs from %s\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// volatile names the fields whose values change from run to run.
var volatile = map[string]string{
	"request_id":   "<request_id>",
	"token_id":     "<token_id>",
	"token":        "<token>",
	"created_at":   "<time>",
	"expires_at":   "<time>",
	"revoked_at":   "<time>",
	"last_used_at": "<time>",
}

func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if repl, ok := volatile[k]; ok && val != nil {
				x[k] = repl
				continue
			}
			x[k] = normalise(val)
		}
	case []any:
		for i := range x {
			x[i] = normalise(x[i])
		}
	}
	return v
}
