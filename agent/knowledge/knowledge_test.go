package knowledge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rootcause/rootcause/agent/evidence"
)

var docs = fstest.MapFS{
	"runbooks/oom.md":    {Data: []byte("# Pods killed for out of memory\n\n## Symptoms\nContainers restart with reason OOMKilled.\n\n## Raising the memory limit\nWhen a container is OOMKilled its memory exceeded the memory limit; raise resources.limits.memory.\n")},
	"runbooks/db.md":     {Data: []byte("# Database\n\n## Pool exhausted\nconnection pool exhausted: check DB_POOL_MAX. Memory is rarely involved.\n\n```\n# not a heading inside code\n```\n")},
	"runbooks/net.md":    {Data: []byte("Intro text before any heading about DNS.\n\n## Timeouts\nUpstream timed out; check limits on connections.\n")},
	"runbooks/.git/x.md": {Data: []byte("# hidden\noom memory limit oom memory limit\n")},
	"runbooks/img.png":   {Data: []byte("oom")},
}

func TestRanking(t *testing.T) {
	ix := NewIndex()
	n, err := ix.AddFS(docs, "runbooks", "runbooks/")
	if err != nil || n != 3 {
		t.Fatalf("AddFS = %d, %v", n, err)
	}
	tests := []struct {
		query, wantFirst string
	}{
		{"oom memory limit", "runbooks/oom.md#raising-the-memory-limit"},
		{"OOMKilled restarts", "runbooks/oom.md#symptoms"},
		{"connection pool exhausted", "runbooks/db.md#pool-exhausted"},
		{"upstream timeout", "runbooks/net.md#timeouts"},
		{"dns", "runbooks/net.md"},
	}
	for _, tt := range tests {
		got, err := ix.Search(context.Background(), tt.query, 3)
		if err != nil || len(got) == 0 || got[0].Location != tt.wantFirst {
			t.Errorf("%q: got %+v, want first %s", tt.query, got, tt.wantFirst)
			continue
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score {
				t.Errorf("%q: not sorted by score", tt.query)
			}
		}
	}
	if got, _ := ix.Search(context.Background(), "the and of", 3); len(got) != 0 {
		t.Errorf("stop words matched: %+v", got)
	}
	if got, _ := ix.Search(context.Background(), "kubernetes", 3); len(got) != 0 {
		t.Errorf("unknown word matched: %+v", got)
	}
}

func TestSplitAndSlug(t *testing.T) {
	secs := SplitMarkdown("a.md", "# Title\nintro\n## Step 2: Check the Pod's logs!\nbody\n```\n# code\n```\n")
	if len(secs) != 2 || secs[1].Location != "a.md#step-2-check-the-pods-logs" || secs[1].Title != "Title › Step 2: Check the Pod's logs!" || !strings.Contains(secs[1].Text, "# code") {
		t.Errorf("sections = %+v %+v", secs[0], secs[1])
	}
}

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"limits": "limit", "killed": "kill", "restarting": "restart", "crashes": "crash", "retries": "retry", "process": "process", "oom": "oom", "status": "status"} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

type fakeRepo map[string]string

func (f fakeRepo) ListFiles(ctx context.Context, repo, dir string) ([]string, error) {
	var out []string
	for p := range f {
		if strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f fakeRepo) ReadFile(ctx context.Context, repo, p string) (string, error) { return f[p], nil }

func TestNewSources(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "disk.md"), []byte("# Disk\n## Disk full\nNo space left on device: clean /var/log.\n"), 0o644)
	gh := fakeRepo{"ops/runbooks/cert.md": "# Certificates\n## Expired certificate\nx509: certificate has expired; renew with cert-manager.\n", "src/main.go": "package main"}
	k, err := New(map[string][]string{KindRunbooks: {dir}, KindGitHub: {"shop/ops/ops"}}, gh)
	if err != nil || k == nil {
		t.Fatal(err)
	}
	got, err := k.Search(context.Background(), "no space left on device", 1)
	if err != nil || len(got) != 1 || got[0].Location != dir+"/sub/disk.md#disk-full" {
		t.Errorf("local: %+v, %v", got, err)
	}
	got, _ = k.Search(context.Background(), "certificate expired", 1)
	if len(got) != 1 || got[0].Location != "github:shop/ops/ops/runbooks/cert.md#expired-certificate" {
		t.Errorf("github: %+v", got)
	}
	for _, bad := range []map[string][]string{{"runbooks": {"relative"}}, {"wiki": {"x"}}, {"github": {"noslash"}}} {
		if _, err := New(bad, gh); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := New(map[string][]string{"github": {"a/b"}}, nil); err == nil {
		t.Error("github without a client accepted")
	}
	if k, err := New(nil, nil); k != nil || err != nil {
		t.Errorf("empty: %v %v", k, err)
	}
	var _ evidence.Knowledge = k
}
