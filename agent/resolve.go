package agent

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/rootcause/rootcause/agent/tools"
	"github.com/rootcause/rootcause/db"
	"github.com/rootcause/rootcause/mergeconf"
)

// customAgentName is the form of an agent defined under agents.<name>.
var customAgentName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Resolve returns every agent of a team, built-in and custom, as its
// effective config defines them at this moment (spec 2.6): enabled,
// prompt, toolkit (default tools minus disable_default_tools plus
// enable_extra_tools, minus tools of integrations switched off with
// tools.<integration>.enabled=false), timeout, and LLM overrides.
// cat must hold every tool the team can reach (built-ins plus its tool
// servers' tools).
func Resolve(cfg map[string]any, cat *tools.Catalog) map[string]Agent {
	out := map[string]Agent{}
	settings := objectAt(cfg, "agents")
	names := slices.Clone(tools.BuiltinAgents)
	for name := range settings {
		if !slices.Contains(names, name) && customAgentName.MatchString(name) {
			names = append(names, name)
		}
	}
	disabledIntegrations := map[string]bool{}
	disabledTools := map[string]bool{}
	for key, v := range objectAt(cfg, "tools") {
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if en, ok := obj["enabled"].(bool); ok && !en {
			if cat.Has(key) {
				disabledTools[key] = true
			} else {
				disabledIntegrations[key] = true
			}
		}
	}
	// llm.model and llm.temperature are the team's defaults for agents
	// that set none.
	teamLLM := objectAt(cfg, "llm")
	teamModel, _ := teamLLM["model"].(string)
	teamTemp, hasTeamTemp := number(teamLLM["temperature"])
	for _, name := range names {
		s, _ := settings[name].(map[string]any)
		a := Agent{Name: name, Builtin: slices.Contains(tools.BuiltinAgents, name), Enabled: true}
		if en, ok := s["enabled"].(bool); ok {
			a.Enabled = en
		}
		a.Prompt, _ = s["prompt"].(string)
		a.Model, _ = s["model"].(string)
		if t, ok := number(s["temperature"]); ok {
			a.Temperature = &t
		}
		if a.Model == "" {
			a.Model = teamModel
		}
		if a.Temperature == nil && hasTeamTemp {
			t := teamTemp
			a.Temperature = &t
		}
		if t, ok := number(s["timeout"]); ok && t > 0 && t < math.MaxInt32 {
			a.Timeout = time.Duration(t) * time.Second
		}
		var kit []string
		if a.Builtin {
			kit = cat.DefaultToolkit(name)
		}
		for _, t := range stringsAt(s, "disable_default_tools") {
			kit = slices.DeleteFunc(kit, func(x string) bool { return x == t })
		}
		for _, t := range stringsAt(s, "enable_extra_tools") {
			if cat.Has(t) && !slices.Contains(kit, t) {
				kit = append(kit, t)
			}
		}
		kit = slices.DeleteFunc(kit, func(n string) bool {
			t, _ := cat.Get(n)
			return disabledTools[n] || (t != nil && disabledIntegrations[t.Integration])
		})
		sort.Strings(kit)
		if kit == nil {
			kit = []string{}
		}
		a.Tools = kit
		out[name] = a
	}
	return out
}

// Lookup resolves the agent named name for a run. It returns EINVALID
// naming the agent when it does not exist or is disabled.
func Lookup(agents map[string]Agent, name string) (Agent, error) {
	a, ok := agents[name]
	if !ok {
		return Agent{}, &db.Error{Code: db.EINVALID, Field: "agent_name",
			Message: fmt.Sprintf("agent_name: unknown agent %q (built-in agents: %v; custom agents are defined under agents in the team config)", name, tools.BuiltinAgents)}
	}
	if !a.Enabled {
		return Agent{}, &db.Error{Code: db.EINVALID, Field: "agent_name",
			Message: fmt.Sprintf("agent_name: agent %q is disabled in the team config (agents.%s.enabled is false)", name, name)}
	}
	return a, nil
}

// SortedNames returns the agents' names: built-ins in spec order, then
// custom agents by name.
func SortedNames(agents map[string]Agent) []string {
	var custom []string
	var out []string
	for _, n := range tools.BuiltinAgents {
		if _, ok := agents[n]; ok {
			out = append(out, n)
		}
	}
	for n, a := range agents {
		if !a.Builtin {
			custom = append(custom, n)
		}
	}
	sort.Strings(custom)
	return append(out, custom...)
}

func objectAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func stringsAt(m map[string]any, key string) []string {
	arr, _ := m[key].([]any)
	var out []string
	for _, v := range arr {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	if ss, ok := m[key].([]string); ok {
		out = append(out, ss...)
	}
	return out
}

// number reads a JSON number of a config document.
func number(v any) (float64, bool) { return mergeconf.Number(v) }
