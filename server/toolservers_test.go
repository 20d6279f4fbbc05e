package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/a2a"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/agent/toolserver"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

func TestAdminToolServers(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tools":
			fmt.Fprint(w, `{"tools":[{"name":"lookup","description":"Looks up a ticket","parameters":{"type":"object"}}]}`)
		case "/health":
			fmt.Fprint(w, `{}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	reg := toolserver.NewRegistry(toolserver.Options{Config: func(context.Context) (map[string]any, error) {
		return map[string]any{"tool_servers": map[string]any{
			"tickets": map[string]any{"transport": "http", "url": ts.URL},
			"down":    map[string]any{"transport": "http", "url": "http://127.0.0.1:1"},
		}}, nil
	}})
	defer reg.Close()
	h := newHarness(t, func(c *Config) { c.ToolServers = reg })

	res := h.do(req{path: "/api/v1/admin/tool-servers", token: "admin"})
	if res.status != 200 {
		t.Fatalf("list: %d %s", res.status, res.body)
	}
	var body struct {
		ToolServers []struct {
			Name    string
			Enabled bool
			Health  struct {
				OK        bool    `json:"ok"`
				CheckedAt *string `json:"checked_at"`
				Error     string  `json:"error"`
			}
			Tools []struct{ Name, Description string }
		} `json:"tool_servers"`
	}
	if err := json.Unmarshal(res.body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.ToolServers) != 2 {
		t.Fatalf("%s", res.body)
	}
	down, tickets := body.ToolServers[0], body.ToolServers[1]
	if down.Name != "down" || down.Health.OK || down.Health.Error == "" || down.Health.CheckedAt == nil {
		t.Fatalf("down: %s", res.body)
	}
	if tickets.Name != "tickets" || !tickets.Health.OK || len(tickets.Tools) != 1 || tickets.Tools[0].Name != "lookup" {
		t.Fatalf("tickets: %s", res.body)
	}

	res = h.do(req{method: "POST", path: "/api/v1/admin/tool-servers/tickets/refresh", token: "admin"})
	if res.status != 200 || !strings.Contains(string(res.body), `"lookup"`) {
		t.Fatalf("refresh: %d %s", res.status, res.body)
	}
	res = h.do(req{method: "POST", path: "/api/v1/admin/tool-servers/nope/refresh", token: "admin"})
	if res.status != 404 {
		t.Fatalf("refresh unknown: %d %s", res.status, res.body)
	}
	for _, tok := range []string{"payments-read", "payments-write"} {
		if res := h.do(req{path: "/api/v1/admin/tool-servers", token: tok}); res.status != 403 {
			t.Fatalf("team token %s list: %d", tok, res.status)
		}
		if res := h.do(req{method: "POST", path: "/api/v1/admin/tool-servers/tickets/refresh", token: tok}); res.status != 403 {
			t.Fatalf("team token %s refresh: %d", tok, res.status)
		}
	}
}

// engineFunc adapts a function to agent.Engine.
type engineFunc func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error)

func (f engineFunc) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	return f(ctx, req, run)
}

func startRuntime(t *testing.T, h *harness, eng agent.Engine, env func(ctx context.Context, team string) (*agent.Environment, error)) *agent.Runtime {
	rt := agent.NewRuntime(agent.RuntimeConfig{Store: h.db, Engine: eng, Environment: env})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rt.Stop(ctx)
	})
	return rt
}

// TestA2ATwoInstances: instance A's planner delegates through the tool
// a2a:peer to instance B, whose investigation runs and whose answer feeds
// A's result.
func TestA2ATwoInstances(t *testing.T) {
	// Instance B: its engine answers with a fixed finding.
	hb := newHarness(t)
	rtB := startRuntime(t, hb, engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		return &finding.Result{Summary: "peer saw: " + req.Message, RootCause: finding.RootCause{Description: "disk full on db-1", Confidence: 80}}, nil
	}), func(ctx context.Context, team string) (*agent.Environment, error) {
		// One read-only tool with no integration counts as a data source.
		probe := tools.Tool{Spec: tools.Spec{Name: "probe", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true, Agents: []string{tools.AgentK8s}},
			Run: func(context.Context, *tools.Env, json.RawMessage) (any, error) { return "ok", nil }}
		return &agent.Environment{Config: map[string]any{}, Catalog: tools.Builtin().With([]tools.Tool{probe}), Env: &tools.Env{Sources: &evidence.Sources{}}}, nil
	})
	hb.srv.cfg.Investigations = rtB
	t.Setenv("ROOTCAUSE_PEER_TOKEN", "Bearer "+hb.tokens["payments-read"])

	// The public agent card names the authenticated endpoint.
	res := hb.do(req{path: "/.well-known/agent-card.json"})
	if res.status != 200 || !strings.Contains(string(res.body), hb.url+"/api/v1/a2a") {
		t.Fatalf("card: %d %s", res.status, res.body)
	}
	// The endpoint needs a token.
	if res := hb.do(req{method: "POST", path: "/api/v1/a2a", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`}); res.status != 401 {
		t.Fatalf("unauthenticated a2a: %d", res.status)
	}

	// Instance A: the team lists the peer; the planner's toolkit has a2a:peer.
	peers := a2a.NewPeers(a2a.Options{Resolver: envResolver{}})
	teamCfg := map[string]any{
		"a2a_peers":  map[string]any{"peer": map[string]any{"url": hb.url, "headers": map[string]any{"Authorization": "env:ROOTCAUSE_PEER_TOKEN"}, "timeout": float64(20)}},
		"a2a_agents": []any{"peer"},
	}
	ha := newHarness(t)
	rtA := startRuntime(t, ha, engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
		if !run.Has("a2a:peer") {
			return nil, fmt.Errorf("planner toolkit lacks a2a:peer: %v", req.Agent.Tools)
		}
		out, err := run.Call(ctx, "a2a:peer", map[string]any{"message": "why is checkout slow?", "context": map[string]string{"service": "checkout"}})
		if err != nil {
			return nil, err
		}
		ans := out.(*a2a.Answer)
		return &finding.Result{Summary: "delegated: " + ans.Text, RootCause: finding.RootCause{Description: ans.Text, Confidence: 70}}, nil
	}), func(ctx context.Context, team string) (*agent.Environment, error) {
		ps, err := peers.Tools(ctx, teamCfg)
		if err != nil {
			return nil, err
		}
		return &agent.Environment{Config: teamCfg, Catalog: tools.Builtin().With(ps), Env: &tools.Env{Sources: &evidence.Sources{}}}, nil
	})

	ha.srv.cfg.Investigations = rtA
	res = ha.do(req{method: "POST", path: "/api/v1/agents/run", token: "payments-read", body: `{"agent_name":"planner","message":"checkout latency doubled"}`})
	if res.status != 200 {
		t.Fatalf("run on A: %d %s", res.status, res.body)
	}
	var run struct {
		Result    finding.Result `json:"result"`
		ToolsUsed []string       `json:"tools_used"`
	}
	if err := json.Unmarshal(res.body, &run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(run.Result.RootCause.Description, "disk full on db-1") || !strings.Contains(run.Result.Summary, "why is checkout slow?") {
		t.Fatalf("A's result does not carry B's answer: %+v", run.Result)
	}
	if len(run.ToolsUsed) != 1 || run.ToolsUsed[0] != "a2a:peer" {
		t.Fatalf("tools_used: %v", run.ToolsUsed)
	}
	// B ran the investigation for the payments team.
	list, _, err := rtB.List(context.Background(), db.InvestigationFilter{Team: "payments"})
	if err != nil || len(list) != 1 || list[0].Agent != "planner" {
		t.Fatalf("B's investigations: %v %+v", err, list)
	}
}

type envResolver struct{}

func (envResolver) Resolve(_ context.Context, ref string) (string, error) {
	name, ok := strings.CutPrefix(ref, "env:")
	if !ok {
		return "", fmt.Errorf("only env: in this test")
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("%s is not set", name)
	}
	return v, nil
}
