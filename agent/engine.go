// Package agent runs investigations: it resolves agents from the team's
// effective config and the tool catalog, runs them on a durable worker pool
// under a context, and hands each run to an Engine (the offline analyst, or
// the LLM loop) through the Run seam below.
package agent

import (
	"context"
	"time"

	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/finding"
)

// Agent is an agent resolved for one team at the moment a run starts.
type Agent struct {
	Name        string        `json:"name"`
	Builtin     bool          `json:"builtin"`
	Prompt      string        `json:"prompt,omitempty"`
	Enabled     bool          `json:"enabled"`
	Tools       []string      `json:"tools"`             // resolved toolkit, sorted
	Timeout     time.Duration `json:"timeout,omitempty"` // 0: the server default
	Model       string        `json:"model,omitempty"`   // LLM override
	Temperature *float64      `json:"temperature,omitempty"`
}

// Request is one investigation handed to an engine.
type Request struct {
	ID      string
	Team    string
	Agent   Agent
	Message string
	Context map[string]string // service, environment, namespace, severity, related_alert, time_window, hint
	// Agents holds every agent resolved for the team, so a planner can
	// delegate to specialists by name.
	Agents map[string]Agent
}

// Run is the runtime's handle on a running investigation, given to the
// engine. Calls go through the agent's toolkit and are recorded in
// tools_used.
type Run interface {
	tools.Caller
	// Step reports progress: the step now under way, how many are done, and
	// the planned total (which may grow).
	Step(current string, completed, total int)
	// Sub returns a Run restricted to another agent's toolkit that records
	// into the same investigation (for delegation by the planner).
	Sub(a Agent) Run
	// Env exposes the evidence and settings of this run (clock, sources).
	Env() *tools.Env
}

// Engine investigates. It returns the result, or an error; errors carrying
// an evidence.Error with code unavailable end the investigation as
// data_source_unavailable.
type Engine interface {
	Investigate(ctx context.Context, req *Request, run Run) (*finding.Result, error)
}

// Usage is the LLM accounting of a run (model, tokens, steps, tool calls,
// duration), stored on the investigation.
type Usage = db.Usage

// UsageRecorder is implemented by the runtime's Run: engines that call a
// model report their usage through it (type-assert; it may be absent).
type UsageRecorder interface {
	RecordUsage(Usage)
}
