package bundle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rootcause/rootcause/agent/evidence"
)

// The fuzz targets feed hostile files to each reader of a bundle's own
// formats: each must return (no panic), fail only with an evidence.Error
// of the code it documents, and keep what it promises of what it returns.
// Seeds are the bundle's test files and the malformed forms the tests
// read.

// seedFiles adds the files the pattern finds as seeds.
func seedFiles(f *testing.F, pattern string) {
	f.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		f.Fatalf("no seed files at %s", pattern)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseAlerts(f *testing.F) {
	seedFiles(f, "testdata/alerts/*.json")
	f.Add([]byte(`{"alerts":[{"labels":{"alertname":"X"},"startsAt":"soon"}]}`))
	f.Add([]byte(`[{"labels":{},"startsAt":"2026-03-14T10:00:00Z","endsAt":"0001-01-01T00:00:00Z"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		alerts, err := ParseAlerts(data)
		inTimeOrder(t, alerts, err, func(a evidence.Alert) time.Time { return a.StartsAt })
	})
}

func FuzzParseChanges(f *testing.F) {
	seedFiles(f, "testdata/misc/changes.json")
	for _, s := range []string{
		`{}`,
		`[{"timestamp":"2026-03-14T10:00:00Z","service":"a","kind":"deploy"},{"timestamp":"yesterday","service":"a","kind":"deploy"}]`,
		`[{"timestamp":"2026-03-14T10:00:00Z","service":"a","kind":"rollback"}]`,
		`[{"timestamp":"2026-03-14T10:00:00Z","kind":"infra"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, err := ParseChanges(data)
		inTimeOrder(t, changes, err, func(c evidence.Change) time.Time { return c.Timestamp })
	})
}

// inTimeOrder checks what a parser of a document returned: an error of
// code malformed, or the items in time order.
func inTimeOrder[T any](t *testing.T, items []T, err error, at func(T) time.Time) {
	t.Helper()
	if err != nil {
		if evidence.CodeOf(err) != evidence.CodeMalformed {
			t.Fatalf("error %v has code %q", err, evidence.CodeOf(err))
		}
		return
	}
	if !slices.IsSortedFunc(items, func(a, b T) int { return at(a).Compare(at(b)) }) {
		t.Fatalf("%d items not in time order", len(items))
	}
}

func FuzzFilterPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"", "anything"}, {"ERROR timed", "ERROR Task timed out"}, {`"timed out"`, "Task timed out"},
		{"?ERROR ?WARN", "WARN x"}, {"ERROR -healthcheck", "ERROR healthcheck"},
		{`{ $.level = "error" }`, `{"level":"error"}`}, {`"unterminated`, "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, msg string) {
		fp, err := ParseFilterPattern(pattern)
		if err != nil {
			if evidence.CodeOf(err) != evidence.CodeInvalid {
				t.Fatalf("%q: error %v has code %q", pattern, err, evidence.CodeOf(err))
			}
			return
		}
		fp.Match(msg)
	})
}

// FuzzScanLog: every line read is valid UTF-8, no longer than MaxLogLine
// allows, and there are no more of them than the file has lines.
func FuzzScanLog(f *testing.F) {
	seedFiles(f, "testdata/misc/logs/*.log")
	f.Add([]byte("Nov 24 14:04:17 host kernel: x\r\n\xff\xfe stack\n\n2026-03-14T10:30:00Z ok"))
	m, err := NewLogMatcher("logs", evidence.LogQuery{})
	if err != nil {
		f.Fatal(err)
	}
	m.ref = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		err := ScanLog(context.Background(), bytes.NewReader(data), "app.log", m, func(l evidence.LogLine) error {
			n++
			if !utf8.ValidString(l.Text) || len(l.Text) > 3*MaxLogLine {
				t.Fatalf("line of %d bytes, valid UTF-8 %v", len(l.Text), utf8.ValidString(l.Text))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(data), "\n") + 1; n > lines {
			t.Fatalf("%d lines read from %d", n, lines)
		}
	})
}
