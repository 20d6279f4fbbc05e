package toolserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/secretref"
)

// contractServer is a plain-contract tool server with misbehaving tools:
// hang (never answers), die (drops the connection), garbage (non-JSON
// 200), ghost (listed but 404), refuse (400 with a message).
type contractServer struct {
	srv       *httptest.Server
	calls     atomic.Int64
	lastAuth  atomic.Value
	listShape atomic.Value // "object", "array" or "garbage"
	lists     atomic.Int64
	release   chan struct{}
}

func newContractServer(t *testing.T) *contractServer {
	cs := &contractServer{release: make(chan struct{})}
	cs.listShape.Store("object")
	mux := http.NewServeMux()
	tl := []map[string]any{
		{"name": "lookup", "description": "Looks up a ticket", "parameters": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []string{"id"}}},
		{"name": "hang", "description": "never answers"},
		{"name": "die", "description": "drops the connection"},
		{"name": "garbage", "description": "answers HTML"},
		{"name": "ghost", "description": "listed, but not there"},
		{"name": "refuse", "description": "refuses its arguments"},
		{"name": "wipe", "description": "deletes things", "destructive": true},
	}
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		cs.lastAuth.Store(r.Header.Get("Authorization"))
		cs.lists.Add(1)
		switch cs.listShape.Load() {
		case "array":
			_ = json.NewEncoder(w).Encode(tl)
		case "garbage":
			_, _ = w.Write([]byte("<html>oops</html>"))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"tools": tl})
		}
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) })
	mux.HandleFunc("POST /tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		cs.calls.Add(1)
		cs.lastAuth.Store(r.Header.Get("Authorization"))
		var body struct {
			Parameters map[string]any `json:"parameters"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		switch r.PathValue("name") {
		case "lookup":
			_ = json.NewEncoder(w).Encode(map[string]any{"ticket": body.Parameters["id"], "status": "open"})
		case "hang":
			select {
			case <-r.Context().Done():
			case <-cs.release:
			}
		case "die":
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			_ = c.Close()
		case "garbage":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>500 internal</html>"))
		case "refuse":
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error": "id must look like TCK-123"}`))
		default:
			http.NotFound(w, r)
		}
	})
	cs.srv = httptest.NewServer(mux)
	t.Cleanup(func() { close(cs.release); cs.srv.Close() })
	return cs
}

type mapResolver map[string]string

func (m mapResolver) Resolve(_ context.Context, ref string) (string, error) {
	if v, ok := m[ref]; ok {
		return v, nil
	}
	return "", &evidence.Error{Code: "not_found", Source: "secret"}
}

var _ secretref.Resolver = mapResolver{}

func orgConfig(servers map[string]any) func(context.Context) (map[string]any, error) {
	return func(context.Context) (map[string]any, error) {
		return map[string]any{"tool_servers": servers}, nil
	}
}

func newHTTPRegistry(t *testing.T, cs *contractServer, timeout float64) *Registry {
	r := NewRegistry(Options{
		Config: orgConfig(map[string]any{
			"tickets": map[string]any{"transport": "http", "url": cs.srv.URL + "/", "timeout": timeout,
				"headers": map[string]any{"Authorization": "env:TICKETS_AUTH"}},
			"off": map[string]any{"transport": "http", "url": cs.srv.URL, "enabled": false},
		}),
		Resolver: mapResolver{"env:TICKETS_AUTH": "Bearer s3cret"},
	})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func callTool(t *testing.T, ts []tools.Tool, name string, args string) (any, error) {
	t.Helper()
	for _, tl := range ts {
		if tl.Name == name {
			return tl.Run(context.Background(), &tools.Env{}, json.RawMessage(args))
		}
	}
	t.Fatalf("no tool %s", name)
	return nil, nil
}

func TestHTTPContract(t *testing.T) {
	cs := newContractServer(t)
	r := newHTTPRegistry(t, cs, 1)
	ctx := context.Background()

	ts, err := r.Tools(ctx, "tickets")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 7 {
		t.Fatalf("got %d tools", len(ts))
	}
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name] = tl
	}
	lk := byName["tickets:lookup"]
	if lk.Integration != "toolserver:tickets" || !lk.ReadOnly || !strings.Contains(string(lk.Parameters), `"required"`) {
		t.Fatalf("lookup spec: %+v", lk.Spec)
	}
	if byName["tickets:wipe"].ReadOnly {
		t.Fatal("a tool marked destructive must not be read-only")
	}
	if got := string(byName["tickets:hang"].Parameters); got != `{"type":"object","properties":{}}` {
		t.Fatalf("default schema: %s", got)
	}
	if a, _ := cs.lastAuth.Load().(string); a != "Bearer s3cret" {
		t.Fatalf("header from secret ref not sent: %q", a)
	}

	out, err := callTool(t, ts, "tickets:lookup", `{"id":"TCK-1"}`)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*Result)
	if res.Server != "tickets" || res.Tool != "lookup" || !strings.Contains(string(res.Content.(json.RawMessage)), `"ticket":"TCK-1"`) {
		t.Fatalf("result: %+v", res)
	}

	start := time.Now()
	_, err = callTool(t, ts, "tickets:hang", `{}`)
	if evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("hang: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("hang took %s with a 1s timeout", d)
	}

	_, err = callTool(t, ts, "tickets:die", `{}`)
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "toolserver:tickets" {
		t.Fatalf("die: %v", err)
	}

	_, err = callTool(t, ts, "tickets:garbage", `{}`)
	if evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("garbage: %v", err)
	}

	_, err = callTool(t, ts, "tickets:refuse", `{}`)
	if evidence.CodeOf(err) != evidence.CodeInvalid || !strings.Contains(err.Error(), "TCK-123") {
		t.Fatalf("refuse: %v", err)
	}

	_, err = callTool(t, ts, "tickets:ghost", `{}`)
	if evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "404") {
		t.Fatalf("ghost: %v", err)
	}
	// The lie marks discovery stale: the next lookup asks the server again.
	cs.listShape.Store("array")
	before := cs.lists.Load()
	if _, err := r.Tools(ctx, "tickets"); err != nil {
		t.Fatalf("re-discovery (bare array): %v", err)
	}
	if cs.lists.Load() != before+1 {
		t.Fatal("a tool that 404s must make the next lookup re-discover")
	}
	if _, err := r.Tools(ctx, "tickets"); err != nil || cs.lists.Load() != before+1 {
		t.Fatalf("discovery must be cached: %v", err)
	}

	// Disabled and unknown servers.
	if _, err := r.Tools(ctx, "off"); evidence.CodeOf(err) != evidence.CodeNotConfigured {
		t.Fatalf("disabled: %v", err)
	}
	if _, err := r.Tools(ctx, "nope"); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Fatalf("unknown: %v", err)
	}
	if !r.KnownTool("tickets:lookup") || r.KnownTool("tickets:no_such_tool") || r.KnownTool("nope:x") || r.KnownTool("lookup") {
		t.Fatal("KnownTool")
	}
}

func TestHTTPDiscoveryGarbageAndRefresh(t *testing.T) {
	cs := newContractServer(t)
	cs.listShape.Store("garbage")
	r := newHTTPRegistry(t, cs, 5)
	ctx := context.Background()
	_, err := r.Tools(ctx, "tickets")
	if evidence.CodeOf(err) != evidence.CodeUnavailable || !strings.Contains(err.Error(), "GET /tools") {
		t.Fatalf("garbage discovery: %v", err)
	}
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[1].Name != "tickets" || st[1].Health == nil || st[1].Health.OK || st[1].Health.Error == "" {
		t.Fatalf("status: %+v", st)
	}
	if st[0].Name != "off" || st[0].Enabled || st[0].Health != nil {
		t.Fatalf("disabled status: %+v", st[0])
	}
	cs.listShape.Store("object")
	infos, err := r.Refresh(ctx, "tickets")
	if err != nil || len(infos) != 7 {
		t.Fatalf("refresh: %v %d", err, len(infos))
	}
	st, _ = r.Status(ctx)
	if !st[1].Health.OK || st[1].Health.Tools != 7 || len(st[1].Tools) != 7 {
		t.Fatalf("status after refresh: %+v", st[1])
	}
}

func TestHTTPUnreachableInCatalog(t *testing.T) {
	cs := newContractServer(t)
	url := cs.srv.URL
	cs.srv.Close()
	r := NewRegistry(Options{Config: orgConfig(nil)})
	defer r.Close()
	team := map[string]any{
		"tool_servers": map[string]any{"down": map[string]any{"transport": "http", "url": url}},
		"mcp_servers":  []any{"down"},
		"agents":       map[string]any{"investigation_agent": map[string]any{"enable_extra_tools": []any{"down:lookup"}}},
	}
	cat, err := r.CatalogFor(context.Background(), tools.Builtin(), team)
	if err != nil {
		t.Fatal(err)
	}
	s := &tools.Session{Catalog: cat, Toolkit: []string{"down:lookup"}}
	_, err = s.Call(context.Background(), "down:lookup", map[string]any{})
	if evidence.CodeOf(err) != evidence.CodeUnavailable || evidence.SourceOf(err) != "toolserver:down" {
		t.Fatalf("unreachable: %v", err)
	}
	if got := s.ToolsUsed(); len(got) != 1 || got[0] != "down:lookup" {
		t.Fatalf("tools_used: %v", got)
	}
}

func TestDefinitions(t *testing.T) {
	d := Definitions(map[string]any{"tool_servers": map[string]any{
		"a":   map[string]any{"transport": "mcp-stdio", "command": "node", "args": []any{"x", "stdio"}, "env": map[string]any{"K": "env:K"}, "timeout": float64(7)},
		"b":   map[string]any{"transport": "bogus"},
		"c":   map[string]any{"transport": "mcp-http", "url": "http://127.0.0.1:1/mcp", "enabled": false},
		"bad": "x",
	}})
	if len(d) != 2 || d["a"].Timeout != 7*time.Second || d["a"].Args[1] != "stdio" || d["a"].Env["K"] != "env:K" || !d["a"].Enabled || d["c"].Enabled {
		t.Fatalf("%+v", d)
	}
}
