package agent

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
)

// run is the runtime's Run: a tools.Session for the agent's toolkit, with
// progress and tool calls recorded on the investigation as they happen.
type run struct {
	rt      *Runtime
	id      string
	env     *Environment
	agent   string // the agent the session serves (set by sessionFor)
	session *tools.Session
	used    *tools.UsedTools
	log     *eventLog // buffered progress and tool-call events (eventlog.go)

	mu       sync.Mutex
	usageAcc *db.Usage
	calls    int
}

var _ Run = (*run)(nil)

// sessionFor returns the session of agent a's toolkit and binds the run to
// a (its name selects agents.<name>.require_llm).
func (r *run) sessionFor(a Agent) *tools.Session {
	r.agent = a.Name
	return &tools.Session{
		Catalog: r.env.Catalog,
		Env:     r.env.Env,
		Toolkit: a.Tools,
		Used:    r.used,
		OnCall: func(name string, d time.Duration, err error) {
			r.mu.Lock()
			r.calls++
			r.mu.Unlock()
			data := map[string]any{"tool": name, "duration_ms": d.Milliseconds(), "ok": err == nil}
			if err != nil {
				data["error"] = err.Error()
			}
			r.log.add("tool_call", data, nil)
			if r.rt.cfg.OnToolCall != nil {
				r.rt.cfg.OnToolCall(name, d, err)
			}
		},
	}
}

// Call runs a tool within the agent's toolkit.
func (r *run) Call(ctx context.Context, name string, args any) (any, error) {
	return r.session.Call(ctx, name, args)
}

// Has reports whether the agent may call name.
func (r *run) Has(name string) bool { return r.session.Has(name) }

// Step records progress on the investigation (stored within
// EventFlushInterval, or with the final record).
func (r *run) Step(current string, completed, total int) {
	if total < completed {
		total = completed
	}
	p := &db.Progress{CurrentStep: current, StepsCompleted: completed, StepsTotal: total}
	r.log.add("step", p, p)
}

// Sub returns a Run limited to another agent's toolkit, recording into the
// same investigation.
func (r *run) Sub(a Agent) Run {
	sub := &run{rt: r.rt, id: r.id, env: r.env, used: r.used, log: r.log}
	sub.session = sub.sessionFor(a)
	return &subRun{run: sub, parent: r}
}

// Env exposes the evidence of this run.
func (r *run) Env() *tools.Env { return r.env.Env }

// Catalog is the catalog the run calls into, tool-server tools included
// (the LLM engine's optional CatalogSource).
func (r *run) Catalog() *tools.Catalog { return r.env.Catalog }

// RequireLLM reports whether the team's effective config requires the LLM
// for this run's agent: feature_flags.require_llm, llm.required or
// agents.<name>.require_llm (the LLM engine's optional Requirement). A
// provider failure then fails the run with llm_unavailable instead of
// falling back to the offline analyst.
func (r *run) RequireLLM() bool {
	cfg := r.env.Config
	if b, _ := objectAt(cfg, "feature_flags")["require_llm"].(bool); b {
		return true
	}
	if b, _ := objectAt(cfg, "llm")["required"].(bool); b {
		return true
	}
	if r.agent == "" {
		return false
	}
	b, _ := objectAt(objectAt(cfg, "agents"), r.agent)["require_llm"].(bool)
	return b
}

// LLMMaxTokens is the team's effective llm.max_tokens, 0 when unset (the
// LLM engine's optional MaxTokensSetting).
func (r *run) LLMMaxTokens() int {
	n, ok := number(objectAt(r.env.Config, "llm")["max_tokens"])
	if !ok || n < 1 || n > math.MaxInt32 {
		return 0
	}
	return int(n)
}

// RecordUsage adds LLM accounting to the investigation.
func (r *run) RecordUsage(u db.Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.usageAcc == nil {
		r.usageAcc = &db.Usage{}
	}
	if u.Model != "" {
		r.usageAcc.Model = u.Model
	}
	r.usageAcc.InputTokens += u.InputTokens
	r.usageAcc.OutputTokens += u.OutputTokens
	r.usageAcc.Steps += u.Steps
	r.usageAcc.ToolCalls += u.ToolCalls
	r.usageAcc.DurationSeconds += u.DurationSeconds
}

func (r *run) usage() *db.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.usageAcc == nil {
		return nil
	}
	u := *r.usageAcc
	return &u
}

// subRun forwards usage to the parent so one investigation has one account.
type subRun struct {
	*run
	parent *run
}

func (s *subRun) RecordUsage(u db.Usage) { s.parent.RecordUsage(u) }

func (s *subRun) Sub(a Agent) Run {
	child := s.run.Sub(a).(*subRun)
	child.parent = s.parent
	return child
}
