package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/llm"
	"github.com/rootcause/rootcause/agent/llm/llmtest"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

// The runtime's Run implements the LLM engine's optional seams, and so do
// the Runs of delegated agents.
var (
	_ agent.CodedError = (*llm.UnavailableError)(nil)
)

type seams struct {
	catalog   *tools.Catalog
	require   bool
	maxTokens int
	ok        bool
}

func probe(run agent.Run) seams {
	cs, ok1 := run.(llm.CatalogSource)
	rq, ok2 := run.(llm.Requirement)
	mt, ok3 := run.(llm.MaxTokensSetting)
	if !ok1 || !ok2 || !ok3 {
		return seams{}
	}
	return seams{catalog: cs.Catalog(), require: rq.RequireLLM(), maxTokens: mt.LLMMaxTokens(), ok: true}
}

func TestRunLLMSeams(t *testing.T) {
	cases := []struct {
		name      string
		cfg       map[string]any
		agent     string
		require   bool
		subReq    bool // for the delegated metrics_agent
		maxTokens int
	}{
		{name: "empty", cfg: map[string]any{}, agent: "k8s_agent"},
		{name: "feature flag", cfg: map[string]any{"feature_flags": map[string]any{"require_llm": true}}, agent: "k8s_agent", require: true, subReq: true},
		{name: "llm.required", cfg: map[string]any{"llm": map[string]any{"required": true, "max_tokens": float64(1234)}}, agent: "k8s_agent", require: true, subReq: true, maxTokens: 1234},
		{name: "per agent", cfg: map[string]any{"agents": map[string]any{"k8s_agent": map[string]any{"require_llm": true}}}, agent: "k8s_agent", require: true},
		{name: "other agent", cfg: map[string]any{"agents": map[string]any{"metrics_agent": map[string]any{"require_llm": true}}}, agent: "k8s_agent", subReq: true},
		{name: "flag false", cfg: map[string]any{"feature_flags": map[string]any{"require_llm": false}, "llm": map[string]any{"max_tokens": "x"}}, agent: "k8s_agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var top, sub seams
			engine := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
				top = probe(run)
				sub = probe(run.Sub(req.Agents["metrics_agent"]))
				return &finding.Result{Summary: "ok", RootCause: finding.RootCause{Description: "x", Confidence: 10}}, nil
			})
			h := newHarness(t, engine, nil, nil)
			h.cfg = tc.cfg
			got := waitFinal(t, h.rt, h.submit(t, tc.agent).ID)
			if got.Status != db.StatusCompleted {
				t.Fatalf("status %s %+v", got.Status, got.Error)
			}
			if !top.ok || !sub.ok {
				t.Fatalf("run does not implement the LLM seams: top %v sub %v", top.ok, sub.ok)
			}
			if top.catalog == nil || !top.catalog.Has("list_pods") || sub.catalog != top.catalog {
				t.Fatalf("catalog %v / %v", top.catalog, sub.catalog)
			}
			if top.require != tc.require || sub.require != tc.subReq {
				t.Fatalf("RequireLLM top %v sub %v, want %v %v", top.require, sub.require, tc.require, tc.subReq)
			}
			if top.maxTokens != tc.maxTokens || sub.maxTokens != tc.maxTokens {
				t.Fatalf("LLMMaxTokens %d %d, want %d", top.maxTokens, sub.maxTokens, tc.maxTokens)
			}
		})
	}
}

func TestResolveTeamLLMDefaults(t *testing.T) {
	cat := testCatalog(new(atomic.Int64), nil)
	cfg := map[string]any{
		"llm": map[string]any{"model": "team-model", "temperature": 0.3},
		"agents": map[string]any{
			"planner":   map[string]any{"model": "big-model", "temperature": 0.0},
			"k8s_agent": map[string]any{"temperature": 1.0},
		},
	}
	agents := agent.Resolve(cfg, cat)
	check := func(name, model string, temp float64) {
		t.Helper()
		a := agents[name]
		if a.Model != model || a.Temperature == nil || *a.Temperature != temp {
			t.Fatalf("%s: model %q temperature %v, want %q %v", name, a.Model, a.Temperature, model, temp)
		}
	}
	check("planner", "big-model", 0)
	check("k8s_agent", "team-model", 1)
	check("metrics_agent", "team-model", 0.3)

	none := agent.Resolve(map[string]any{}, cat)["metrics_agent"]
	if none.Model != "" || none.Temperature != nil {
		t.Fatalf("no team defaults: %+v", none)
	}
}

// A team that requires the LLM fails with error.code llm_unavailable when
// the provider fails; without the requirement it falls back with a note.
func TestRuntimeLLMUnavailable(t *testing.T) {
	for _, required := range []bool{true, false} {
		srv := llmtest.NewOpenAI(t)
		for range 10 {
			srv.Push(llmtest.Error(llmtest.OpenAI, 500, "boom", nil))
		}
		cfg := llm.Config{Provider: llm.ProviderOpenAI, BaseURL: srv.URL, Model: "m", MaxRetries: -1}
		p, err := llm.NewProvider(cfg)
		if err != nil {
			t.Fatal(err)
		}
		analyst := engineFunc(func(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
			return &finding.Result{Summary: "analyst", RootCause: finding.RootCause{Description: "analyst cause", Confidence: 50}}, nil
		})
		h := newHarness(t, llm.NewEngine(cfg, p, analyst), nil, nil)
		h.cfg = map[string]any{"feature_flags": map[string]any{"require_llm": required}, "llm": map[string]any{"max_tokens": float64(777)}}
		got := waitFinal(t, h.rt, h.submit(t, "k8s_agent").ID)
		if reqs := srv.Requests(); len(reqs) == 0 || reqs[0].MaxTokens() != 777 {
			t.Fatalf("team llm.max_tokens not sent: %d requests", len(reqs))
		}
		if required {
			if got.Status != db.StatusFailed || got.Error == nil || got.Error.Code != llm.CodeLLMUnavailable {
				t.Fatalf("required: %s %+v", got.Status, got.Error)
			}
			continue
		}
		if got.Status != db.StatusCompleted || got.Result == nil || got.Result.Summary != "analyst" || len(got.Result.Notes) == 0 {
			t.Fatalf("fallback: %s %+v", got.Status, got.Result)
		}
	}
}
