package mergeconf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The integrations (agent/evidence/live, agent/tools, agent/knowledge) read
// their settings from the effective config as untyped maps, so nothing but
// this test ties the keys they read to schema.json: a key the code reads
// that the schema does not know can never be set, and one the schema knows
// that the code does not read is silently ignored. mergeconf must not
// import agent/, so the test reads the sources.

// integrationOfDir maps a live backend package to its tools.<integration>.
var integrationOfDir = map[string]string{
	"cloudwatch": "cloudwatch",
	"github":     "github",
	"changes":    "changes",
	"logfiles":   "logs",
}

// integrationOfFunc maps functions that build one integration from a
// settings object named s (agent/evidence/live/live.go).
var integrationOfFunc = map[string]string{
	"Kubernetes": "kubernetes",
	"Prometheus": "prometheus",
	"Jaeger":     "jaeger",
	"Tempo":      "tempo",
}

// notReadYet are schema keys no integration reads yet; they are accepted
// for what the docs promise (tools.docker.host, the database write tool,
// a CloudWatch log-group scope). The reverse check skips them.
var notReadYet = map[string]bool{
	"tools.docker.host":           true,
	"tools.database.dsn":          true,
	"tools.cloudwatch.log_groups": true,
	"tools.knowledge.enabled":     true, // read generically (agent/resolve.go)
}

var (
	reIndex       = regexp.MustCompile(`\b(?:settings|s)\["([a-z_]+)"\]`)
	reHelperArg   = regexp.MustCompile(`\b(?:str|seconds)\(s, "([a-z_]+)"\)`)
	reEnvSettings = regexp.MustCompile(`Settings\[Integration([A-Za-z]+)\]`)
	reDirect      = regexp.MustCompile(`Settings\[Integration([A-Za-z]+)\]\["([a-z_]+)"\]`)
	reHelperCall  = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)\((?:[^()]*, )?(?:settings|s)(?:, [^()]*)?\)`)
	reKind        = regexp.MustCompile(`Kind[A-Za-z]+\s*=\s*"([a-z_]+)"`)
)

type goFunc struct {
	name, text string
}

// goFuncs returns the non-test functions of the Go files under dir (not
// recursive), with their source text.
func goFuncs(t *testing.T, dir string) []goFunc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []goFunc
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			text := string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset])
			out = append(out, goFunc{name: fd.Name.Name, text: text})
		}
	}
	return out
}

// settingKeys returns the keys a function reads from its settings object,
// including through same-package helpers it passes the object to.
func settingKeys(fn goFunc, byName map[string]goFunc, depth int) []string {
	var keys []string
	for _, m := range reIndex.FindAllStringSubmatch(fn.text, -1) {
		keys = append(keys, m[1])
	}
	for _, m := range reHelperArg.FindAllStringSubmatch(fn.text, -1) {
		keys = append(keys, m[1])
	}
	if depth < 2 {
		for _, m := range reHelperCall.FindAllStringSubmatch(fn.text, -1) {
			if h, ok := byName[m[1]]; ok && h.name != fn.name {
				keys = append(keys, settingKeys(h, byName, depth+1)...)
			}
		}
	}
	return keys
}

// readSettings returns every tools.<integration>.<key> the integrations
// read, mapped to where it was found.
func readSettings(t *testing.T) map[string]string {
	t.Helper()
	read := map[string]string{}
	add := func(integration, key, where string) {
		read["tools."+integration+"."+key] = where
	}
	live := filepath.Join("..", "agent", "evidence", "live")
	for dir, integration := range integrationOfDir {
		fns := goFuncs(t, filepath.Join(live, dir))
		if len(fns) == 0 {
			t.Fatalf("no Go functions in %s: the layout changed, update this test", filepath.Join(live, dir))
		}
		for _, fn := range fns {
			for _, m := range reIndex.FindAllStringSubmatch(fn.text, -1) {
				add(integration, m[1], dir+"."+fn.name)
			}
		}
	}
	liveFns := goFuncs(t, live)
	byName := map[string]goFunc{}
	for _, fn := range liveFns {
		byName[fn.name] = fn
	}
	for name, integration := range integrationOfFunc {
		fn, ok := byName[name]
		if !ok {
			t.Fatalf("live.%s not found: the layout changed, update this test", name)
		}
		for _, k := range settingKeys(fn, byName, 0) {
			add(integration, k, "live."+name)
		}
	}
	toolFns := goFuncs(t, filepath.Join("..", "agent", "tools"))
	byName = map[string]goFunc{}
	for _, fn := range toolFns {
		byName[fn.name] = fn
	}
	for _, fn := range toolFns {
		for _, m := range reDirect.FindAllStringSubmatch(fn.text, -1) {
			add(strings.ToLower(m[1]), m[2], "tools."+fn.name)
		}
		// settings := env.Settings[IntegrationX], then settings["k"] in the
		// same function or a helper it passes settings to.
		ms := reEnvSettings.FindAllStringSubmatch(fn.text, -1)
		if len(ms) != 1 || !strings.Contains(fn.text, "settings := env.Settings[") {
			continue
		}
		for _, k := range settingKeys(fn, byName, 0) {
			add(strings.ToLower(ms[0][1]), k, "tools."+fn.name)
		}
	}
	return read
}

// TestSchemaKnowsIntegrationSettings: every setting an integration reads is
// a key of schema.json, and every integration key of schema.json is read
// (or listed in notReadYet).
func TestSchemaKnowsIntegrationSettings(t *testing.T) {
	c := mustCompiled()
	read := readSettings(t)
	if len(read) < 25 {
		t.Fatalf("found only %d settings read by the integrations; the source scan is broken: %v", len(read), read)
	}
	var paths []string
	for p := range read {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if info := c.lookup(SplitPath(p)); !info.known || info.node == nil {
			t.Errorf("%s is read by %s but schema.json does not know it", p, read[p])
		}
	}
	schema := schemaPaths(c)
	for p := range schema {
		parts := strings.Split(p, ".")
		if len(parts) != 3 || parts[0] != "tools" || parts[1] == "*" || parts[2] == "enabled" {
			continue
		}
		if _, ok := read[p]; !ok && !notReadYet[p] {
			t.Errorf("schema.json accepts %s but no integration reads it", p)
		}
	}
	// Admin-only settings of contract section 3 (the server's files,
	// processes and network position).
	for _, p := range []string{
		"tools.kubernetes.kubeconfig", "tools.kubernetes.in_cluster", "tools.logs.paths",
		"tools.shell.allowed_commands", "tools.docker.host", "tools.cloudwatch.endpoint",
		"knowledge_source.runbooks", "knowledge_source.directory",
	} {
		if info := c.lookup(SplitPath(p)); !info.adminOnly {
			t.Errorf("%s is not admin-only", p)
		}
	}
}

// TestSchemaKnowsKnowledgeKinds: the knowledge_source kinds of schema.json
// are exactly the kinds agent/knowledge accepts.
func TestSchemaKnowsKnowledgeKinds(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "agent", "knowledge", "source.go"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, m := range reKind.FindAllStringSubmatch(string(src), -1) {
		kinds = append(kinds, m[1])
	}
	sort.Strings(kinds)
	c := mustCompiled()
	props, _ := c.topLevel("knowledge_source")["properties"].(map[string]any)
	got := sortedKeys(props)
	if strings.Join(got, ",") != strings.Join(kinds, ",") || len(kinds) == 0 {
		t.Errorf("schema knowledge_source kinds = %v, agent/knowledge accepts %v", got, kinds)
	}
}

var (
	reTeamObject = regexp.MustCompile(`objectAt\((?:cfg|r\.env\.Config), "(llm|feature_flags)"\)\["([a-z_]+)"\]`)
	reTeamLLM    = regexp.MustCompile(`\bteamLLM\["([a-z_]+)"\]`)
	reAgentKey   = regexp.MustCompile(`objectAt\(objectAt\((?:cfg|r\.env\.Config), "agents"\), [A-Za-z.]+\)\["([a-z_]+)"\]`)
)

// TestSchemaKnowsRuntimeSettings: the llm, feature_flags and
// agents.<name> keys the runtime reads (agent/*.go) are keys of
// schema.json.
func TestSchemaKnowsRuntimeSettings(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "agent", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range reTeamObject.FindAllStringSubmatch(string(src), -1) {
			read[m[1]+"."+m[2]] = filepath.Base(f)
		}
		for _, m := range reTeamLLM.FindAllStringSubmatch(string(src), -1) {
			read["llm."+m[1]] = filepath.Base(f)
		}
		for _, m := range reAgentKey.FindAllStringSubmatch(string(src), -1) {
			read["agents.x."+m[1]] = filepath.Base(f)
		}
	}
	if len(read) < 3 {
		t.Fatalf("found only %v read by agent/*.go; the source scan is broken", read)
	}
	c := mustCompiled()
	for p, where := range read {
		if info := c.lookup(SplitPath(p)); !info.known || info.node == nil {
			t.Errorf("%s is read by %s but schema.json does not know it", p, where)
		}
	}
}
