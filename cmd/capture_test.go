package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/viper"

	"github.com/rootcause/rootcause/agent/evidence/evidencetest"
	"github.com/rootcause/rootcause/agent/evidence/live/kube/kubetest"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := NewRootCommand(viper.New())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"200MB", 200 << 20}, {"1GB", 1 << 30}, {"512kB", 512 << 10}, {"1.5M", 3 << 19}, {"4096", 4096}, {"12XB", -1}, {"", -1}, {"-1MB", -1}} {
		got, err := parseSize(tc.in)
		if tc.want < 0 && err == nil || tc.want >= 0 && (err != nil || got != tc.want) {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestCaptureCommand captures a cluster through a kubeconfig file, checks
// the bundle, and investigates it.
func TestCaptureCommand(t *testing.T) {
	_, rc := kubetest.Start(t, evidencetest.KindsBundleDir())
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "`+rc.Host+`"}}]
users: [{name: test, user: {}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "incident")
	_, stderr, err := runCLI(t, "capture", "--out", out, "--kubeconfig", kc, "--namespace", "batch", "--namespace", "web", "--max-size", "10MB")
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "capture: kubernetes:") || !strings.Contains(stderr, "capture: wrote") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	stdout, _, err := runCLI(t, "bundle", "check", "--json", out)
	if err != nil {
		t.Fatalf("bundle check: %v\n%s", err, stdout)
	}
	var r struct{ Read, Skipped []struct{ File, What string } }
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Read) < 30 || len(r.Skipped) != 0 {
		t.Errorf("bundle check: %v, %d read, skipped %v", err, len(r.Read), r.Skipped)
	}
	stdout, stderr, err = runCLI(t, "investigate", "--bundle", out, "--json", "--context", "namespace=batch", "Why does the worker crash?")
	if err != nil {
		t.Fatalf("investigate: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "worker") {
		t.Errorf("investigation of the capture does not mention the worker: %s", stdout)
	}
	if _, _, err := runCLI(t, "investigate", "--bundle", t.TempDir(), "why"); err == nil || !strings.Contains(err.Error(), "no evidence rootcause reads") {
		t.Errorf("empty bundle: %v", err)
	}
}
