package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpHarness is a server with a runtime whose engine calls the probe tool
// and answers with the message it was given.
func mcpHarness(t *testing.T, opts ...harnessOption) *harness {
	h := newHarness(t, opts...)
	rt := startRuntime(t, h, engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		if _, err := run.Call(ctx, "probe", map[string]any{}); err != nil {
			return nil, err
		}
		return &finding.Result{Summary: "answer to: " + req.Message, RootCause: finding.RootCause{Description: "disk full on db-1", Confidence: 80}}, nil
	}), func(ctx context.Context, team string) (*agent.Environment, error) {
		probe := tools.Tool{Spec: tools.Spec{Name: "probe", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true, Agents: []string{tools.AgentK8s, tools.AgentPlanner}},
			Run: func(context.Context, *tools.Env, json.RawMessage) (any, error) { return "ok", nil }}
		return &agent.Environment{Config: map[string]any{}, Catalog: tools.Builtin().With([]tools.Tool{probe}), Env: &tools.Env{Sources: &evidence.Sources{}}}, nil
	})
	h.srv.cfg.Investigations = rt
	return h
}

func mcpConnect(t *testing.T, h *harness, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url + "/api/v1/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: h.tokens[token]}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and returns its structured output, or the text of
// a tool error with ok false.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
	if res.IsError {
		return nil, text, false
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return out, text, true
}

func TestMCPEndpoint(t *testing.T) {
	h := mcpHarness(t)
	cs := mcpConnect(t, h, "payments-read")
	ctx := context.Background()

	if init := cs.InitializeResult(); init == nil || init.ServerInfo.Name != "rootcause" || init.ServerInfo.Version != "1.2.3-test" {
		t.Fatalf("initialize result %+v", init)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "get_effective_config,get_investigation,list_investigations,run_investigation" {
		t.Fatalf("tools %v", names)
	}

	out, text, ok := callTool(t, cs, MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "why is db-1 slow?", "wait_seconds": 20})
	if !ok {
		t.Fatalf("run: %s", text)
	}
	if out["status"] != "completed" || !strings.Contains(text, "answer to: why is db-1 slow?") {
		t.Fatalf("run: %v", out)
	}
	if used, _ := out["tools_used"].([]any); len(used) != 1 || used[0] != "probe" {
		t.Fatalf("tools_used %v", out["tools_used"])
	}
	id := out["investigation_id"].(string)

	got, _, ok := callTool(t, cs, MCPToolGet, map[string]any{"investigation_id": id})
	if !ok || got["status"] != "completed" || got["investigation_id"] != id {
		t.Fatalf("get: %v", got)
	}
	list, _, ok := callTool(t, cs, MCPToolList, map[string]any{"status": "completed", "limit": 5})
	if items, _ := list["investigations"].([]any); !ok || len(items) != 1 {
		t.Fatalf("list: %v", list)
	}
	eff, text, ok := callTool(t, cs, MCPToolEffective, nil)
	if !ok || eff["team_name"] != "payments" || eff["org_id"] != "acme" {
		t.Fatalf("effective: %v %s", eff, text)
	}

	// wait_seconds 0 returns at once with the id to poll.
	out, text, ok = callTool(t, cs, MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "again", "wait_seconds": 0})
	if !ok || out["investigation_id"] == "" {
		t.Fatalf("run without waiting: %v %s", out, text)
	}

	// Errors are tool errors with the API's code.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{MCPToolRun, map[string]any{"agent_name": "nope", "message": "x"}, "invalid_request"},
		{MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "x", "wait_seconds": 9999}, "wait_seconds"},
		{MCPToolGet, map[string]any{"investigation_id": "inv_missing"}, "not_found"},
		{MCPToolList, map[string]any{"status": "weird"}, "invalid_request"},
		{MCPToolEffective, map[string]any{"team": "search"}, "forbidden"}, // a team token names another team
		{MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "x", "team": "search"}, "forbidden"},
	} {
		if _, text, ok := callTool(t, cs, tc.tool, tc.args); ok || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: ok %v %q, want a tool error with %q", tc.tool, tc.args, ok, text, tc.want)
		}
	}
	// Another team does not see payments' investigations.
	other := mcpConnect(t, h, "search-write")
	if _, text, ok := callTool(t, other, MCPToolGet, map[string]any{"investigation_id": id}); ok || !strings.Contains(text, "not_found") {
		t.Errorf("search reads payments' investigation: %v %s", ok, text)
	}
	// An admin names the team.
	admin := mcpConnect(t, h, "admin")
	if _, text, ok := callTool(t, admin, MCPToolEffective, nil); ok || !strings.Contains(text, "team") {
		t.Errorf("admin without team: %v %s", ok, text)
	}
	if eff, text, ok := callTool(t, admin, MCPToolEffective, map[string]any{"team": "search"}); !ok || eff["team_name"] != "search" {
		t.Errorf("admin with team: %v %s", eff, text)
	}
	if got, text, ok := callTool(t, admin, MCPToolGet, map[string]any{"investigation_id": id}); !ok || got["status"] != "completed" {
		t.Errorf("admin get: %v %s", got, text)
	}
}

func TestMCPEndpointNeedsToken(t *testing.T) {
	h := mcpHarness(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	accept := map[string]string{"Accept": "application/json, text/event-stream"}
	expectError(t, h.do(req{method: "POST", path: "/api/v1/mcp", body: body, header: accept}), 401, "unauthorized")
	expectError(t, h.do(req{method: "POST", path: "/api/v1/mcp", body: body, header: accept, token: "raw:Bearer rct_nope"}), 401, "unauthorized")
	h.contract = nil // the MCP transport's own answers are JSON-RPC, checked by the client tests
	res := h.do(req{method: "POST", path: "/api/v1/mcp", body: body, header: accept, token: "payments-read"})
	if res.status != 200 || !strings.Contains(string(res.body), `"serverInfo"`) {
		t.Fatalf("initialize with a token: %d %s", res.status, res.body)
	}
	if res := h.do(req{method: "GET", path: "/api/v1/mcp", token: "payments-read"}); res.status != 405 {
		t.Fatalf("GET: %d %s", res.status, res.body)
	}
}

// The run_investigation tool is charged to the run rate class.
func TestMCPRunIsRateLimitedAsRun(t *testing.T) {
	h := mcpHarness(t, func(c *Config) { c.RateLimits.Run = 1 })
	cs := mcpConnect(t, h, "payments-read")
	if _, text, ok := callTool(t, cs, MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "one", "wait_seconds": 0}); !ok {
		t.Fatalf("first run: %s", text)
	}
	if _, text, ok := callTool(t, cs, MCPToolRun, map[string]any{"agent_name": "k8s_agent", "message": "two", "wait_seconds": 0}); ok || !strings.Contains(text, "rate_limited") {
		t.Fatalf("second run: %v %s", ok, text)
	}
	if _, text, ok := callTool(t, cs, MCPToolList, nil); !ok {
		t.Fatalf("list after the run limit: %s", text)
	}
}
