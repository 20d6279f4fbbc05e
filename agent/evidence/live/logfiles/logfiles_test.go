package logfiles

import (
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rootcause/rootcause/agent/evidence"
	"github.com/rootcause/rootcause/agent/evidence/bundle"
)

const miscLogs = "../../bundle/testdata/misc/logs"

func scanAll(t *testing.T, l evidence.Logs, q evidence.LogQuery) string {
	t.Helper()
	var b strings.Builder
	err := l.Scan(context.Background(), q, func(line evidence.LogLine) error {
		fmt.Fprintf(&b, "%s|%s|%s\n", line.Time.Format(time.RFC3339Nano), line.Source, line.Text)
		return nil
	})
	if err != nil {
		t.Fatalf("scan %+v: %v", q, err)
	}
	return b.String()
}

// TestSameAnswersAsBundle: the host-file backend over the bundle's logs/
// directory answers every query exactly as the bundle backend does.
func TestSameAnswersAsBundle(t *testing.T) {
	abs, _ := filepath.Abs(miscLogs)
	live, err := New(context.Background(), map[string]any{"enabled": true, "paths": []any{abs + "/*.log"}}, nil, nil)
	if err != nil || live == nil {
		t.Fatalf("New: %v", err)
	}
	b, err := bundle.OpenDir(filepath.Dir(abs))
	if err != nil {
		t.Fatal(err)
	}
	bl := b.Sources(time.Time{}).Logs
	ls, _ := live.Sources(context.Background())
	bs, _ := bl.Sources(context.Background())
	if fmt.Sprint(ls) != fmt.Sprint(bs) {
		t.Fatalf("sources %v != %v", ls, bs)
	}
	since, _ := time.Parse(time.RFC3339, "2026-03-14T10:05:00Z")
	until, _ := time.Parse(time.RFC3339, "2026-03-14T10:30:01Z")
	for _, q := range []evidence.LogQuery{
		{},
		{Source: "nginx"},
		{Pattern: "(?i)error|exhausted"},
		{Source: "checkout", Since: since, Until: until},
		{Pattern: `^\s+at`},
	} {
		got, want := scanAll(t, live, q), scanAll(t, bl, q)
		if got != want || got == "" {
			t.Errorf("query %+v:\nlive:\n%s\nbundle:\n%s", q, got, want)
		}
	}
	if err := live.Scan(context.Background(), evidence.LogQuery{Pattern: "["}, func(evidence.LogLine) error { return nil }); evidence.CodeOf(err) != evidence.CodeInvalid {
		t.Errorf("bad pattern: %v", err)
	}
	if err := live.Scan(context.Background(), evidence.LogQuery{Source: "nope"}, func(evidence.LogLine) error { return nil }); evidence.CodeOf(err) != evidence.CodeNotFound {
		t.Errorf("unknown source: %v", err)
	}
}

func TestRotatedFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app.log", "2026-03-14T10:00:03Z third\n")
	write("app.log.1", "2026-03-14T10:00:02Z second\n")
	f, _ := os.Create(filepath.Join(dir, "app.log.2.gz"))
	gz := gzip.NewWriter(f)
	gz.Write([]byte("2026-03-14T10:00:01Z first\n"))
	gz.Close()
	f.Close()
	l, err := New(context.Background(), map[string]any{"paths": []any{dir + "/*"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srcs, _ := l.Sources(context.Background())
	if fmt.Sprint(srcs) != "[app]" {
		t.Fatalf("sources = %v (rotated files are not sources of their own)", srcs)
	}
	got := scanAll(t, l, evidence.LogQuery{Source: "app"})
	want := "2026-03-14T10:00:01Z|app|2026-03-14T10:00:01Z first\n2026-03-14T10:00:02Z|app|2026-03-14T10:00:02Z second\n2026-03-14T10:00:03Z|app|2026-03-14T10:00:03Z third\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestNewSettings(t *testing.T) {
	tests := []struct {
		settings map[string]any
		wantNil  bool
		wantErr  string
	}{
		{nil, true, ""},
		{map[string]any{"enabled": false, "paths": []any{"/var/log/*.log"}}, true, ""},
		{map[string]any{"enabled": true}, true, ""},
		{map[string]any{"paths": []any{"relative/*.log"}}, true, "absolute"},
		{map[string]any{"paths": []any{"/var/log/[.log"}}, true, "syntax error"},
		{map[string]any{"paths": "x"}, true, "list"},
		{map[string]any{"paths": []any{"/var/log/*.log"}}, false, ""},
	}
	for i, tt := range tests {
		l, err := New(context.Background(), tt.settings, nil, nil)
		if (l == nil) != tt.wantNil || tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%d: %v, %v", i, l, err)
		}
	}
}
