package analyst_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rootcause/rootcause/agent/analyst"
	"github.com/rootcause/rootcause/agent/eval"
)

// TestScenarios runs the analyst on every public scenario under
// testdata/scenarios and fails on any miss against its expect block.
func TestScenarios(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*", "scenario.json"))
	if len(dirs) == 0 {
		t.Skip("no scenarios")
	}
	cat := testCatalog()
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, err := eval.LoadScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			out, err := eval.Run(context.Background(), s, analyst.New(analyst.Options{}), eval.Options{Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			if out.Result != nil && os.Getenv("ANALYST_VERBOSE") != "" {
				t.Logf("%s\nconfidence %.0f verdict %s\n%s\nevidence:\n  %s\ntimeline %d, affected %v\ntools %v\nruled out %v\ngaps %v",
					s.Title, out.Result.RootCause.Confidence, out.Result.Verdict, out.Result.RootCause.Description,
					strings.Join(out.Result.RootCause.Evidence, "\n  "), len(out.Result.Timeline), out.Result.AffectedSystems, out.ToolsUsed, out.Result.RuledOut, out.Result.DataGaps)
			}
			if out.Scored && !out.Passed {
				desc := ""
				if out.Result != nil {
					desc = out.Result.RootCause.Description
				}
				t.Errorf("failed: %v\nroot cause: %s", out.Failures, desc)
			}
		})
	}
}
