package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		yaml    string
		wantErr string
	}{
		{"ExampleConfig", "", ""},
		{"BadNumber", "rate_limit:\n  read: many\n", "rate_limit.read"},
		{"PlainAPIKey", "llm:\n  provider: openai\n  api_key: sk-plain\n", "llm.api_key"},
		{"UnknownProvider", "llm:\n  provider: gemini\n", "llm.provider"},
		{"Unparseable", "rate_limit: [\n", "reading config file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join("..", "packaging", "rootcause.example.yaml")
			if tt.yaml != "" {
				file = filepath.Join(dir, tt.name+".yaml")
				if err := os.WriteFile(file, []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			root := NewRootCommand(viper.New())
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs([]string{"serve", "--check", "--config", file, "--data-dir", filepath.Join(dir, "data")})
			err := root.ExecuteContext(context.Background())
			switch {
			case tt.wantErr == "" && (err != nil || !strings.Contains(out.String(), "settings OK")):
				t.Fatalf("err = %v, out = %q; want settings OK", err, out.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
			}
			if _, statErr := os.Stat(filepath.Join(dir, "data")); statErr == nil {
				t.Error("--check created the data directory; it must not touch anything")
			}
		})
	}
}
