// Package tools is the tool catalog: every tool an agent can call, with its
// name, description, JSON Schema parameters, the integration it needs,
// whether it only reads, and the built-in agents whose default toolkit holds
// it. Config validation, GET /api/v1/agents, the offline analyst, the LLM
// loop and docs/tools.md all read this one catalog.
package tools

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/rootcause/rootcause/agent/evidence"
)

// Built-in agent names (spec 2.6).
const (
	AgentPlanner       = "planner"
	AgentInvestigation = "investigation_agent"
	AgentK8s           = "k8s_agent"
	AgentAWS           = "aws_agent"
	AgentMetrics       = "metrics_agent"
	AgentCoding        = "coding_agent"
)

// BuiltinAgents lists the built-in agents in a stable order.
var BuiltinAgents = []string{AgentPlanner, AgentInvestigation, AgentK8s, AgentAWS, AgentMetrics, AgentCoding}

// Integration names: the keys under tools.<integration> in team config.
const (
	IntegrationKubernetes = "kubernetes"
	IntegrationPrometheus = "prometheus"
	IntegrationLogs       = "logs"
	IntegrationChanges    = "changes"
	IntegrationCloudWatch = "cloudwatch"
	IntegrationGitHub     = "github"
	IntegrationKnowledge  = "knowledge"
	IntegrationShell      = "shell"    // write tools on the host
	IntegrationDocker     = "docker"   // write tools in containers
	IntegrationDatabase   = "database" // write tools on a database
	IntegrationHistory    = "history"  // the team's past investigations
	IntegrationTraces     = "traces"   // tools.jaeger or tools.tempo
)

// The settings objects of the traces integration: a team reads traces from
// tools.jaeger or tools.tempo.
const (
	SettingsJaeger = "jaeger"
	SettingsTempo  = "tempo"
)

// Spec describes a tool.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
	Integration string          `json:"integration"`
	ReadOnly    bool            `json:"read_only"`
	Agents      []string        `json:"default_for,omitempty"` // built-in agents whose default toolkit has it
}

// Tool is a callable tool. Run returns a JSON-serialisable typed value (for
// example []corev1.Pod or *evidence.LogResult) so that the offline analyst
// can use it directly and the LLM loop can serialise it.
type Tool struct {
	Spec
	Run func(ctx context.Context, env *Env, args json.RawMessage) (any, error)
}

// Env is what a tool call can reach for one investigation.
type Env struct {
	Sources *evidence.Sources
	// History answers similar_incidents; nil when not available.
	History History
	// WriteActions is the team's effective feature_flags.enable_write_actions.
	WriteActions bool
	// Settings holds the team's effective tools.<integration> objects, for
	// tools that read settings such as default_namespace.
	Settings map[string]map[string]any
	// SetupErrors says which integrations are configured but could not be
	// set up (bad settings, unresolvable secrets), for the data gaps of a
	// result.
	SetupErrors []string
	// Secrets are the secret values resolved to build the sources; the
	// session scrubs them from tool errors so an upstream that echoes a
	// credential back cannot carry it into events, answers or the db.
	Secrets []string
}

// History finds the team's past investigations like a query.
type History interface {
	Similar(ctx context.Context, text string, limit int) ([]PastIncident, error)
}

// PastIncident is a past investigation, ranked by likeness.
type PastIncident struct {
	InvestigationID string  `json:"investigation_id"`
	CreatedAt       string  `json:"created_at"`
	Message         string  `json:"message"`
	Summary         string  `json:"summary"`
	RootCause       string  `json:"root_cause"`
	Score           float64 `json:"score"`
}

// Caller invokes tools by name for one agent run. Implementations check that
// the tool is in the agent's resolved toolkit and allowed (write tools need
// enable_write_actions), apply the time limit and output bounds, record
// tools_used, and report progress. args may be json.RawMessage or any value
// that marshals to the tool's argument object.
type Caller interface {
	Call(ctx context.Context, name string, args any) (any, error)
	// Has reports whether name is in the agent's toolkit and callable.
	Has(name string) bool
}

// Catalog is an immutable set of tools indexed by name.
type Catalog struct {
	byName map[string]*Tool
	names  []string
}

// NewCatalog builds a catalog; later tools with a duplicate name are ignored.
func NewCatalog(ts ...[]Tool) *Catalog {
	c := &Catalog{byName: map[string]*Tool{}}
	for _, list := range ts {
		for i := range list {
			t := list[i]
			if _, dup := c.byName[t.Name]; dup {
				continue
			}
			c.byName[t.Name] = &t
			c.names = append(c.names, t.Name)
		}
	}
	sort.Strings(c.names)
	return c
}

// Builtin returns the catalog of built-in tools.
func Builtin() *Catalog {
	return NewCatalog(
		kubernetesTools(),
		prometheusTools(),
		logTools(),
		changeTools(),
		cloudwatchTools(),
		codeTools(),
		knowledgeTools(),
		analysisTools(),
		traceTools(),
		writeTools(),
	)
}

// Get returns the tool named name.
func (c *Catalog) Get(name string) (*Tool, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Has reports whether the catalog has a tool named name.
func (c *Catalog) Has(name string) bool { _, ok := c.byName[name]; return ok }

// Names returns all tool names, sorted.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Specs returns all specs, sorted by name.
func (c *Catalog) Specs() []Spec {
	out := make([]Spec, 0, len(c.names))
	for _, n := range c.names {
		out = append(out, c.byName[n].Spec)
	}
	return out
}

// DefaultToolkit returns the sorted names of the tools in agent's default
// toolkit. The planner's is empty: it delegates.
func (c *Catalog) DefaultToolkit(agent string) []string {
	var out []string
	for _, n := range c.names {
		if slices.Contains(c.byName[n].Agents, agent) {
			out = append(out, n)
		}
	}
	return out
}

// With returns a new catalog holding c's tools plus extra ones (for example
// the tools of configured tool servers, named "server:tool").
func (c *Catalog) With(extra []Tool) *Catalog {
	base := make([]Tool, 0, len(c.names))
	for _, n := range c.names {
		base = append(base, *c.byName[n])
	}
	return NewCatalog(base, extra)
}
