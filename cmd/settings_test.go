package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// TestSettingsPrecedence checks flag > env > file > default for each layer.
func TestSettingsPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rootcause.yaml")
	yaml := "addr: 127.0.0.1:7000\norg: fromfile\nrate_limit:\n  read: 7\n  write: 8\nsync_wait: 30s\nwebhook:\n  allow: [10.0.0.0/8]\nllm:\n  model: small\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   map[string]string
		flags map[string]string
		check func(t *testing.T, s Settings)
	}{
		{"default", nil, nil, func(t *testing.T, s Settings) {
			if s.DataDir != defaultDataDir || s.RateLimit.Run != 10 || s.Workers != 4 {
				t.Fatalf("%+v", s)
			}
		}},
		{"file over default", nil, nil, func(t *testing.T, s Settings) {
			if s.Addr != "127.0.0.1:7000" || s.Org != "fromfile" || s.RateLimit.Read != 7 || s.SyncWait != 30*time.Second ||
				len(s.Webhook.Allow) != 1 || s.LLM.Model != "small" {
				t.Fatalf("%+v", s)
			}
		}},
		{"env over file", map[string]string{"ROOTCAUSE_ADDR": "127.0.0.1:7001", "ROOTCAUSE_RATE_LIMIT_READ": "9", "ROOTCAUSE_DATA_DIR": "/env/dir"}, nil, func(t *testing.T, s Settings) {
			if s.Addr != "127.0.0.1:7001" || s.RateLimit.Read != 9 || s.RateLimit.Write != 8 || s.DataDir != "/env/dir" {
				t.Fatalf("%+v", s)
			}
		}},
		{"flag over env", map[string]string{"ROOTCAUSE_ADDR": "127.0.0.1:7001", "ROOTCAUSE_DATA_DIR": "/env/dir"}, map[string]string{"addr": "127.0.0.1:7002", "data-dir": "/flag/dir"}, func(t *testing.T, s Settings) {
			if s.Addr != "127.0.0.1:7002" || s.DataDir != "/flag/dir" {
				t.Fatalf("%+v", s)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			v := viper.New()
			root := NewRootCommand(v)
			serve, _, err := root.Find([]string{"serve"})
			if err != nil {
				t.Fatal(err)
			}
			for k, val := range tt.flags {
				fl := serve.Flags().Lookup(k)
				if fl == nil {
					fl = root.PersistentFlags().Lookup(k)
				}
				if err := fl.Value.Set(val); err != nil {
					t.Fatal(err)
				}
				fl.Changed = true
			}
			if tt.name != "default" {
				if err := root.PersistentFlags().Set("config", file); err != nil {
					t.Fatal(err)
				}
				if err := readConfigFile(v); err != nil {
					t.Fatal(err)
				}
			}
			s, err := loadSettings(v)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestSettingsErrors(t *testing.T) {
	tests := []struct {
		name, env, value, want string
	}{
		{"ErrRateLimit not a number", "ROOTCAUSE_RATE_LIMIT_READ", "lots", "rate_limit.read"},
		{"ErrWorkers below minimum", "ROOTCAUSE_WORKERS", "0", "workers"},
		{"ErrSyncWait not a duration", "ROOTCAUSE_SYNC_WAIT", "soon", "sync_wait"},
		{"ErrConfigHistoryKeep negative", "ROOTCAUSE_CONFIG_HISTORY_KEEP", "-1", "config_history_keep"},
		{"ErrGCHeapFloor not a size", "ROOTCAUSE_GC_HEAP_FLOOR", "large", "gc.heap_floor"},
		{"ErrGCHeapFloor negative", "ROOTCAUSE_GC_HEAP_FLOOR", "-64MB", "gc.heap_floor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			v := viper.New()
			NewRootCommand(v)
			if _, err := loadSettings(v); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want mention of %s", err, tt.want)
			}
		})
	}
}

// gc.heap_floor: a size (64MB by default), 0 turns the floor off.
func TestSettingsGCHeapFloor(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
	}{
		{"", 64 << 20},
		{"0", 0},
		{"128MB", 128 << 20},
		{"1GB", 1 << 30},
		{"33554432", 32 << 20},
	} {
		t.Run(tc.value, func(t *testing.T) {
			if tc.value != "" {
				t.Setenv("ROOTCAUSE_GC_HEAP_FLOOR", tc.value)
			}
			v := viper.New()
			NewRootCommand(v)
			s, err := loadSettings(v)
			if err != nil {
				t.Fatal(err)
			}
			if s.GCHeapFloor != tc.want {
				t.Errorf("GCHeapFloor = %d, want %d", s.GCHeapFloor, tc.want)
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("addr: [unclosed\n"), 0o600)
	for _, tc := range []struct{ name, file string }{
		{"ErrMissing", filepath.Join(t.TempDir(), "missing.yaml")},
		{"ErrMalformed", bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := NewRootCommand(viper.New())
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs([]string{"--config", tc.file, "version"})
			if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "reading config file") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90m", 90 * time.Minute, true},
		{"720h", 720 * time.Hour, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"1s", time.Second, true},
		{"0s", 0, false},
		{"-1h", 0, false},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, err := parseTTL(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseTTL(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestCommandsHaveHelp(t *testing.T) {
	root := NewRootCommand(viper.New())
	for _, c := range allCommands(root) {
		if c.Short == "" {
			t.Errorf("%s has no help text", c.CommandPath())
		}
	}
}

func allCommands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, allCommands(sub)...)
	}
	return out
}
