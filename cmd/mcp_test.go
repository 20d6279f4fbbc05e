package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rootcause/rootcause/server"
)

// fakeAPI is a rootcause API answering the routes the MCP backend calls:
// an investigation that completes on the third status poll.
type fakeAPI struct {
	mu    sync.Mutex
	paths []string
	polls atomic.Int32
	auth  []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.Method+" "+r.URL.RequestURI())
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	w.Header().Set(server.HeaderVersion, "test")
	w.Header().Set("Content-Type", "application/json")
	write := func(status int, v any) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/v1/agents/run":
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["agent_name"] == "nope" {
			write(400, map[string]any{"error": map[string]any{"code": "invalid_request", "message": "agent_name: unknown agent \"nope\""}})
			return
		}
		if body["async"] != true {
			write(500, map[string]any{"error": map[string]any{"code": "internal_error", "message": "want async"}})
			return
		}
		write(202, map[string]any{"investigation_id": "inv_1", "status": "pending", "poll_url": "/api/v1/agents/status/inv_1"})
	case r.URL.Path == "/api/v1/agents/status/inv_1":
		if f.polls.Add(1) < 3 {
			write(200, map[string]any{"investigation_id": "inv_1", "status": "running"})
			return
		}
		write(200, map[string]any{"investigation_id": "inv_1", "status": "completed", "result": map[string]any{"summary": "disk full"}, "tools_used": []string{"list_pods"}})
	case r.URL.Path == "/api/v1/agents/investigations":
		write(200, map[string]any{"investigations": []any{}, "pagination": map[string]int{"total": 0, "limit": 3, "offset": 0}})
	case r.URL.Path == "/api/v1/config/me/effective":
		write(200, map[string]any{"team_name": r.URL.Query().Get("team")})
	default:
		write(404, map[string]any{"error": map[string]any{"code": "not_found", "message": "no route"}})
	}
}

// TestMCPStdioBackend runs the MCP server of `rootcause mcp` over the SDK's
// in-memory transport, its tools calling a fake API with the CLI's client.
func TestMCPStdioBackend(t *testing.T) {
	api := &fakeAPI{}
	ts := httptest.NewServer(api)
	defer ts.Close()
	c, err := apiClient(ts.URL, "rct_secret", t.TempDir(), "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewMCPServer(&mcpClient{c: c, team: "payments", poll: 10 * time.Millisecond}, "9.9.9")
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return text, !res.IsError
	}
	text, ok := call(server.MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "why?", "wait_seconds": 10})
	if !ok || !strings.Contains(text, `"completed"`) || !strings.Contains(text, "disk full") {
		t.Fatalf("run: %v %s", ok, text)
	}
	if api.polls.Load() != 3 {
		t.Errorf("%d polls, want 3", api.polls.Load())
	}
	text, ok = call(server.MCPToolRun, map[string]any{"agent_name": "nope", "message": "why?"})
	if ok || text != `invalid_request: agent_name: unknown agent "nope"` {
		t.Errorf("unknown agent: %v %q", ok, text)
	}
	if text, ok = call(server.MCPToolList, map[string]any{"limit": 3, "status": "completed"}); !ok || !strings.Contains(text, "pagination") {
		t.Errorf("list: %v %s", ok, text)
	}
	if text, ok = call(server.MCPToolEffective, map[string]any{"team": "search"}); !ok || !strings.Contains(text, `"search"`) {
		t.Errorf("effective with team: %v %s", ok, text)
	}
	if text, ok = call(server.MCPToolGet, map[string]any{"investigation_id": "inv_2"}); ok || !strings.HasPrefix(text, "not_found:") {
		t.Errorf("get unknown: %v %s", ok, text)
	}

	api.mu.Lock()
	defer api.mu.Unlock()
	want := []string{
		"POST /api/v1/agents/run?team=payments",
		"GET /api/v1/agents/status/inv_1?team=payments",
		"GET /api/v1/agents/investigations?limit=3&status=completed&team=payments",
		"GET /api/v1/config/me/effective?team=search",
		"GET /api/v1/agents/status/inv_2?team=payments",
	}
	joined := strings.Join(api.paths, "\n")
	for _, w := range want {
		if !strings.Contains(joined, w) {
			t.Errorf("no request %s in\n%s", w, joined)
		}
	}
	for _, a := range api.auth {
		if a != "Bearer rct_secret" {
			t.Fatalf("Authorization %q", a)
		}
	}
}
