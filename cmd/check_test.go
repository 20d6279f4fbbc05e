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

// serve --check shows which outbound exemptions are in force: the
// outbound.allow entries (with the webhook.allow alias folded in), the
// admin-set destinations that are never guarded, and the trusted proxies.
func TestServeCheckShowsOutboundExemptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"", []string{"outbound guard: no exemptions", "not guarded (admin-set): tool_servers URLs, a2a_peers URLs"}},
		{"outbound:\n  allow: [\"10.20.0.0/16\", \"prom.internal\"]\nwebhook:\n  allow: [\"127.0.0.1\"]\ntrusted_proxies: [\"10.0.0.0/24\"]\n",
			[]string{"exempt by outbound.allow: 10.20.0.0/16, 127.0.0.1/32, prom.internal", "trusted proxies (X-Forwarded-For read from): 10.0.0.0/24"}},
		{"outbound:\n  allow: [\"2130706433\"]\n", nil},
		{"trusted_proxies: [\"not-a-cidr\"]\n", nil},
	} {
		file := filepath.Join(dir, "c.yaml")
		os.WriteFile(file, []byte(tc.yaml), 0o600)
		root := NewRootCommand(viper.New())
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		root.SetArgs([]string{"serve", "--check", "--config", file, "--data-dir", filepath.Join(dir, "data")})
		err := root.ExecuteContext(context.Background())
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: accepted", tc.yaml)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%q: output %q lacks %q", tc.yaml, out.String(), w)
			}
		}
	}
}
