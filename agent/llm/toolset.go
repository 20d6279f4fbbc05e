package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rootcause/rootcause/agent"
	"github.com/rootcause/rootcause/agent/tools"
)

// maxToolNameLen is OpenAI's limit on function names.
const maxToolNameLen = 64

// offered is one tool as the model sees it.
type offered struct {
	alias    string // the LLM-safe name offered to the model
	name     string // the catalog name run.Call takes ("server:tool" for tool servers)
	def      ToolDef
	schema   *compiledSchema
	delegate *agent.Agent // delegate_<agent> tools of the planner
}

// toolset maps LLM-safe aliases to tools and back.
type toolset struct {
	byAlias map[string]*offered
	order   []string // aliases in offer order
}

// CatalogSource is an optional interface of agent.Run: the catalog the run
// calls into, including tool-server tools. Without it the engine uses the
// catalog given with WithCatalog, else tools.Builtin().
type CatalogSource interface {
	Catalog() *tools.Catalog
}

// safeName maps a tool name to the characters function names allow
// ([a-zA-Z0-9_-], at most 64): "server:tool" becomes "server__tool".
func safeName(name string) string {
	name = strings.ReplaceAll(name, ":", "__")
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		s = "tool"
	}
	if len(s) > maxToolNameLen {
		s = s[:maxToolNameLen]
	}
	return s
}

// add offers a tool under a unique LLM-safe alias and returns it.
func (ts *toolset) add(o *offered) *offered {
	base := safeName(o.name)
	alias := base
	for i := 2; ; i++ {
		if _, taken := ts.byAlias[alias]; !taken {
			break
		}
		suffix := fmt.Sprintf("_%d", i)
		alias = base
		if len(alias)+len(suffix) > maxToolNameLen {
			alias = alias[:maxToolNameLen-len(suffix)]
		}
		alias += suffix
	}
	o.alias = alias
	o.def.Name = alias
	if ts.byAlias == nil {
		ts.byAlias = map[string]*offered{}
	}
	ts.byAlias[alias] = o
	ts.order = append(ts.order, alias)
	return o
}

// defs returns the tool definitions to offer; with only set, just that one.
func (ts *toolset) defs(only string) []ToolDef {
	var out []ToolDef
	for _, a := range ts.order {
		if only != "" && a != only {
			continue
		}
		out = append(out, ts.byAlias[a].def)
	}
	return out
}

// names lists the aliases offered, for error messages.
func (ts *toolset) names() string {
	return strings.Join(ts.order, ", ")
}

// buildToolset offers the agent's toolkit (the tools run.Has allows), the
// planner's delegation tools, and submit_findings (always first, so that no
// tool can take its name).
func (e *Engine) buildToolset(req *agent.Request, run agent.Run, depth int) *toolset {
	ts := &toolset{}
	ts.add(&offered{name: toolSubmit, def: ToolDef{
		Description: "Submit your findings and end the investigation. Arguments are the final result: " +
			"cite concrete evidence from tool results, say what you ruled out and what data was missing. " +
			"Use confidence below 50 when evidence is indirect.",
		Parameters: json.RawMessage(resultSchema),
	}, schema: compileSchema(json.RawMessage(resultSchema))})

	cat := e.catalog
	if cs, ok := run.(CatalogSource); ok && cs.Catalog() != nil {
		cat = cs.Catalog()
	}
	if cat == nil {
		cat = tools.Builtin()
	}
	names := append([]string(nil), req.Agent.Tools...)
	sort.Strings(names)
	for _, name := range names {
		if !run.Has(name) {
			continue
		}
		desc := "Tool " + name + "."
		params := json.RawMessage(emptyObjectSchema)
		if t, ok := cat.Get(name); ok {
			if t.Description != "" {
				desc = t.Description
			}
			if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && string(p) != "null" {
				params = p
			}
		}
		if !schemaIsObject(params) {
			// Function parameters must be an object schema.
			params = json.RawMessage(emptyObjectSchema)
		}
		ts.add(&offered{name: name, def: ToolDef{Description: desc, Parameters: params}, schema: compileSchema(params)})
	}

	if req.Agent.Name == tools.AgentPlanner && depth == 0 {
		agentNames := make([]string, 0, len(req.Agents))
		for n := range req.Agents {
			agentNames = append(agentNames, n)
		}
		sort.Strings(agentNames)
		for _, n := range agentNames {
			a := req.Agents[n]
			if n == tools.AgentPlanner || n == req.Agent.Name || !a.Enabled {
				continue
			}
			desc := "Delegate a focused sub-investigation to the " + n + " specialist"
			if len(a.Tools) > 0 {
				desc += fmt.Sprintf(" (tools: %s)", strings.Join(firstN(a.Tools, 12), ", "))
			}
			desc += ". It returns that agent's findings as JSON."
			ag := a
			if ag.Name == "" {
				ag.Name = n
			}
			ts.add(&offered{name: "delegate_" + n, def: ToolDef{Description: desc, Parameters: json.RawMessage(delegateSchema)},
				schema: compileSchema(json.RawMessage(delegateSchema)), delegate: &ag})
		}
	}
	return ts
}

func schemaIsObject(raw json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	switch t := s.Type.(type) {
	case nil:
		return isJSONObject(raw)
	case string:
		return t == "object"
	}
	return false
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string(nil), s[:n]...), "…")
}

// canonicalArgs renders JSON arguments in a canonical form (sorted keys, no
// insignificant space) so identical calls compare equal.
func canonicalArgs(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return string(raw)
	}
	return string(b)
}
