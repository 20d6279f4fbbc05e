package tools_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rootcause/rootcause/agent/tools"
)

// catalogTable is the tool catalog table of docs/architecture.md.
var catalogTable = []string{
	"list_namespaces", "list_pods", "describe_pod", "get_pod_logs", "get_events", "list_deployments", "get_rollout_history",
	"list_services", "list_nodes", "list_resources", "describe_resource", "prometheus_query", "prometheus_query_range", "list_metrics", "detect_anomalies",
	"find_change_points", "correlate_series", "list_log_sources", "search_logs", "get_log_context", "get_log_signatures",
	"list_changes", "list_cloudwatch_log_groups", "get_cloudwatch_logs", "cloudwatch_insights_query", "list_cloudwatch_metrics",
	"get_cloudwatch_metrics", "list_repositories", "search_github_code", "read_file", "list_recent_commits", "list_pull_requests",
	"search_runbooks", "similar_incidents", "find_traces", "get_trace", "service_graph", "shell", "docker_exec", "db_write", "restart_deployment", "scale_deployment",
}

func TestCatalogSpecs(t *testing.T) {
	c := tools.Builtin()
	integrations := []string{tools.IntegrationKubernetes, tools.IntegrationPrometheus, tools.IntegrationLogs, tools.IntegrationChanges,
		tools.IntegrationCloudWatch, tools.IntegrationGitHub, tools.IntegrationKnowledge, tools.IntegrationShell,
		tools.IntegrationDocker, tools.IntegrationDatabase, tools.IntegrationHistory, tools.IntegrationTraces}
	if len(c.Names()) == 0 {
		t.Fatal("empty catalog")
	}
	for _, s := range c.Specs() {
		t.Run(s.Name, func(t *testing.T) {
			if s.Name == "" || strings.ContainsAny(s.Name, " :") {
				t.Errorf("bad name %q", s.Name)
			}
			if len(s.Description) < 40 {
				t.Errorf("description too short for an LLM to choose the tool: %q", s.Description)
			}
			if !slices.Contains(integrations, s.Integration) {
				t.Errorf("unknown integration %q", s.Integration)
			}
			if !slices.Contains(catalogTable, s.Name) {
				t.Errorf("tool %q is not in docs/architecture.md's table", s.Name)
			}
			for _, a := range s.Agents {
				if !slices.Contains(tools.BuiltinAgents, a) || a == tools.AgentPlanner {
					t.Errorf("bad default agent %q", a)
				}
			}
			if !s.ReadOnly && slices.ContainsFunc(s.Agents, func(a string) bool { return a != tools.AgentInvestigation }) {
				t.Errorf("write tool in a specialist's default toolkit: %v", s.Agents)
			}
			// The parameters are a JSON Schema object that compiles and
			// closes its properties.
			var doc map[string]any
			if err := json.Unmarshal(s.Parameters, &doc); err != nil {
				t.Fatalf("parameters are not JSON: %v", err)
			}
			if doc["type"] != "object" || doc["additionalProperties"] != false {
				t.Errorf("parameters: want type object with additionalProperties false: %s", s.Parameters)
			}
			props, _ := doc["properties"].(map[string]any)
			if req, ok := doc["required"].([]any); ok {
				for _, r := range req {
					if _, ok := props[r.(string)]; !ok {
						t.Errorf("required %v is not a property", r)
					}
				}
			}
			for name, p := range props {
				if pm, _ := p.(map[string]any); pm["type"] == nil && pm["enum"] == nil {
					t.Errorf("property %s has no type", name)
				}
			}
			comp := jsonschema.NewCompiler()
			sch, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Parameters))
			if err != nil {
				t.Fatal(err)
			}
			if err := comp.AddResource("mem://"+s.Name, sch); err != nil {
				t.Fatal(err)
			}
			compiled, err := comp.Compile("mem://" + s.Name)
			if err != nil {
				t.Fatalf("schema does not compile: %v", err)
			}
			if err := compiled.Validate(map[string]any{"surely_not_an_argument": 1}); err == nil {
				t.Errorf("schema accepts unknown arguments")
			}
		})
	}
}

func TestCatalogToolkitSizes(t *testing.T) {
	c := tools.Builtin()
	var missing []string
	for _, n := range catalogTable {
		if !c.Has(n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		t.Skipf("catalog incomplete (other tool files are being built), toolkit sizes not checked; missing: %s", strings.Join(missing, ", "))
	}
	if len(c.Names()) != len(catalogTable) {
		t.Errorf("catalog has %d tools, the table %d", len(c.Names()), len(catalogTable))
	}
	want := map[string]int{tools.AgentPlanner: 0, tools.AgentK8s: 9, tools.AgentAWS: 8, tools.AgentMetrics: 25, tools.AgentCoding: 15}
	for agent, n := range want {
		if got := c.DefaultToolkit(agent); len(got) != n {
			t.Errorf("%s: %d tools %v, want %d (spec 2.6)", agent, len(got), got, n)
		}
	}
	var readOnly int
	for _, s := range c.Specs() {
		if s.ReadOnly {
			readOnly++
		}
	}
	inv := c.DefaultToolkit(tools.AgentInvestigation)
	if len(inv) != readOnly+3 {
		t.Errorf("investigation_agent: %d tools, want every read-only tool (%d) plus shell, docker_exec, db_write", len(inv), readOnly)
	}
	for _, w := range []string{"shell", "docker_exec", "db_write"} {
		if !slices.Contains(inv, w) {
			t.Errorf("investigation_agent lacks %s", w)
		}
	}
	for _, w := range []string{"restart_deployment", "scale_deployment"} {
		if slices.Contains(inv, w) {
			t.Errorf("%s must be in no default toolkit", w)
		}
	}
}
