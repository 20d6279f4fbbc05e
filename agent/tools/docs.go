package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rootcause/rootcause/mergeconf"
)

// integrationDocs describes each integration for docs/tools.md, in the order
// the document lists them.
var integrationDocs = []struct{ name, about string }{
	{IntegrationKubernetes, "Kubernetes API through client-go (live), or a bundle's `kubectl cluster-info dump`."},
	{IntegrationPrometheus, "Prometheus HTTP API (live), or a bundle's OpenMetrics files."},
	{IntegrationLogs, "Log files and globs on the host, or a bundle's `logs/`."},
	{IntegrationChanges, "Deploys, config changes and feature flags: rollout history, GitHub commits and deployments, a bundle's `changes.json`."},
	{IntegrationCloudWatch, "AWS CloudWatch logs (filter, Insights) and metrics through aws-sdk-go-v2, or a bundle's CloudWatch exports."},
	{IntegrationGitHub, "GitHub or GitHub Enterprise: code search, files, commits, pull requests; a bundle's `repos/`."},
	{IntegrationKnowledge, "Ranked (BM25) search over the team's `knowledge_source` runbooks and a bundle's `runbooks/`."},
	{IntegrationTraces, "Distributed traces: Jaeger's query API (`tools.jaeger`), Grafana Tempo's HTTP API (`tools.tempo`), or a bundle's `traces/` (OTLP/JSON lines)."},
	{IntegrationHistory, "The team's own completed investigations, stored by the appliance."},
	{IntegrationShell, "Write tool: commands on the server's host."},
	{IntegrationDocker, "Write tool: commands inside containers."},
	{IntegrationDatabase, "Write tool: statements on a database."},
}

// integrationConfigKeys are the tools.<key> settings objects of
// integrations that several backends serve.
var integrationConfigKeys = map[string][]string{IntegrationTraces: {SettingsJaeger, SettingsTempo}}

// RenderDocs renders the catalog as the Markdown of docs/tools.md: for each
// integration its tools (description, read-only or write, default agents,
// parameters from the JSON Schema) and its settings from the config schema,
// then the size of each built-in agent's default toolkit. The output is
// deterministic so a test can keep the file in step with the catalog.
func RenderDocs(cat *Catalog) []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	w("# Tools\n\n")
	w("<!-- Generated from the tool catalog (agent/tools) and the config schema (mergeconf/schema.json)\n")
	w("     by agent/tools/docs.go. Do not edit: run `UPDATE_DOCS=1 go test ./agent/tools -run TestToolsDocUpToDate`. -->\n\n")
	w("Every tool an agent can call, grouped by the integration it needs. An integration is configured\n")
	w("under `tools.<integration>` in the team's effective config; see\n")
	w("[configuration](configuration.md#tools) for the merge rules, secret references and the notes on\n")
	w("each key. Keys marked *admin* point at the server's own files or environment and can only be set\n")
	w("with an admin token. A tool can also be turned off with `tools.<tool>.enabled: false`.\n\n")
	w("Write tools (marked **write**) are refused unless the team's effective\n")
	w("`feature_flags.enable_write_actions` is true and the tool is in the agent's toolkit.\n\n")
	w("Time arguments are RFC 3339 strings or durations back from the investigation's clock (`\"1h\"`);\n")
	w("omitted windows default to the last hour. Tools of external tool servers join the catalog as\n")
	w("`server:tool` (see [tool servers](tool-servers.md)); they are not listed here.\n\n")

	// Toolkit sizes.
	w("## Default toolkits\n\n")
	w("| agent | tools |\n|---|---|\n")
	for _, a := range BuiltinAgents {
		n := len(cat.DefaultToolkit(a))
		note := ""
		if a == AgentPlanner {
			note = " (it delegates to the other agents)"
		}
		w("| `%s` | %d%s |\n", a, n, note)
	}
	w("\nCustom agents under `agents.<name>` start from no default tools and add `enable_extra_tools`;\n")
	w("built-in agents can drop tools with `disable_default_tools` and add others with\n")
	w("`enable_extra_tools` (`GET /api/v1/agents` shows each agent's resolved toolkit).\n\n")

	// Index.
	byInt := map[string][]Spec{}
	for _, s := range cat.Specs() {
		byInt[s.Integration] = append(byInt[s.Integration], s)
	}
	order := make([]string, 0, len(byInt))
	about := map[string]string{}
	for _, d := range integrationDocs {
		about[d.name] = d.about
		if len(byInt[d.name]) > 0 {
			order = append(order, d.name)
		}
	}
	var rest []string
	for name := range byInt {
		if _, ok := about[name]; !ok {
			rest = append(rest, name)
		}
	}
	sort.Strings(rest)
	order = append(order, rest...)

	w("## Catalog\n\n")
	w("| tool | integration | kind | default for |\n|---|---|---|---|\n")
	for _, in := range order {
		for _, s := range byInt[in] {
			w("| [`%s`](#%s) | %s | %s | %s |\n", s.Name, anchor(s.Name), in, kind(s), agentList(s.Agents))
		}
	}
	w("\n")

	settings := integrationSettings()
	for _, in := range order {
		w("## %s\n\n", in)
		if a := about[in]; a != "" {
			w("%s\n\n", a)
		}
		keys, found := []string{in}, false
		if alt, ok := integrationConfigKeys[in]; ok {
			keys = alt
		}
		for _, key := range keys {
			rows, ok := settings[key]
			if !ok {
				continue
			}
			found = true
			w("Settings (`tools.%s`, see [configuration](configuration.md#tools)):\n\n", key)
			w("| key | type | who |\n|---|---|---|\n")
			for _, r := range rows {
				w("| `%s` | %s | %s |\n", r[0], r[1], r[2])
			}
			w("\n")
		}
		if !found {
			w("No settings.\n\n")
		}
		for _, s := range byInt[in] {
			renderTool(&b, s)
		}
	}
	return b.Bytes()
}

func renderTool(b *bytes.Buffer, s Spec) {
	fmt.Fprintf(b, "### %s\n\n", s.Name)
	fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(s.Description))
	fmt.Fprintf(b, "- kind: %s\n- default for: %s\n\n", kind(s), agentList(s.Agents))
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	_ = json.Unmarshal(s.Parameters, &schema)
	if len(schema.Properties) == 0 {
		b.WriteString("No parameters.\n\n")
		return
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	// Required parameters first, then the rest by name.
	sort.Slice(names, func(i, j int) bool {
		ri, rj := slices.Contains(schema.Required, names[i]), slices.Contains(schema.Required, names[j])
		if ri != rj {
			return ri
		}
		return names[i] < names[j]
	})
	b.WriteString("| parameter | type | required | description |\n|---|---|---|---|\n")
	for _, n := range names {
		p := schema.Properties[n]
		req := ""
		if slices.Contains(schema.Required, n) {
			req = "yes"
		}
		desc, _ := p["description"].(string)
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", n, schemaType(p), req, cell(desc))
	}
	b.WriteString("\n")
}

func kind(s Spec) string {
	if s.ReadOnly {
		return "read-only"
	}
	return "**write**"
}

func agentList(agents []string) string {
	if len(agents) == 0 {
		return "none (enable with `enable_extra_tools`)"
	}
	out := make([]string, 0, len(agents))
	for _, a := range BuiltinAgents { // stable, documented order
		if slices.Contains(agents, a) {
			out = append(out, "`"+a+"`")
		}
	}
	for _, a := range agents {
		if !slices.Contains(BuiltinAgents, a) {
			out = append(out, "`"+a+"`")
		}
	}
	return strings.Join(out, ", ")
}

// schemaType describes a JSON Schema property in a few words.
func schemaType(p map[string]any) string {
	t := typeName(p["type"])
	if ref, ok := p["$ref"].(string); ok && t == "" {
		t = strings.TrimPrefix(ref, "#/$defs/")
	}
	if t == "" {
		t = "any"
	}
	if enum, ok := p["enum"].([]any); ok {
		var vs []string
		for _, v := range enum {
			if s := fmt.Sprint(v); s != "" {
				vs = append(vs, "`"+s+"`")
			}
		}
		return t + ": " + strings.Join(vs, ", ")
	}
	if t == "array" {
		if it, ok := p["items"].(map[string]any); ok {
			return "array of " + schemaType(it)
		}
	}
	if t == "object" {
		if ap, ok := p["additionalProperties"].(map[string]any); ok {
			return "object of " + schemaType(ap)
		}
	}
	lo, hasLo := p["minimum"].(float64)
	hi, hasHi := p["maximum"].(float64)
	switch {
	case hasLo && hasHi:
		t += fmt.Sprintf(" (%g to %g)", lo, hi)
	case hasLo:
		t += fmt.Sprintf(" (≥ %g)", lo)
	case hasHi:
		t += fmt.Sprintf(" (≤ %g)", hi)
	}
	return t
}

func typeName(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case []any:
		var s []string
		for _, x := range t {
			s = append(s, fmt.Sprint(x))
		}
		return strings.Join(s, " or ")
	}
	return ""
}

// cell makes text safe for one Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// anchor is the GitHub heading anchor of a tool's section.
func anchor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// integrationSettings reads tools.<integration> from the config schema:
// integration → rows of (key, type, who), keys sorted with enabled first.
// An unreadable schema yields no rows (the test of the schema fails
// elsewhere).
func integrationSettings() map[string][][3]string {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]map[string]any  `json:"$defs"`
	}
	if err := json.Unmarshal(mergeconf.Schema(), &schema); err != nil {
		return nil
	}
	var toolsProp struct {
		Properties map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema.Properties["tools"], &toolsProp); err != nil {
		return nil
	}
	out := map[string][][3]string{}
	for in, obj := range toolsProp.Properties {
		keys := make([]string, 0, len(obj.Properties))
		for k := range obj.Properties {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if (keys[i] == "enabled") != (keys[j] == "enabled") {
				return keys[i] == "enabled"
			}
			return keys[i] < keys[j]
		})
		rows := [][3]string{}
		for _, k := range keys {
			p := obj.Properties[k]
			who := "any"
			if v, _ := p["x-admin-only"].(bool); v {
				who = "*admin*"
			}
			rows = append(rows, [3]string{k, settingType(p, schema.Defs), who})
		}
		out[in] = rows
	}
	return out
}

// settingType names a config setting's type, resolving $refs to the
// schema's definitions.
func settingType(p map[string]any, defs map[string]map[string]any) string {
	if ref, ok := p["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		switch name {
		case "secretRef":
			return "secret reference"
		case "secretHeaders":
			return "object: header name → secret reference"
		case "stringArray":
			return "array of string"
		case "httpURL":
			return "string (http or https URL)"
		case "hostname":
			return "string (host name)"
		case "namespace":
			return "string (namespace name)"
		case "seconds":
			return "integer (seconds, 1 to 86400)"
		}
		if d, ok := defs[name]; ok {
			return settingType(d, defs)
		}
		return name
	}
	return schemaType(p)
}
