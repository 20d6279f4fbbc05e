package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/finding"
)

// DefaultParallelCalls bounds the tool calls of one model turn that run at
// once.
const DefaultParallelCalls = 4

// Engine is the LLM investigation engine: it runs the offline analyst for
// starting findings, then a tool-calling loop with the model, then a skeptic
// review of the submitted result. It implements agent.Engine.
type Engine struct {
	cfg      Config
	provider Provider
	analyst  agent.Engine
	catalog  *tools.Catalog
	secrets  []string
	parallel int
}

var _ agent.Engine = (*Engine)(nil)

// Option configures an Engine.
type Option func(*Engine)

// WithCatalog sets the catalog whose specs describe the tools offered, when
// the Run does not implement CatalogSource (default tools.Builtin()).
func WithCatalog(c *tools.Catalog) Option { return func(e *Engine) { e.catalog = c } }

// WithSecrets registers secret values (resolved references of the server
// and the team: tool API keys, tokens) that are removed verbatim from
// everything sent to the model, in addition to the pattern-based redaction.
func WithSecrets(values ...string) Option {
	return func(e *Engine) { e.secrets = append(e.secrets, values...) }
}

// WithParallelCalls bounds the tool calls of one turn that run at once.
func WithParallelCalls(n int) Option {
	return func(e *Engine) {
		if n > 0 {
			e.parallel = n
		}
	}
}

// NewEngine returns the LLM engine. analyst may be nil (no starting
// findings, and no fallback result: a failure then yields an inconclusive
// result with a note). provider may be nil when no LLM is configured: the
// engine then returns the analyst's result (or, with cfg.Required, fails
// with llm_unavailable).
func NewEngine(cfg Config, provider Provider, analyst agent.Engine, opts ...Option) *Engine {
	e := &Engine{cfg: cfg.withDefaults(), provider: provider, analyst: analyst, parallel: DefaultParallelCalls}
	for _, o := range opts {
		o(e)
	}
	e.secrets = append(e.secrets, e.cfg.APIKey)
	return e
}

// Requirement is an optional interface of agent.Run: the team's effective
// feature_flags.require_llm. When it reports true, a provider failure fails
// the investigation with llm_unavailable instead of falling back.
type Requirement interface {
	RequireLLM() bool
}

// MaxTokensSetting is an optional interface of agent.Run: the team's
// effective llm.max_tokens (0: the server's llm.max_tokens).
type MaxTokensSetting interface {
	LLMMaxTokens() int
}

func (e *Engine) maxTokens(run agent.Run) int {
	if m, ok := run.(MaxTokensSetting); ok && m.LLMMaxTokens() > 0 {
		return m.LLMMaxTokens()
	}
	return e.cfg.MaxTokens
}

// accounting sums usage over the loop, its delegations and the skeptic.
type accounting struct {
	mu sync.Mutex
	u  agent.Usage
}

func (a *accounting) add(u Usage, steps, calls int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.u.InputTokens += int64(u.InputTokens)
	a.u.OutputTokens += int64(u.OutputTokens)
	a.u.Steps += steps
	a.u.ToolCalls += calls
}

func (a *accounting) snapshot() agent.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.u
}

// Investigate runs the investigation for req on run.
func (e *Engine) Investigate(ctx context.Context, req *agent.Request, run agent.Run) (*finding.Result, error) {
	start := time.Now()
	acct := &accounting{}
	acct.u.Model = e.modelFor(req.Agent)
	res, err := e.investigate(ctx, req, run, 0, e.cfg.MaxSteps, acct)
	if rec, ok := run.(agent.UsageRecorder); ok && e.provider != nil {
		u := acct.snapshot()
		u.DurationSeconds = time.Since(start).Seconds()
		rec.RecordUsage(u)
	}
	return res, err
}

func (e *Engine) modelFor(a agent.Agent) string {
	if a.Model != "" {
		return a.Model
	}
	return e.cfg.Model
}

func (e *Engine) temperatureFor(a agent.Agent) *float64 {
	if a.Temperature != nil {
		return a.Temperature
	}
	return e.cfg.Temperature
}

func (e *Engine) required(run agent.Run) bool {
	if e.cfg.Required {
		return true
	}
	r, ok := run.(Requirement)
	return ok && r.RequireLLM()
}

// investigate is one agent's investigation: the analyst, then the loop.
// Delegations call it again with depth+1 and a smaller step cap.
func (e *Engine) investigate(ctx context.Context, req *agent.Request, run agent.Run, depth, maxSteps int, acct *accounting) (*finding.Result, error) {
	var base *finding.Result
	var baseErr error
	if e.analyst != nil {
		base, baseErr = e.analyst.Investigate(ctx, req, run)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if baseErr == nil && base == nil {
			baseErr = errors.New("the analyst returned no result")
		}
	}
	if e.provider == nil {
		if e.required(run) {
			return nil, &UnavailableError{Code: CodeLLMUnavailable, Err: errors.New("no LLM provider is configured (llm.provider)")}
		}
		if baseErr != nil {
			return nil, baseErr
		}
		if base == nil {
			return inconclusive("no LLM provider is configured and no offline analyst ran"), nil
		}
		return base, nil
	}

	l := e.newLoop(req, run, depth, maxSteps, acct, base)
	res, out := l.converse(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if res != nil {
		if baseErr != nil {
			res.Notes = append(res.Notes, "the offline analyst could not run ("+baseErr.Error()+"); the result is the model's alone")
		}
		return res, nil
	}
	if out.providerErr != nil {
		if e.required(run) {
			return nil, &UnavailableError{Code: CodeLLMUnavailable, Err: out.providerErr}
		}
		return fallback(base, baseErr, fmt.Sprintf("LLM provider unavailable (%v)", out.providerErr))
	}
	return fallback(base, baseErr, out.failure)
}

// fallback returns a copy of the analyst's result with a note saying why,
// or, without one, the analyst's error or an inconclusive result.
func fallback(base *finding.Result, baseErr error, reason string) (*finding.Result, error) {
	if base == nil {
		if baseErr != nil {
			return nil, fmt.Errorf("%s; the offline analyst failed too: %w", reason, baseErr)
		}
		return inconclusive(reason + "; no offline analyst result to fall back on"), nil
	}
	out := cloneResult(base)
	out.Notes = append(out.Notes, reason+"; result from the offline analyst")
	return out, nil
}

// inconclusive is the result when neither the model nor the analyst gave
// one.
func inconclusive(note string) *finding.Result {
	r := &finding.Result{
		Summary:   "The investigation could not reach a conclusion.",
		RootCause: finding.RootCause{Description: "undetermined", Confidence: 0},
		Verdict:   finding.VerdictInconclusive,
		Notes:     []string{note},
	}
	r.Normalize()
	return r
}

func cloneResult(r *finding.Result) *finding.Result {
	b, err := json.Marshal(r)
	if err != nil {
		c := *r
		return &c
	}
	var c finding.Result
	if json.Unmarshal(b, &c) != nil {
		c = *r
	}
	return &c
}
