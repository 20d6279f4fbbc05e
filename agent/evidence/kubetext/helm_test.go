package kubetext_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/rootcause/rootcause/agent/evidence/kubetext"
)

// Helm release history as an on-call engineer pastes it: helm history
// (table, -o json, -o yaml), helm list and helm status, printed by the real
// helm binary from testdata/helm/releases.yaml through helm's memory
// storage driver (no cluster needed). Goldens in testdata/transcripts-helm;
// regenerate with `go test ./agent/evidence/kubetext -run TestHelmGoldens
// -update` and the helm on PATH (or $HELM).

var helmCommands = []string{
	"helm history checkout -n shop",
	"helm history checkout -n shop -o json",
	"helm history checkout --namespace shop --max 2 -o yaml",
	"helm list -n shop",
	"helm ls -n pay -o json",
	"helm status checkout -n shop",
	"helm status ledger -n pay -o json",
}

func helmPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("helm not found (set HELM): the goldens are not regenerated")
	}
	return p
}

func TestHelmGoldens(t *testing.T) {
	if *update {
		helm := helmPath(t)
		ver, err := exec.Command(helm, "version", "--template", "{{.Version}}").Output()
		if err != nil {
			t.Fatal(err)
		}
		minor := strings.Join(strings.SplitN(strings.TrimPrefix(string(ver), "v"), ".", 3)[:2], ".")
		fixtures, _ := filepath.Abs("testdata/helm/releases.yaml")
		dir := t.TempDir()
		var buf bytes.Buffer
		for _, c := range helmCommands {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, helm, strings.Fields(c)[1:]...)
			cmd.Env = append(os.Environ(), "HELM_DRIVER=memory", "HELM_MEMORY_DRIVER_DATA="+fixtures, "HOME="+dir,
				"HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir, "KUBECONFIG=/dev/null", "TZ=UTC", "LANG=C")
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
			appendCommand(&buf, c, out)
		}
		gdir := filepath.Join("testdata", "transcripts-helm", "helm-"+minor)
		if err := os.MkdirAll(gdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gdir, "session.txt"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	eachGolden(t, "testdata/transcripts-helm/helm-*", "session.txt", 1, func(t *testing.T, text []byte, _ string) {
		checkHelm(t, text)
	})
}

type helmFixture struct {
	Name      string `json:"name"`
	Version   int64  `json:"version"`
	Namespace string `json:"namespace"`
	Info      struct {
		Status       string    `json:"status"`
		LastDeployed time.Time `json:"last_deployed"`
		Description  string    `json:"description"`
	} `json:"info"`
	Chart struct {
		Metadata struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appversion"`
		} `json:"metadata"`
	} `json:"chart"`
}

// checkHelm parses the helm transcript: every release revision printed is
// read, equal to its source, with the deploy time exact where helm printed
// a zone, and the wall clock read as UTC where it did not.
func checkHelm(t *testing.T, text []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/helm/releases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fx []helmFixture
	if err := yaml.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	src := map[string]helmFixture{}
	for _, f := range fx {
		src[fmt.Sprintf("%s/%s/%d", f.Namespace, f.Name, f.Version)] = f
	}
	res := kubetext.Parse(text, time.Date(2026, 3, 14, 10, 45, 0, 0, time.UTC))
	noSkipped(t, res)
	if len(res.Outputs) != len(helmCommands) {
		t.Errorf("%d outputs kept as text, want %d (one per command)", len(res.Outputs), len(helmCommands))
	}
	perCommand := map[string]int{}
	for _, r := range res.Releases {
		perCommand[r.Command]++
		key := fmt.Sprintf("%s/%s/%d", r.Namespace, r.Name, r.Revision)
		f, ok := src[key]
		if !ok {
			t.Errorf("%s (line %d): not in the fixtures", key, r.Line)
			continue
		}
		if r.Status != f.Info.Status || r.Chart != f.Chart.Metadata.Name+"-"+f.Chart.Metadata.Version && r.Chart != "" {
			t.Errorf("%s: status %q chart %q, want %q %q", key, r.Status, r.Chart, f.Info.Status, f.Chart.Metadata.Name+"-"+f.Chart.Metadata.Version)
		}
		if r.AppVersion != "" && r.AppVersion != f.Chart.Metadata.AppVersion || r.Description != "" && r.Description != f.Info.Description {
			t.Errorf("%s: app version %q description %q", key, r.AppVersion, r.Description)
		}
		want := f.Info.LastDeployed.UTC()
		if !r.ZoneShown {
			// helm printed the deployer's wall clock without its zone
			wall := f.Info.LastDeployed
			want = time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, time.UTC)
		}
		if !r.Updated.Equal(want) {
			t.Errorf("%s (%s): updated %v (zone shown %v), want %v", key, r.Command, r.Updated, r.ZoneShown, want)
		}
	}
	want := map[string]int{
		"helm history checkout -n shop": 4, "helm history checkout -n shop -o json": 4,
		"helm history checkout --namespace shop --max 2 -o yaml": 2, "helm list -n shop": 1, "helm ls -n pay -o json": 1,
		"helm status checkout -n shop": 1, "helm status ledger -n pay -o json": 1,
	}
	for c, n := range want {
		if perCommand[c] != n {
			t.Errorf("%s: %d releases read, want %d", c, perCommand[c], n)
		}
	}
	// the failed upgrade keeps its reason; its time shows no zone in the table
	i := slices.IndexFunc(res.Releases, func(r kubetext.Release) bool { return r.Revision == 3 && !r.ZoneShown })
	if i < 0 || res.Releases[i].Status != "failed" || !strings.Contains(res.Releases[i].Description, "context deadline exceeded") {
		t.Errorf("failed revision: %+v", res.Releases)
	}
}

// Other helm commands and forms are kept as text only; a table that is not
// helm's is reported.
func TestHelmOtherForms(t *testing.T) {
	text := "$ helm get values checkout -n shop\nUSER-SUPPLIED VALUES:\nreplicaCount: 3\n" +
		"$ helm history checkout -n shop | head -3\nREVISION  UPDATED\n" +
		"$ helm history checkout -n shop\nError: release: not found\n" +
		"$ helm history checkout -n shop\nREVISION\tUPDATED                 \tSTATUS    \tCHART\n1       \tnot a time              \tdeployed  \tcheckout-1.0.0\n"
	res := kubetext.Parse([]byte(text), time.Time{})
	if len(res.Outputs) != 4 {
		t.Errorf("outputs %d, want 4", len(res.Outputs))
	}
	if len(res.Releases) != 1 || !res.Releases[0].Updated.IsZero() || res.Releases[0].Revision != 1 {
		t.Errorf("releases %+v", res.Releases)
	}
	var reasons []string
	for _, s := range res.Skipped {
		reasons = append(reasons, fmt.Sprintf("%d %s", s.Line, s.Reason))
	}
	if want := []string{"6 helm answered an error (kept as text): Error: release: not found"}; !slices.Equal(reasons, want) {
		t.Errorf("skipped %q, want %q", reasons, want)
	}
}
