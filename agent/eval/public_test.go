package eval

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/analyst"
)

// TestPublicScenarios runs the offline analyst on every public scenario and
// fails on any miss: a scenario that cannot run, an investigation that
// fails, or a result that does not meet its expect.
func TestPublicScenarios(t *testing.T) {
	engine := analyst.New(analyst.Options{})
	for _, dir := range append(scenarioDirs(t), filepath.Join("..", "demo", "_incident")) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			s, err := LoadScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), s, engine, Options{Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != StatusCompleted {
				t.Fatalf("investigation %s: %s", out.Status, out.Error)
			}
			if err := out.Result.Validate(); err != nil {
				t.Errorf("result breaks the spec: %v", err)
			}
			if !out.Passed {
				line, _ := json.MarshalIndent(out, "", "  ")
				t.Errorf("scenario missed:\n%s", line)
			}
		})
	}
}
