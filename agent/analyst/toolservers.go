package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
)

// catalogRun is implemented by the runtime's Run: it exposes the team's
// catalog, including the tools of its tool servers.
type catalogRun interface {
	Catalog() *tools.Catalog
}

// maxConsultOutput bounds what a consulted tool contributes to the notes.
const maxConsultOutput = 400

// consultToolServers calls, once each, the read-only tools of external tool
// servers ("server:tool") that the team enabled for the agent (or, for a
// planner, for the specialists it consults), filling their string
// parameters from the request: the analyst cannot reason over arbitrary
// output, so each answer is reported in the result's notes, and tools_used
// shows the call. A tool whose required parameters cannot be filled is
// named in the notes and not called.
func (e *Engine) consultToolServers(ctx context.Context, req *agent.Request, run agent.Run) []string {
	cr, ok := run.(catalogRun)
	if !ok {
		return nil
	}
	cat := cr.Catalog()
	if cat == nil {
		return nil
	}
	type target struct {
		name string
		run  agent.Run
	}
	var targets []target
	seen := map[string]bool{}
	add := func(kit []string, r agent.Run) {
		for _, name := range kit {
			if !isToolServerTool(name) || seen[name] || !r.Has(name) {
				continue
			}
			seen[name] = true
			targets = append(targets, target{name, r})
		}
	}
	add(req.Agent.Tools, run)
	if req.Agent.Name == tools.AgentPlanner {
		for _, n := range agent.SortedNames(req.Agents) {
			if a := req.Agents[n]; n != req.Agent.Name && a.Enabled {
				add(a.Tools, run.Sub(a))
			}
		}
	}
	var notes []string
	for _, t := range targets {
		if ctx.Err() != nil {
			break
		}
		spec, ok := cat.Get(t.name)
		if !ok || !spec.ReadOnly {
			continue
		}
		args, missing := fillArgs(spec.Parameters, req)
		if missing != "" {
			notes = append(notes, fmt.Sprintf("tool %s was not consulted: it needs parameter %q, which the request does not give", t.name, missing))
			continue
		}
		out, err := t.run.Call(ctx, t.name, args)
		if err != nil {
			notes = append(notes, fmt.Sprintf("tool %s failed: %v", t.name, err))
			continue
		}
		notes = append(notes, fmt.Sprintf("tool %s answered: %s", t.name, summarizeOutput(out)))
	}
	return notes
}

func isToolServerTool(name string) bool {
	return strings.Contains(name, ":") && !strings.HasPrefix(name, "a2a:")
}

// paramSources maps common parameter names to what fills them.
var paramSources = map[string]string{
	"message": "message", "query": "message", "question": "message", "prompt": "message",
	"text": "message", "input": "message", "q": "message", "content": "message",
	"service": "service", "service_name": "service", "app": "service", "application": "service",
	"namespace": "namespace", "ns": "namespace",
	"environment": "environment", "env": "environment",
	"time_window": "time_window", "window": "time_window",
	"severity": "severity", "alert": "related_alert", "related_alert": "related_alert",
}

// fillArgs builds arguments for a tool from its JSON Schema: every string
// property whose name says what it holds gets the request's message or
// context value. It returns the first required property it cannot fill.
func fillArgs(schema json.RawMessage, req *agent.Request) (map[string]any, string) {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	args := map[string]any{}
	for name, p := range s.Properties {
		if !isStringType(p.Type) {
			continue
		}
		src, ok := paramSources[strings.ToLower(name)]
		if !ok {
			continue
		}
		v := req.Context[src]
		if src == "message" {
			v = req.Message
		}
		if v != "" {
			args[name] = v
		}
	}
	for _, r := range s.Required {
		if _, ok := args[r]; !ok {
			return nil, r
		}
	}
	return args, ""
}

func isStringType(t any) bool {
	switch v := t.(type) {
	case string:
		return v == "string"
	case []any:
		return slices.ContainsFunc(v, func(x any) bool { return x == "string" })
	}
	return false
}

func summarizeOutput(out any) string {
	var s string
	switch v := out.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("%v", v)
		}
		s = string(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxConsultOutput {
		s = s[:maxConsultOutput] + "…"
	}
	return s
}
