package logwriter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingFile records every write call it receives.
type countingFile struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	calls  int
	delay  time.Duration
	failAt int // fail the failAt-th call (1-based); 0 never
}

func (c *countingFile) Write(p []byte) (int, error) {
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls == c.failAt {
		return 0, errors.New("disk full")
	}
	return c.buf.Write(p)
}

func (c *countingFile) snapshot() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.calls
}

// TestNoLineLostAtClose writes from many goroutines through a slog handler,
// closes, and checks that every line arrived whole, each writer's lines in
// order, in fewer write calls than lines.
func TestNoLineLostAtClose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		delay time.Duration
	}{
		{"fast output", DefaultLimit, 0},
		{"slow output, small limit (back-pressure)", 4 << 10, 200 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &countingFile{delay: tc.delay}
			w := NewLimit(out, tc.limit)
			log := slog.New(slog.NewTextHandler(w, nil))
			const writers, lines = 8, 500
			var wg sync.WaitGroup
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range lines {
						log.Info("request", "writer", g, "seq", i, "pad", strings.Repeat("x", 40))
					}
				}()
			}
			wg.Wait()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			text, calls := out.snapshot()
			next := make([]int, writers)
			n := 0
			sc := bufio.NewScanner(strings.NewReader(text))
			for sc.Scan() {
				var g, i int
				line := sc.Text()
				at := strings.Index(line, "writer=")
				if at < 0 {
					t.Fatalf("malformed line %q", line)
				}
				if _, err := fmt.Sscanf(line[at:], "writer=%d seq=%d", &g, &i); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if i != next[g] {
					t.Fatalf("writer %d: line %d after %d (lost or reordered)", g, i, next[g]-1)
				}
				next[g]++
				n++
			}
			if n != writers*lines {
				t.Fatalf("%d lines written, want %d", n, writers*lines)
			}
			if calls >= n {
				t.Errorf("%d write calls for %d lines: nothing was batched", calls, n)
			}
			t.Logf("%d lines in %d write calls", n, calls)
		})
	}
}

func TestBackPressureBoundsPending(t *testing.T) {
	out := &countingFile{delay: time.Millisecond}
	w := NewLimit(out, 4<<10)
	line := bytes.Repeat([]byte("y"), 1000)
	for range 50 {
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		p := len(w.pending)
		w.mu.Unlock()
		if p > 4<<10 {
			t.Fatalf("pending %d bytes, over the 4 KiB limit", p)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if text, _ := out.snapshot(); len(text) != 50*1000 {
		t.Fatalf("%d bytes written, want %d", len(text), 50*1000)
	}
}

func TestFlushAndWriteAfterClose(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := New(f)
	fmt.Fprintln(w, "one")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f.Name()); string(got) != "one\n" {
		t.Fatalf("after Flush the file holds %q", got)
	}
	fmt.Fprintln(w, "two")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	fmt.Fprintln(w, "three") // straight to the file
	if got, _ := os.ReadFile(f.Name()); string(got) != "one\ntwo\nthree\n" {
		t.Fatalf("file holds %q", got)
	}
}

func TestWriteErrorIsReported(t *testing.T) {
	out := &countingFile{failAt: 1}
	w := New(out)
	io.WriteString(w, "lost to the failing disk\n")
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Flush = %v, want the write error", err)
	}
	io.WriteString(w, "kept\n")
	if err := w.Close(); err != nil {
		t.Fatalf("Close = %v, the error was already reported", err)
	}
	if text, _ := out.snapshot(); text != "kept\n" {
		t.Fatalf("output %q", text)
	}
}

// BenchmarkLogLine is one slog request line through a Writer to a real
// file, against the same handler writing to the file directly.
//
//	go test ./logwriter -run '^$' -bench LogLine
func BenchmarkLogLine(b *testing.B) {
	for _, async := range []bool{false, true} {
		name := "direct"
		if async {
			name = "async"
		}
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var out io.Writer = f
			var w *Writer
			if async {
				w = New(f)
				out = w
			}
			log := slog.New(slog.NewTextHandler(out, nil))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"),
						slog.String("route", "/api/v1/auth/me"), slog.Int("status", 200))
				}
			})
			if w != nil {
				w.Close()
			}
		})
	}
}
