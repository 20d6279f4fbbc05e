package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bearer struct{ auth string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.auth)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpCall calls a tool and returns its text and whether it succeeded.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
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
	var out map[string]any
	_ = json.Unmarshal([]byte(text), &out)
	return out, text, !res.IsError
}

// TestMCPServer drives rootcause as an MCP server through the real binary:
// `rootcause mcp` over stdio (remote URL and token, and the local socket)
// and the authenticated streamable-HTTP endpoint /api/v1/mcp.
func TestMCPServer(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	admin := issue(t, dir, "--admin")
	team := addTeam(t, s, admin, "payments", map[string]any{"evidence_bundle": bundlePath(t, "oom-after-deploy")}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)

	// stdio, against the server's URL with a team token.
	cmd := exec.Command(binary, "mcp", "--data-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "ROOTCAUSE_URL="+s.url, "ROOTCAUSE_TOKEN="+strings.TrimPrefix(team, "Bearer "))
	stdio, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("starting rootcause mcp: %v", err)
	}
	out, text, ok := mcpCall(t, stdio, "run_investigation", map[string]any{"agent_name": "planner", "message": "why is checkout failing?", "wait_seconds": 60})
	if !ok || out["status"] != "completed" {
		t.Fatalf("stdio run: %s", text)
	}
	res, _ := out["result"].(map[string]any)
	if res["summary"] == "" || len(out["tools_used"].([]any)) == 0 {
		t.Fatalf("stdio run result: %s", text)
	}
	id := out["investigation_id"].(string)
	if out, text, ok := mcpCall(t, stdio, "list_investigations", nil); !ok || !strings.Contains(text, id) || out["pagination"] == nil {
		t.Fatalf("stdio list: %s", text)
	}
	if _, text, ok := mcpCall(t, stdio, "get_effective_config", map[string]any{"team": "other"}); ok || !strings.HasPrefix(text, "forbidden:") {
		t.Fatalf("stdio effective of another team: %v %s", ok, text)
	}
	if err := stdio.Close(); err != nil {
		t.Logf("closing stdio session: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("rootcause mcp did not exit cleanly on stdin EOF: %v", cmd.ProcessState)
	}

	// stdio through the local socket (admin trust) with --team.
	local := exec.Command(binary, "mcp", "--data-dir", dir, "--team", "payments")
	local.Env = os.Environ()
	lcs, err := client.Connect(ctx, &mcp.CommandTransport{Command: local}, nil)
	if err != nil {
		t.Fatalf("starting rootcause mcp on the socket: %v", err)
	}
	if out, text, ok := mcpCall(t, lcs, "get_investigation", map[string]any{"investigation_id": id}); !ok || out["status"] != "completed" {
		t.Fatalf("socket get: %s", text)
	}
	_ = lcs.Close()

	// Streamable HTTP on the API server, as the team.
	httpCS, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/api/v1/mcp",
		HTTPClient: &http.Client{Transport: bearer{auth: team}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to /api/v1/mcp: %v", err)
	}
	defer httpCS.Close()
	if out, text, ok := mcpCall(t, httpCS, "get_investigation", map[string]any{"investigation_id": id}); !ok || out["status"] != "completed" {
		t.Fatalf("http get: %s", text)
	}
	if out, text, ok := mcpCall(t, httpCS, "get_effective_config", nil); !ok || !strings.Contains(out["evidence_bundle"].(string), "oom-after-deploy") {
		t.Fatalf("http effective: %s", text)
	}
	out, text, ok = mcpCall(t, httpCS, "run_investigation", map[string]any{"agent_name": "k8s_agent", "message": "pods restarting?", "wait_seconds": 60})
	if !ok || out["status"] != "completed" {
		t.Fatalf("http run: %s", text)
	}

	// Without a token: 401.
	r := call(t, http.MethodPost, s.url+"/api/v1/mcp", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	if r.status != http.StatusUnauthorized || r.errorCode() != "unauthorized" {
		t.Fatalf("unauthenticated: %d %s", r.status, r.raw)
	}
}
