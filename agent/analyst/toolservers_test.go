package analyst

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/tools"
)

// catRun is an agent.Run over a tools.Session that exposes its catalog, as
// the runtime's Run does.
type catRun struct{ *tools.Session }

func (r catRun) Step(string, int, int)   {}
func (r catRun) Env() *tools.Env         { return r.Session.Env }
func (r catRun) Catalog() *tools.Catalog { return r.Session.Catalog }
func (r catRun) Sub(a agent.Agent) agent.Run {
	used := r.Session.Used
	if used == nil {
		used = &tools.UsedTools{}
		r.Session.Used = used
	}
	return catRun{&tools.Session{Catalog: r.Session.Catalog, Env: r.Session.Env, Toolkit: a.Tools, Used: used}}
}

func TestConsultToolServers(t *testing.T) {
	var echoed []string
	mk := func(name, schema string, readOnly bool) tools.Tool {
		return tools.Tool{
			Spec: tools.Spec{Name: name, Parameters: json.RawMessage(schema), ReadOnly: readOnly, Integration: "toolserver:everything"},
			Run: func(_ context.Context, _ *tools.Env, raw json.RawMessage) (any, error) {
				echoed = append(echoed, name+" "+string(raw))
				return "Echo: " + string(raw), nil
			},
		}
	}
	cat := tools.NewCatalog([]tools.Tool{
		mk("everything:echo", `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`, true),
		mk("everything:get-sum", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, true),
		mk("everything:delete-all", `{"type":"object","properties":{"message":{"type":"string"}}}`, false),
	})
	kit := []string{"everything:echo", "everything:get-sum", "everything:delete-all"}
	sess := &tools.Session{Catalog: cat, Toolkit: kit, Env: &tools.Env{Sources: &evidence.Sources{}, WriteActions: true}}
	req := &agent.Request{Agent: agent.Agent{Name: "k8s_agent", Tools: kit}, Message: "why is checkout failing?",
		Context: map[string]string{"service": "checkout"}}
	notes := New(Options{}).consultToolServers(context.Background(), req, catRun{sess})

	if len(echoed) != 1 || !strings.Contains(echoed[0], `"message":"why is checkout failing?"`) {
		t.Fatalf("calls = %v, want one echo with the message", echoed)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"tool everything:echo answered: Echo:", `tool everything:get-sum was not consulted: it needs parameter "a"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "delete-all") {
		t.Errorf("a tool that changes things was consulted:\n%s", joined)
	}
	if used := sess.ToolsUsed(); len(used) != 1 || used[0] != "everything:echo" {
		t.Errorf("tools_used = %v", used)
	}
}
