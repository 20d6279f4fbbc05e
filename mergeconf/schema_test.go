package mergeconf

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestSchemaCompiles(t *testing.T) {
	if _, err := compiled(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatalf("Schema() is not JSON: %v", err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", doc["$schema"])
	}
	b := Schema()
	b[0] = 'X'
	if Schema()[0] == 'X' {
		t.Error("Schema() returns the shared buffer")
	}
}

// schemaPaths lists every property path of the schema, "*" standing for
// any key of a map.
func schemaPaths(c *compiledSchema) map[string]schemaNode {
	out := map[string]schemaNode{}
	var walk func(prefix string, n schemaNode, depth int)
	walk = func(prefix string, n schemaNode, depth int) {
		if depth > 6 {
			return
		}
		if props, ok := n["properties"].(map[string]any); ok {
			for k, p := range props {
				child := c.resolve(p.(map[string]any))
				out[prefix+k] = child
				walk(prefix+k+".", child, depth+1)
			}
		}
		if ap, ok := n["additionalProperties"].(map[string]any); ok {
			child := c.resolve(ap)
			out[prefix+"*"] = child
			walk(prefix+"*.", child, depth+1)
		}
	}
	walk("", c.resolve(c.root), 0)
	return out
}

// TestSchemaAndDocsAgree checks that every property of schema.json is
// documented in docs/configuration.md and the other way round for the
// key tables there, so the schema stays the one place.
func TestSchemaAndDocsAgree(t *testing.T) {
	c := mustCompiled()
	paths := schemaPaths(c)
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	// Placeholders such as agents.<name>.timeout stand for any key.
	text := regexp.MustCompile(`<[a-z_]+>`).ReplaceAllString(string(doc), "*")
	for p := range paths {
		if strings.HasSuffix(p, "*") {
			continue
		}
		if !strings.Contains(text, "`"+p+"`") {
			t.Errorf("schema property %s is not documented in docs/configuration.md", p)
		}
	}
	// Every key row of the reference tables names a schema property.
	row := regexp.MustCompile("(?m)^\\| `([a-z_0-9.*]+)` \\|")
	rows := row.FindAllStringSubmatch(text, -1)
	if len(rows) < 50 {
		t.Errorf("found only %d key rows in docs/configuration.md", len(rows))
	}
	for _, m := range rows {
		if _, ok := paths[m[1]]; !ok {
			t.Errorf("docs/configuration.md documents %s, which is not in schema.json", m[1])
		}
	}
}

// TestSchemaSecretsAndAdmin checks the schema's annotations against the
// Go-side rules: every field whose name says secret is a secret-ref, and
// every setting contract section 3 names is admin-only.
func TestSchemaSecretsAndAdmin(t *testing.T) {
	c := mustCompiled()
	paths := schemaPaths(c)
	secretName := regexp.MustCompile(`(^|_)(key|secret|dsn|token|password)(_|$)|secret|^tokens_vault_path\.\*$|headers\.\*$`)
	var names []string
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		n := paths[p]
		last := p[strings.LastIndex(p, ".")+1:]
		isRef := n.str("format") == "secret-ref"
		looksSecret := secretName.MatchString(last) || secretName.MatchString(p)
		if n["type"] == "object" || n["type"] == "array" {
			continue
		}
		if last == "access_key_id" {
			looksSecret = true
		}
		if looksSecret && !isRef && !strings.HasSuffix(p, "team_groups.*") {
			t.Errorf("%s looks like a secret but is not a secret-ref", p)
		}
	}
	for _, p := range []string{
		"tools.kubernetes.kubeconfig", "tools.kubernetes.in_cluster", "tools.logs.paths",
		"evidence_bundle", "tool_servers.x.command", "tool_servers.x.args", "tool_servers.x.env.K",
		"tools.shell.allowed_commands", "oidc.issuer", "approvers", "a2a_peers.p.url", "tools.docker.host",
	} {
		if info := c.lookup(SplitPath(p)); !info.known || !info.adminOnly {
			t.Errorf("%s is not admin-only in schema.json", p)
		}
	}
	for _, p := range []string{"slack_channel", "tools.github.api_key", "agents.x.timeout", "tools.kubernetes.default_namespace"} {
		if info := c.lookup(SplitPath(p)); !info.known || info.adminOnly {
			t.Errorf("%s: known=%v adminOnly=%v, want a known team setting", p, info.known, info.adminOnly)
		}
	}
}

func TestOptionsHelpers(t *testing.T) {
	eff := map[string]any{
		"tool_servers": map[string]any{"on": map[string]any{"url": "http://a"}, "off": map[string]any{"enabled": false}},
		"a2a_peers":    map[string]any{"peer": map[string]any{"url": "http://p"}, "gone": map[string]any{"enabled": false}},
	}
	ts := ToolServersOf(eff)
	for _, tt := range []struct {
		name            string
		exists, enabled bool
	}{{"on", true, true}, {"off", true, false}, {"none", false, false}} {
		if e, en := ts(tt.name); e != tt.exists || en != tt.enabled {
			t.Errorf("ToolServersOf(%s) = %v, %v; want %v, %v", tt.name, e, en, tt.exists, tt.enabled)
		}
	}
	peers := PeersOf(eff)
	if !peers("peer") || peers("gone") || peers("none") {
		t.Error("PeersOf wrong")
	}
	if ToolServersOf(nil)("x"); PeersOf(nil)("x") {
		t.Error("nil effective knows a peer")
	}
}

func TestValidateNilOptions(t *testing.T) {
	// Nil lookups know no tools, servers or peers, but the schema's
	// integrations.
	err := Validate(map[string]any{"tools": map[string]any{"kubernetes": map[string]any{"enabled": true}}}, Options{})
	if err != nil {
		t.Fatalf("integration rejected with nil options: %v", err)
	}
	for _, doc := range []map[string]any{
		{"agents": map[string]any{"k8s_agent": map[string]any{"enable_extra_tools": []string{"get_pod_logs"}}}},
		{"mcp_servers": []string{"x"}},
		{"a2a_agents": []string{"x"}},
	} {
		var fe *FieldError
		if err := Validate(doc, Options{}); !errors.As(err, &fe) || fe.Code != CodeValidation {
			t.Errorf("Validate(%v) = %v, want a validation_error", doc, err)
		}
	}
}

func TestFieldErrorString(t *testing.T) {
	e := &FieldError{Code: CodeValidation, Field: "agents.k8s_agent.timeout", Message: "must be a positive integer"}
	if got := e.Error(); got != "agents.k8s_agent.timeout: must be a positive integer" {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateFloat64Documents(t *testing.T) {
	// Documents decoded without UseNumber carry float64.
	ok := map[string]any{"agents": map[string]any{"k8s_agent": map[string]any{"timeout": 30.0}}}
	if err := Validate(ok, Options{}); err != nil {
		t.Errorf("timeout 30.0 (float64): %v", err)
	}
	bad := map[string]any{"agents": map[string]any{"k8s_agent": map[string]any{"timeout": 1.5}}}
	var fe *FieldError
	if err := Validate(bad, Options{}); !errors.As(err, &fe) || fe.Field != "agents.k8s_agent.timeout" {
		t.Errorf("timeout 1.5 (float64): %v", err)
	}
}
