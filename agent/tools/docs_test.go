package tools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolsDocUpToDate keeps docs/tools.md generated from the catalog:
// it fails when the file differs from RenderDocs, and rewrites the file
// when UPDATE_DOCS=1.
func TestToolsDocUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "tools.md")
	want := RenderDocs(Builtin())
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it: UPDATE_DOCS=1 go test ./agent/tools -run TestToolsDocUpToDate)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/tools.md is out of date with the catalog; regenerate it: UPDATE_DOCS=1 go test ./agent/tools -run TestToolsDocUpToDate")
	}
}

func TestRenderDocsContent(t *testing.T) {
	cat := Builtin()
	doc := string(RenderDocs(cat))
	for _, n := range cat.Names() {
		if !strings.Contains(doc, "### "+n+"\n") {
			t.Errorf("tool %s has no section", n)
		}
	}
	for _, want := range []string{
		"| `k8s_agent` | 9 |",
		"| `planner` | 0 (it delegates",
		"| `kubeconfig` | string | *admin* |",
		"| `api_key` | secret reference | any |",
		"| `query` | string | yes |",
		"[configuration](configuration.md#tools)",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("doc lacks %q", want)
		}
	}
	if !bytes.Equal(RenderDocs(cat), RenderDocs(cat)) {
		t.Error("RenderDocs is not deterministic")
	}
}
