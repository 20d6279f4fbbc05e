package db_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rootcause/rootcause/db"
	bolt "go.etcd.io/bbolt"
)

type sizedBuffer struct {
	bytes.Buffer
	size int64
}

func (s *sizedBuffer) SetSize(n int64) { s.size = n }

// TestBackupUnderLoad takes a backup while writers run and checks that it
// verifies and holds every write acknowledged before it began.
func TestBackupUnderLoad(t *testing.T) {
	dir := t.TempDir()
	d := openTree(t, filepath.Join(dir, db.FileName), nil)
	defer d.Close()
	ctx := context.Background()

	var mu sync.Mutex
	var acked []string
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				name := fmt.Sprintf("g%d-%d", w, i)
				if _, err := d.CreateNode(ctx, db.Node{Name: name, Parent: "acme", Kind: db.KindGroup}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, name)
				mu.Unlock()
			}
		}()
	}
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 {
			break
		}
	}
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	var buf sizedBuffer
	n, err := d.WriteBackup(&buf)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || buf.size != n {
		t.Fatalf("wrote %d bytes, buffer %d, announced size %d", n, buf.Len(), buf.size)
	}
	path := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := db.Verify(path); err != nil {
		t.Fatal(err)
	}
	b, err := db.Open(path, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, name := range before {
		if _, err := b.FindNode(ctx, name); err != nil {
			t.Fatalf("acknowledged write %s missing from backup: %v", name, err)
		}
	}
}

func TestRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "data", db.FileName)

	// The backup holds team "payments"; the live file later gains "later".
	d := openTree(t, live, nil)
	var buf bytes.Buffer
	if _, err := d.WriteBackup(&buf); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "backup.db")
	os.WriteFile(backup, buf.Bytes(), 0o600)
	if _, err := d.CreateNode(ctx, db.Node{Name: "later", Parent: "acme", Kind: db.KindTeam}); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrLocked while open", func(t *testing.T) {
		if _, err := db.Restore(live, backup); !errors.Is(err, db.ErrLocked) {
			t.Fatalf("err = %v", err)
		}
	})
	d.Close()

	bad := []struct{ name, content string }{
		{"garbage", strings.Repeat("x", 8192)},
		{"empty", ""},
	}
	for _, b := range bad {
		t.Run("ErrVerify "+b.name, func(t *testing.T) {
			p := filepath.Join(dir, b.name)
			os.WriteFile(p, []byte(b.content), 0o600)
			if _, err := db.Restore(live, p); err == nil {
				t.Fatal("restore of a bad file succeeded")
			}
			if err := db.Verify(live); err != nil {
				t.Fatalf("live file damaged by a refused restore: %v", err)
			}
		})
	}
	t.Run("ErrVerify missing file", func(t *testing.T) {
		if _, err := db.Restore(live, filepath.Join(dir, "missing")); err == nil {
			t.Fatal("restore of a missing file succeeded")
		}
	})
	t.Run("ErrVerify foreign bbolt file", func(t *testing.T) {
		p := filepath.Join(dir, "foreign.db")
		fd, err := db.Open(p, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fd.Bolt().Update(func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("meta")) })
		fd.Close()
		if _, err := db.Restore(live, p); err == nil || !strings.Contains(err.Error(), "not a rootcause database") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("OK", func(t *testing.T) {
		replaced, err := db.Restore(live, backup)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(filepath.Base(replaced), db.FileName+".replaced-") {
			t.Fatalf("replaced = %s", replaced)
		}
		old, err := db.Open(replaced, db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := old.FindNode(ctx, "later"); err != nil {
			t.Fatalf("old file not kept intact: %v", err)
		}
		old.Close()
		r, err := db.Open(live, db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.FindNode(ctx, "payments"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.FindNode(ctx, "later"); db.ErrorCode(err) != db.ENOTFOUND {
			t.Fatalf("restored file has a later write: %v", err)
		}
	})
}
